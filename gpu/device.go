package gpu

import (
	"fmt"
	"log/slog"

	"github.com/ducc-project/ducc/units"
)

// MIGMode is a GPU's Multi-Instance GPU mode.
type MIGMode int

// MIG modes.
const (
	MIGUnsupported MIGMode = iota // the GPU has no MIG (or NVML cannot say)
	MIGDisabled
	MIGEnabled
	MIGInstance // the device is a MIG instance of its Parent
)

func (m MIGMode) String() string {
	switch m {
	case MIGDisabled:
		return "disabled"
	case MIGEnabled:
		return "enabled"
	case MIGInstance:
		return "instance"
	}
	return "unsupported"
}

// Device is one GPU, or one MIG instance of a GPU.
type Device struct {
	UUID   string
	Model  string
	Memory int64 // bytes
	Index  int   // NVML's index (a MIG instance: its index within its parent)
	Minor  int   // /dev/nvidia<minor> (a MIG instance: its parent's)
	MIG    MIGMode
	Parent string // a MIG instance's GPU UUID; "" for a GPU
}

func (d Device) String() string {
	s := fmt.Sprintf("%s %s (%s, minor %d", d.UUID, d.Model, units.FormatSize(d.Memory), d.Minor)
	if d.MIG == MIGInstance {
		return s + ", MIG instance of " + d.Parent + ")"
	}
	return s + ", MIG " + d.MIG.String() + ")"
}

// Status says what discovery found.
type Status int

// Discovery results.
const (
	StatusFound     Status = iota // NVML answered and listed GPUs
	StatusNoLibrary               // libnvidia-ml.so.1 is not there (or this build has no cgo)
	StatusNoGPUs                  // NVML answered: 0 GPUs
	StatusError                   // NVML failed; Inventory.Err says how
	StatusDeclared                // from the config's node.gpus, not NVML
)

func (s Status) String() string {
	return [...]string{"found", "no NVML library", "no GPUs", "NVML error", "declared"}[s]
}

// Inventory is the result of one discovery.
type Inventory struct {
	Status  Status
	Devices []Device // GPUs in NVML's order, each MIG-enabled GPU followed by its instances
	Driver  string   // the driver version NVML reports ("" if unknown)
	Err     error    // with StatusError (and StatusNoLibrary: why it could not be loaded)
}

// Schedulable returns the devices work can be given: every GPU without
// MIG enabled, and every MIG instance.
func (inv Inventory) Schedulable() []Device {
	var out []Device
	for _, d := range inv.Devices {
		if d.MIG != MIGEnabled {
			out = append(out, d)
		}
	}
	return out
}

// String says what was found in one line.
func (inv Inventory) String() string {
	switch inv.Status {
	case StatusNoLibrary:
		if inv.Err != nil {
			return "no NVML library: " + inv.Err.Error()
		}
		return "no NVML library"
	case StatusNoGPUs:
		return "NVML found, 0 GPUs"
	case StatusError:
		return inv.Err.Error()
	}
	n, mig := 0, 0
	for _, d := range inv.Devices {
		switch d.MIG {
		case MIGInstance:
			mig++
		default:
			n++
		}
	}
	src := "NVML"
	if inv.Status == StatusDeclared {
		src = "declared in node.gpus"
	}
	s := fmt.Sprintf("%s: %d GPU(s)", src, n)
	if mig > 0 {
		s += fmt.Sprintf(", %d MIG instance(s)", mig)
	}
	if inv.Driver != "" {
		s += ", driver " + inv.Driver
	}
	return s
}

// Log says what discovery found, once, at info level (warn on an error).
func (inv Inventory) Log(l *slog.Logger) {
	l = l.With("component", "gpu")
	if inv.Status == StatusError {
		l.Warn("GPU discovery failed; the node offers no GPUs", "err", inv.Err)
		return
	}
	l.Info("GPU discovery: "+inv.String(), "status", inv.Status.String(), "devices", len(inv.Schedulable()))
}

// MemoryReader reads the GPU memory of each compute process, per device
// UUID: pid → bytes used (Session.ProcessMemory). The agent's watchdog of
// GPU memory slices holds one; tests give it a fake.
type MemoryReader interface {
	ProcessMemory() (map[string]map[int]int64, error)
	Close() error
}
