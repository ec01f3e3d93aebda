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

// MemoryReader reads, in one pass, the memory and utilization of the
// node's GPUs and of their compute processes (Session.Usage). The agent
// holds one: its watchdog of GPU memory slices and its heartbeats read it
// each heartbeat; tests give it a fake.
type MemoryReader interface {
	Usage() (Usage, error)
	Close() error
}

// Unknown is a utilization NVML does not give (the device or driver does
// not support it, as on MIG instances): no figure, which is not 0%.
const Unknown = -1

// Usage is one read of the node's schedulable GPUs (MIG instances by their
// own UUIDs), in the inventory's order.
type Usage struct {
	Devices []DeviceUse
}

// DeviceUse is what one device is doing.
type DeviceUse struct {
	UUID string
	// Util is the percent of the last sample period (1/6 s to 1 s) in
	// which one or more kernels ran; MemUtil the percent in which device
	// memory was read or written. Unknown where NVML does not say.
	Util, MemUtil int
	// MemoryUsed is the device memory in use, by any process (bytes;
	// what nvidia-smi shows).
	MemoryUsed int64
	// Procs is the GPU memory of each compute process on the device, pid
	// → bytes; a process whose usage NVML does not know is left out.
	Procs map[int]int64
	// SM is each process's share of the device's SMs since the last read,
	// pid → percent (the mean of its samples); nil where NVML cannot say
	// (ProcUtilKnown false). A process NVML has no sample of did not run a
	// kernel in the period: 0%.
	SM map[int]int
	// ProcUtilKnown reports whether NVML gives per-process utilization on
	// this device.
	ProcUtilKnown bool
}

// ProcUtil returns the SM utilization of the processes pids on the device,
// summed (at most 100), and whether NVML gives it.
func (d DeviceUse) ProcUtil(pids []int) (int, bool) {
	if !d.ProcUtilKnown {
		return 0, false
	}
	sum := 0
	for _, pid := range pids {
		sum += d.SM[pid]
	}
	return min(sum, 100), true
}

// ProcessMemory is u's GPU memory of each compute process, per device
// UUID: pid → bytes used.
func (u Usage) ProcessMemory() map[string]map[int]int64 {
	out := make(map[string]map[int]int64, len(u.Devices))
	for _, d := range u.Devices {
		out[d.UUID] = d.Procs
	}
	return out
}
