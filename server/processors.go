package server

import (
	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/output/processors"
)

// Chain compiles the processor chain output o of cfg runs: the global
// processors, then o's own, each with counters of its own; nil when
// neither list holds a processor. An error names the list, the index and
// the key of the first problem (ConfigChecks reports them all).
func Chain(cfg *conf.Config, o conf.NamedOutput) (*processors.Chain, error) {
	global, err := compileList("processors", cfg.Processors)
	if err != nil {
		return nil, err
	}
	own, err := compileList(o.Key+".processors", o.Processors())
	if err != nil {
		return nil, err
	}
	return processors.NewChain(global, own), nil
}

func compileList(key string, list conf.Processors) (*processors.List, error) {
	if len(list) == 0 {
		return nil, nil
	}
	return processors.Compile(key, list)
}

// checkProcessors compiles every list of processors of c, reporting the
// first problem of each element that is wrong, at the key it names.
func checkProcessors(c *conf.Config, bad func(key, format string, args ...any)) {
	for _, pl := range c.ProcessorLists() {
		if _, err := compileList(pl.Key, pl.List); err != nil {
			ces := processors.ConfigErrors(err)
			for _, ce := range ces {
				bad(ce.At, "%v", ce.Err)
			}
			if len(ces) == 0 {
				bad(pl.Key, "%v", err)
			}
		}
	}
}
