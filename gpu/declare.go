package gpu

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ducc-project/ducc/units"
)

// Declared is one GPU of the agent config's static declaration, for hosts
// without NVML and for tests:
//
//	node:
//	  gpus:
//	    - {uuid: GPU-0a1b..., model: NVIDIA H100 80GB HBM3, memory: 80G, minor: 0}
//
// Every field is required; Memory is a size as units.ParseSize reads it.
type Declared struct {
	UUID   string `yaml:"uuid"`
	Model  string `yaml:"model"`
	Memory string `yaml:"memory"`
	Minor  *int   `yaml:"minor"`
}

// Devices checks a declaration and returns its devices, or every mistake
// at once with what to change: a UUID missing or given twice, a model
// missing, a memory that is not a positive size, a minor missing or
// negative.
func Devices(ds []Declared) ([]Device, error) {
	var errs []error
	seen := map[string]int{}
	out := make([]Device, 0, len(ds))
	for i, d := range ds {
		at := fmt.Sprintf("node.gpus[%d]", i)
		uuid := strings.TrimSpace(d.UUID)
		switch j, dup := seen[uuid]; {
		case uuid == "":
			errs = append(errs, fmt.Errorf("%s: uuid is missing; give the GPU's UUID as nvidia-smi -L prints it", at))
		case dup:
			errs = append(errs, fmt.Errorf("%s: uuid %s is also node.gpus[%d]; each GPU once", at, uuid, j))
		default:
			seen[uuid] = i
		}
		if strings.TrimSpace(d.Model) == "" {
			errs = append(errs, fmt.Errorf("%s: model is missing; name the GPU's model (e.g. NVIDIA H100 80GB HBM3)", at))
		}
		mem, err := units.ParseSize(d.Memory)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: memory: %w", at, err))
		case mem <= 0:
			errs = append(errs, fmt.Errorf("%s: memory %q is not positive; give the GPU's memory, like 80G", at, d.Memory))
		}
		minor := 0
		switch {
		case d.Minor == nil:
			errs = append(errs, fmt.Errorf("%s: minor is missing; give the N of its /dev/nvidiaN", at))
		case *d.Minor < 0:
			errs = append(errs, fmt.Errorf("%s: minor %d is negative; give the N of its /dev/nvidiaN", at, *d.Minor))
		default:
			minor = *d.Minor
		}
		out = append(out, Device{UUID: uuid, Model: strings.TrimSpace(d.Model), Memory: mem, Index: i, Minor: minor, MIG: MIGUnsupported})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ParseDeclared reads a node.gpus list in YAML (unknown keys are errors)
// and checks it (Devices).
func ParseDeclared(data []byte) ([]Device, error) {
	var ds []Declared
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&ds); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty document: no GPUs declared
		}
		return nil, fmt.Errorf("node.gpus: %w", err)
	}
	return Devices(ds)
}

// Declare is the Inventory of a declaration.
func Declare(ds []Declared) (Inventory, error) {
	devs, err := Devices(ds)
	if err != nil {
		return Inventory{}, err
	}
	if len(devs) == 0 {
		return Inventory{Status: StatusNoGPUs}, nil
	}
	return Inventory{Status: StatusDeclared, Devices: devs}, nil
}
