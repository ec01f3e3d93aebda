package spec

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// build sets target's fields from raw, key by key in table order (so that
// errors are deterministic), and returns the names of the keys given.
func build(kind Kind, raw Raw, target any) ([]string, error) {
	var given []string
	for i := range keys {
		k := &keys[i]
		u := k.use(kind)
		if u == nil {
			continue
		}
		v, ok := raw[k.Name]
		if !ok {
			continue
		}
		given = append(given, k.Name)
		if err := set(k, u, target, v); err != nil {
			// Name what the user wrote: the flag on the command line,
			// the key (and where) in a file.
			if isFlag(v.At) {
				return nil, fmt.Errorf("%s: %w", v.At, err)
			}
			where := v.At
			if where != "" {
				where += ": "
			}
			return nil, fmt.Errorf("%s%s: %w", where, k.Name, err)
		}
	}
	bad := &unknownKeys{kind: kind}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if _, ok := lookup(kind, name); !ok {
			bad.keys = append(bad.keys, badKey{at: raw[name].At, name: name})
		}
	}
	if len(bad.keys) > 0 {
		return nil, bad
	}
	return given, nil
}

// isFlag reports whether a value's At names a command-line flag.
func isFlag(at string) bool { return strings.HasPrefix(at, "-") }

// BuildJob interprets a raw job spec. cwd is the caller's directory: the
// default working directory. Defaults the head fills (JobDefaults) are
// left zero.
func BuildJob(raw Raw, cwd string) (*Job, error) {
	j := &Job{}
	if _, err := build(KindJob, raw, j); err != nil {
		return nil, err
	}
	_, j.HaveItems = raw["input_items"]
	if err := buildUIMA(j, defaultUIMAPaths); err != nil {
		return nil, err
	}
	if j.Spec.Executable == "" {
		return nil, errors.New("process_executable is required: the worker command, e.g. 'process_executable: ./worker.py' in the spec or --process-executable ./worker.py (or, for a UIMA job, process_descriptor_AE)")
	}
	if j.Spec.WorkingDirectory == "" {
		j.Spec.WorkingDirectory = cwd
	}
	if j.InputFile != "" && j.HaveItems {
		return nil, errors.New("both input_file and input_items are given: keep one")
	}
	if j.Spec.DriverExecutable != "" && (j.InputFile != "" || j.HaveItems) {
		return nil, errors.New("driver_executable produces the work items: drop input_file and input_items (a job has one item source)")
	}
	if j.Spec.DriverExecutable == "" && len(j.Spec.DriverArgs) > 0 {
		return nil, errors.New("driver_executable_args needs a driver_executable")
	}
	if err := checkGPU(KindJob, j.Spec.GPUs, j.Spec.GPUMemory, j.Spec.GPUModel, rawName(KindJob, raw)); err != nil {
		return nil, err
	}
	if j.CancelOnInterrupt {
		j.Wait = true
	}
	return j, nil
}

// BuildService interprets a raw service spec; it returns the spec and the
// keys that were given (what `ducc services modify` changes). It checks
// each value, not the whole: see ValidateService.
//
// A UIMA-AS service (process_DD) gets its command here, as a UIMA job
// does in BuildJob: a JVM running ducc-uima.jar's ServiceMain on the DD;
// BuildService reads the DD (uimaas.go) to learn the endpoint it declares.
func BuildService(raw Raw) (wire.ServiceSpec, []string, error) {
	cwd, _ := os.Getwd()
	return buildService(raw, cwd, osDDReader{}, defaultUIMAASPaths)
}

func buildService(raw Raw, cwd string, r ddReader, paths func() uimaasPaths) (wire.ServiceSpec, []string, error) {
	var sp wire.ServiceSpec
	keys, err := build(KindService, raw, &sp)
	if err != nil {
		return wire.ServiceSpec{}, nil, err
	}
	if err := checkGPU(KindService, sp.GPUs, sp.GPUMemory, sp.GPUModel, rawName(KindService, raw)); err != nil {
		return wire.ServiceSpec{}, nil, err
	}
	if err := buildUIMAAS(&sp, keys, cwd, r, paths); err != nil {
		return wire.ServiceSpec{}, nil, err
	}
	return sp, keys, nil
}

// BuildRun interprets a managed reservation's flags. The command, its
// environment and directory are the caller's to set.
func BuildRun(raw Raw) (Run, error) {
	var r Run
	if _, err := build(KindRun, raw, &r); err != nil {
		return r, err
	}
	return r, checkGPU(KindRun, r.Req.GPUs, r.Req.GPUMemory, r.Req.GPUModel, rawName(KindRun, raw))
}

// BuildReserve interprets a reservation's flags and checks the result.
func BuildReserve(raw Raw) (Reserve, error) {
	var r Reserve
	if _, err := build(KindReserve, raw, &r); err != nil {
		return r, err
	}
	if err := checkGPU(KindReserve, r.Req.GPUs, 0, r.Req.GPUModel, rawName(KindReserve, raw)); err != nil {
		return r, err
	}
	return r, ValidateReserve(r.Req)
}
