//go:build cgo

package gpu

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DiscoverHost discovers the GPUs of this host through its NVML library.
func DiscoverHost() Inventory { return Discover(nvml.New()) }

// OpenHost discovers the GPUs of this host through its NVML library and,
// when it found some, keeps the library open for reading their processes'
// memory: the reader is then an open Session (close it when done).
// Otherwise the reader is nil and the Inventory says why.
func OpenHost() (MemoryReader, Inventory) {
	s, inv := Open(nvml.New())
	if s == nil {
		return nil, inv
	}
	if inv = s.Discover(); inv.Status != StatusFound {
		_ = s.Close()
		return nil, inv
	}
	return s, inv
}

// Discover lists the GPUs lib reports (see Inventory). It initializes lib
// and shuts it down again.
func Discover(lib nvml.Interface) Inventory {
	s, inv := Open(lib)
	if s == nil {
		return inv
	}
	defer s.Close()
	return s.Discover()
}

// Session is an initialized NVML library, for repeated reads
// (ProcessMemory). Close it when done.
type Session struct {
	lib nvml.Interface
}

// Open initializes lib. Without the library, or when NVML fails to
// initialize, it returns nil and the Inventory that says so.
func Open(lib nvml.Interface) (*Session, Inventory) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
		return &Session{lib: lib}, Inventory{}
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, Inventory{Status: StatusNoLibrary, Err: errors.New("libnvidia-ml.so.1 could not be loaded (no NVIDIA driver on this host)")}
	default:
		return nil, Inventory{Status: StatusError, Err: fmt.Errorf("NVML init: %w", ret)}
	}
}

// Close shuts NVML down.
func (s *Session) Close() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %w", ret)
	}
	return nil
}

// Discover lists the GPUs, each MIG-enabled one followed by its instances.
func (s *Session) Discover() Inventory {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Inventory{Status: StatusError, Err: fmt.Errorf("NVML device count: %w", ret)}
	}
	inv := Inventory{Status: StatusFound}
	if v, ret := s.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		inv.Driver = v
	}
	if n == 0 {
		inv.Status = StatusNoGPUs
		return inv
	}
	for i := range n {
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return Inventory{Status: StatusError, Err: fmt.Errorf("NVML device %d: handle: %w", i, ret)}
		}
		d, err := readGPU(h, i)
		if err != nil {
			return Inventory{Status: StatusError, Err: fmt.Errorf("NVML device %d: %w", i, err)}
		}
		inv.Devices = append(inv.Devices, d)
		if d.MIG != MIGEnabled {
			continue
		}
		mig, err := readMIG(h, d)
		if err != nil {
			return Inventory{Status: StatusError, Err: fmt.Errorf("NVML device %d (%s): MIG instances: %w", i, d.UUID, err)}
		}
		inv.Devices = append(inv.Devices, mig...)
	}
	return inv
}

// readGPU reads one GPU's UUID, model, memory, index, minor and MIG mode.
func readGPU(h nvml.Device, i int) (Device, error) {
	d := Device{Index: i}
	var ret nvml.Return
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("UUID: %w", ret)
	}
	if d.Model, ret = h.GetName(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("%s: name: %w", d.UUID, ret)
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return d, fmt.Errorf("%s: memory: %w", d.UUID, ret)
	}
	d.Memory = int64(mem.Total)
	if d.Index, ret = h.GetIndex(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("%s: index: %w", d.UUID, ret)
	}
	if d.Minor, ret = h.GetMinorNumber(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("%s: minor number: %w", d.UUID, ret)
	}
	cur, _, ret := h.GetMigMode()
	switch {
	case ret == nvml.ERROR_NOT_SUPPORTED:
		d.MIG = MIGUnsupported
	case ret != nvml.SUCCESS:
		return d, fmt.Errorf("%s: MIG mode: %w", d.UUID, ret)
	case cur == nvml.DEVICE_MIG_ENABLE:
		d.MIG = MIGEnabled
	default:
		d.MIG = MIGDisabled
	}
	return d, nil
}

// readMIG lists the MIG instances of GPU h (parent p).
func readMIG(h nvml.Device, p Device) ([]Device, error) {
	n, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("count: %w", ret)
	}
	var out []Device
	for j := range n {
		m, ret := h.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // no instance at this index
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("instance %d: %w", j, ret)
		}
		d := Device{Index: j, Minor: p.Minor, MIG: MIGInstance, Parent: p.UUID, Model: p.Model}
		if d.UUID, ret = m.GetUUID(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("instance %d: UUID: %w", j, ret)
		}
		mem, ret := m.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("instance %d (%s): memory: %w", j, d.UUID, ret)
		}
		d.Memory = int64(mem.Total)
		out = append(out, d)
	}
	return out, nil
}

// ProcessMemory reads the GPU memory of each compute process, per device
// UUID (MIG instances by their own UUIDs): pid → bytes used. A device
// whose processes NVML cannot list is an error; a process whose usage
// NVML does not know (it reports none) is left out.
func (s *Session) ProcessMemory() (map[string]map[int]int64, error) {
	inv := s.Discover()
	if inv.Status == StatusError {
		return nil, inv.Err
	}
	out := map[string]map[int]int64{}
	for _, d := range inv.Schedulable() {
		h, ret := s.lib.DeviceGetHandleByUUID(d.UUID)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %s: handle: %w", d.UUID, ret)
		}
		ps, ret := h.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %s: running compute processes: %w", d.UUID, ret)
		}
		use := map[int]int64{}
		for _, p := range ps {
			if p.UsedGpuMemory == 0 || p.UsedGpuMemory == noValue {
				continue
			}
			use[int(p.Pid)] += int64(p.UsedGpuMemory)
		}
		out[d.UUID] = use
	}
	return out, nil
}

// noValue is NVML_VALUE_NOT_AVAILABLE as an unsigned long long: the
// usage is not known (e.g. without permission, or under MPS).
const noValue = ^uint64(0)
