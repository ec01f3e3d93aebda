//go:build cgo

package gpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DiscoverHost discovers the GPUs of this host through its NVML library.
func DiscoverHost() Inventory { return Discover(nvml.New()) }

// OpenHost discovers the GPUs of this host through its NVML library and,
// when it found some, keeps the library open for reading their memory and
// utilization and their processes': the reader is then an open Session (close it when done).
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

// Session is an initialized NVML library, for repeated reads (Usage,
// ProcessMemory); it is safe for concurrent use. Close it when done.
type Session struct {
	lib nvml.Interface

	mu       sync.Mutex
	lastSeen map[string]uint64 // device UUID → the newest process sample read (µs)
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
	u, err := s.Usage()
	if err != nil {
		return nil, err
	}
	return u.ProcessMemory(), nil
}

// Usage reads, in one pass, each schedulable device's utilization and
// memory in use, and its compute processes' memory and SM utilization
// since the previous read (see DeviceUse). A device whose processes or
// memory NVML cannot read is an error (the slice watchdog depends on
// them); a utilization NVML does not give, or fails to give, is Unknown,
// not an error.
func (s *Session) Usage() (Usage, error) {
	inv := s.Discover()
	if inv.Status == StatusError {
		return Usage{}, inv.Err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastSeen == nil {
		s.lastSeen = map[string]uint64{}
	}
	var out Usage
	for _, d := range inv.Schedulable() {
		h, ret := s.lib.DeviceGetHandleByUUID(d.UUID)
		if ret != nvml.SUCCESS {
			return Usage{}, fmt.Errorf("NVML device %s: handle: %w", d.UUID, ret)
		}
		u, err := s.readUse(h, d.UUID)
		if err != nil {
			return Usage{}, fmt.Errorf("NVML device %s: %w", d.UUID, err)
		}
		out.Devices = append(out.Devices, u)
	}
	return out, nil
}

// readUse reads one device (s.mu held).
func (s *Session) readUse(h nvml.Device, uuid string) (DeviceUse, error) {
	u := DeviceUse{UUID: uuid, Util: Unknown, MemUtil: Unknown}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return u, fmt.Errorf("memory: %w", ret)
	}
	u.MemoryUsed = int64(mem.Used)
	ps, ret := h.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return u, fmt.Errorf("running compute processes: %w", ret)
	}
	u.Procs = map[int]int64{}
	for _, p := range ps {
		if p.UsedGpuMemory == 0 || p.UsedGpuMemory == noValue {
			continue
		}
		u.Procs[int(p.Pid)] += int64(p.UsedGpuMemory)
	}
	if r, ret := h.GetUtilizationRates(); ret == nvml.SUCCESS {
		u.Util, u.MemUtil = percent(r.Gpu), percent(r.Memory)
	}
	// The samples since the last read of this device (all NVML keeps, the
	// first time); NOT_FOUND: there are none, no process ran a kernel.
	samples, ret := h.GetProcessUtilization(s.lastSeen[uuid])
	switch ret {
	case nvml.SUCCESS, nvml.ERROR_NOT_FOUND:
		u.ProcUtilKnown = true
		u.SM = smByPID(samples, s.lastSeen[uuid])
		for _, x := range samples {
			s.lastSeen[uuid] = max(s.lastSeen[uuid], x.TimeStamp)
		}
	}
	return u, nil
}

// smByPID is the mean SM utilization of each pid's samples newer than
// since.
func smByPID(samples []nvml.ProcessUtilizationSample, since uint64) map[int]int {
	sum, n := map[int]int{}, map[int]int{}
	for _, x := range samples {
		if x.TimeStamp <= since && since > 0 {
			continue
		}
		sum[int(x.Pid)] += percent(x.SmUtil)
		n[int(x.Pid)]++
	}
	for pid := range sum {
		sum[pid] /= n[pid]
	}
	return sum
}

// percent bounds an NVML percentage to 0..100.
func percent(v uint32) int { return int(min(v, 100)) }

// noValue is NVML_VALUE_NOT_AVAILABLE as an unsigned long long: the
// usage is not known (e.g. without permission, or under MPS).
const noValue = ^uint64(0)
