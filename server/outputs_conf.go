package server

import "github.com/logpond/logpond/conf"

// configuredOutputs lists the configuration's enabled outputs, by name.
func configuredOutputs(cfg *conf.Config) []conf.NamedOutput { return cfg.Outputs() }
