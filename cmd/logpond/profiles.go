package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Sampling of the off-CPU profiles. A blocking event (a channel
// operation, a select, a sync.Cond wait) is recorded with probability
// its duration over blockProfileRate, every event blocked that long or
// longer: the waits that explain latency (a batch waiting for its group's
// fsync, a connection for budget) are seen, and the many short ones cost
// a clock read each. One mutex contention in mutexProfileFraction is
// recorded.
const (
	blockProfileRate     = 100_000 // ns
	mutexProfileFraction = 10
)

// profiles are the profiles of the whole run that the command line asked
// for: the CPU profile (on-CPU time) and the block and mutex profiles
// (time goroutines spent waiting), for performance work.
type profiles struct {
	cpu, block, mutex string
	cpuFile           *os.File
}

// start starts the CPU profile and turns on the sampling of blocking
// events and mutex contention for the profiles asked for.
func (p *profiles) start() error {
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		p.cpuFile = f
	}
	if p.block != "" {
		runtime.SetBlockProfileRate(blockProfileRate)
	}
	if p.mutex != "" {
		runtime.SetMutexProfileFraction(mutexProfileFraction)
	}
	return nil
}

// stop stops the CPU profile, writes the block and mutex profiles, each
// as pprof's gzipped protocol buffer (go tool pprof reads them), and
// turns their sampling off.
func (p *profiles) stop() error {
	var errs []error
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("-cpuprofile: %w", err))
		}
	}
	for _, w := range []struct{ flag, path, name string }{{"-blockprofile", p.block, "block"}, {"-mutexprofile", p.mutex, "mutex"}} {
		if w.path == "" {
			continue
		}
		if err := writeProfile(w.path, w.name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", w.flag, err))
		}
	}
	runtime.SetBlockProfileRate(0)
	runtime.SetMutexProfileFraction(0)
	return errors.Join(errs...)
}

// writeProfile writes the runtime's profile name to path.
func writeProfile(path, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
