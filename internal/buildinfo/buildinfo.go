// Package buildinfo says which build of logpond is running: the version
// the Makefile stamps into the binary, and what the Go toolchain recorded
// (Go version, VCS revision).
package buildinfo

import "runtime/debug"

// Version is set at build time by the Makefile
// (-ldflags "-X github.com/logpond/logpond/internal/buildinfo.Version=…");
// "dev" otherwise.
var Version = "dev"

// Info describes the running build.
type Info struct {
	Version   string // Version, or the main module's version when Version is "dev" and the module has one
	GoVersion string // the Go toolchain that built the binary
	Revision  string // VCS revision, "" when not built from a checkout
	Modified  bool   // the checkout had local changes
}

// Get returns the running build's Info.
func Get() Info {
	in := Info{Version: Version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	in.GoVersion = bi.GoVersion
	if in.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		in.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}
