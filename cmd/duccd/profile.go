package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
)

// profileEnv names a directory where `duccd agent` profiles its whole run
// (docs/performance.md, "Where a short job's time goes"): cpu.pprof,
// trace.out (go tool trace), and at its end block.pprof and mutex.pprof
// (every blocking event and contended lock; DUCC_PROFILE_RATE=N samples
// one in N instead). For measurements only: a trace grows by megabytes a
// second under load.
const profileEnv = "DUCC_PROFILE_DIR"

// startProfiles starts the profiles that profileEnv asks for and returns
// the function that writes and closes them; with profileEnv unset it does
// nothing.
func startProfiles() (stop func() error, err error) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", profileEnv, err)
	}
	rate := 1
	if s := os.Getenv("DUCC_PROFILE_RATE"); s != "" {
		if rate, err = strconv.Atoi(s); err != nil || rate < 1 {
			return nil, fmt.Errorf("DUCC_PROFILE_RATE=%q: write a whole number ≥ 1 (1: every event)", s)
		}
	}
	runtime.SetBlockProfileRate(rate)
	runtime.SetMutexProfileFraction(rate)
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", profileEnv, err)
	}
	tr, err := os.Create(filepath.Join(dir, "trace.out"))
	if err != nil {
		cpu.Close()
		return nil, fmt.Errorf("%s: %w", profileEnv, err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		tr.Close()
		return nil, fmt.Errorf("%s: cpu profile: %w", profileEnv, err)
	}
	if err := trace.Start(tr); err != nil {
		pprof.StopCPUProfile()
		cpu.Close()
		tr.Close()
		return nil, fmt.Errorf("%s: trace: %w", profileEnv, err)
	}
	return func() error {
		trace.Stop()
		pprof.StopCPUProfile()
		errs := []error{tr.Close(), cpu.Close()}
		for _, name := range []string{"block", "mutex"} {
			f, err := os.Create(filepath.Join(dir, name+".pprof"))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, pprof.Lookup(name).WriteTo(f, 0), f.Close())
		}
		return errors.Join(errs...)
	}, nil
}
