// Package buildinfo says which build of logpond is running: the version and
// VCS state the Makefile stamps into the binary, else what the Go toolchain
// recorded (Go version, VCS revision).
//
// The Makefile stamps the revision itself, from git, because the toolchain's
// own VCS stamping (-buildvcs) recognises a checkout only by a .git
// directory: in a linked git worktree, where .git is a file, it records no
// revision, or the revision of an enclosing repository
// (https://github.com/golang/go/issues/58218). git itself follows the .git
// file, so what the Makefile asks git is right in both.
package buildinfo

import "runtime/debug"

// Set at build time by the Makefile with -ldflags "-X
// github.com/logpond/logpond/internal/buildinfo.NAME=…"; a plain go build
// leaves them as they are here.
var (
	// Version is `git describe --always --dirty`; "dev" otherwise.
	Version = "dev"
	// Revision is the full commit hash (git rev-parse HEAD); "" when not
	// stamped.
	Revision = ""
	// RevisionTime is the commit time, UTC, RFC 3339 (the form of the
	// toolchain's vcs.time).
	RevisionTime = ""
	// Modified is "true" when the work tree had uncommitted changes to
	// tracked files, "false" when not.
	Modified = ""
)

// Info describes the running build. The VCS fields come from the
// Makefile's stamp when there is one, else from the toolchain's
// (debug.ReadBuildInfo); never a mix of both.
type Info struct {
	Version      string // Version, or the main module's version when Version is "dev" and the module has one
	GoVersion    string // the Go toolchain that built the binary
	VCS          string // "git", or "" when no VCS state was recorded
	Revision     string // VCS revision, "" when not built from a checkout
	RevisionTime string // commit time of Revision, RFC 3339; "" when unknown
	Modified     bool   // the checkout had local changes
}

// Get returns the running build's Info.
func Get() Info {
	in := Info{Version: Version}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		in.GoVersion = bi.GoVersion
		if in.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
	}
	if Revision != "" {
		in.VCS, in.Revision, in.RevisionTime, in.Modified = "git", Revision, RevisionTime, Modified == "true"
		return in
	}
	if !ok {
		return in
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs":
			in.VCS = s.Value
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.RevisionTime = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}
