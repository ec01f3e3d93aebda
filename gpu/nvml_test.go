//go:build cgo

package gpu

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// migOn turns MIG on for GPU d of a mock server and gives it instances of
// the given sizes in MiB (the first two indexes left empty, as NVML may).
func migOn(t *testing.T, d nvml.Device, sizes ...uint64) []string {
	t.Helper()
	dev := d.(*server.Device)
	dev.MigMode = nvml.DEVICE_MIG_ENABLE
	var uuids []string
	inst := map[int]*mock.Device{}
	for i, mb := range sizes {
		uuid := fmt.Sprintf("MIG-%s-%d", dev.UUID, i)
		uuids = append(uuids, uuid)
		mem := nvml.Memory{Total: mb << 20}
		inst[i+2] = &mock.Device{
			GetUUIDFunc:       func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return mem, nvml.SUCCESS },
		}
	}
	dev.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return len(sizes) + 2, nvml.SUCCESS }
	dev.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if m, ok := inst[i]; ok {
			return m, nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	return uuids
}

// discoverCase is one case of TestDiscover: a mock NVML, the status and
// line discovery gives, and a check of its devices.
type discoverCase struct {
	name   string
	lib    func(t *testing.T) nvml.Interface
	status Status
	want   func(inv Inventory) error
	says   string
}

func discoverCases() []discoverCase {
	const gib = int64(1) << 30
	return []discoverCase{
		{
			name:   "eight A100s",
			lib:    func(t *testing.T) nvml.Interface { return dgxa100.New() },
			status: StatusFound,
			says:   "NVML: 8 GPU(s), driver 550.54.15",
			want: func(inv Inventory) error {
				if len(inv.Devices) != 8 || len(inv.Schedulable()) != 8 {
					return fmt.Errorf("%d devices, %d schedulable, want 8", len(inv.Devices), len(inv.Schedulable()))
				}
				seen := map[string]bool{}
				for i, d := range inv.Devices {
					if d.Index != i || d.Minor != i || d.Memory != 40*gib || d.Model != "Mock NVIDIA A100-SXM4-40GB" ||
						d.MIG != MIGDisabled || d.Parent != "" || !strings.HasPrefix(d.UUID, "GPU-") || seen[d.UUID] {
						return fmt.Errorf("device %d: %+v", i, d)
					}
					seen[d.UUID] = true
				}
				return nil
			},
		},
		{
			name: "MIG enabled with instances",
			lib: func(t *testing.T) nvml.Interface {
				s := dgxa100.NewWithGPUs(gpus.Multiple(2, gpus.A100_SXM4_40GB)...)
				migOn(t, s.Devices[1], 20480, 10240)
				return s
			},
			status: StatusFound,
			says:   "NVML: 2 GPU(s), 2 MIG instance(s), driver 550.54.15",
			want: func(inv Inventory) error {
				if len(inv.Devices) != 4 {
					return fmt.Errorf("%d devices, want 2 GPUs and 2 instances: %v", len(inv.Devices), inv.Devices)
				}
				p := inv.Devices[1]
				if p.MIG != MIGEnabled {
					return fmt.Errorf("GPU 1 MIG %v, want enabled", p.MIG)
				}
				sched := inv.Schedulable()
				if len(sched) != 3 || sched[0].UUID != inv.Devices[0].UUID {
					return fmt.Errorf("schedulable %v, want GPU 0 and the two instances", sched)
				}
				for i, mem := range []int64{20 * gib, 10 * gib} {
					d := sched[i+1]
					if d.MIG != MIGInstance || d.Parent != p.UUID || d.Memory != mem || d.Minor != p.Minor ||
						d.UUID != fmt.Sprintf("MIG-%s-%d", p.UUID, i) || d.Index != i+2 {
						return fmt.Errorf("instance %d: %+v", i, d)
					}
				}
				return nil
			},
		},
		{
			name: "no GPUs",
			lib: func(t *testing.T) nvml.Interface {
				return dgxa100.NewWithGPUs()
			},
			status: StatusNoGPUs,
			says:   "NVML found, 0 GPUs",
		},
		{
			name: "the library missing",
			lib: func(t *testing.T) nvml.Interface {
				return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
			},
			status: StatusNoLibrary,
			says:   "no NVML library: libnvidia-ml.so.1 could not be loaded (no NVIDIA driver on this host)",
		},
		{
			name: "NVML fails to initialize",
			lib: func(t *testing.T) nvml.Interface {
				return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}
			},
			status: StatusError,
			says:   "NVML init: " + nvml.ERROR_DRIVER_NOT_LOADED.Error(),
		},
		{
			name: "a device NVML cannot read",
			lib: func(t *testing.T) nvml.Interface {
				s := dgxa100.NewWithGPUs(gpus.Multiple(2, gpus.A100_SXM4_40GB)...)
				s.Devices[1].(*server.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
					return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST
				}
				return s
			},
			status: StatusError,
			want: func(inv Inventory) error {
				if !errors.Is(inv.Err, nvml.ERROR_GPU_IS_LOST) || !strings.Contains(inv.Err.Error(), "NVML device 1: GPU-") ||
					!strings.Contains(inv.Err.Error(), ": memory: ") {
					return fmt.Errorf("err %v, want device 1's memory wrapping ERROR_GPU_IS_LOST", inv.Err)
				}
				return nil
			},
		},
	}
}

func TestDiscover(t *testing.T) {
	for _, tc := range discoverCases() {
		t.Run(tc.name, func(t *testing.T) {
			inv := Discover(tc.lib(t))
			if inv.Status != tc.status {
				t.Fatalf("status %v (%v), want %v", inv.Status, inv, tc.status)
			}
			if tc.says != "" && inv.String() != tc.says {
				t.Errorf("says %q, want %q", inv.String(), tc.says)
			}
			if tc.want != nil {
				if err := tc.want(inv); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// A process's GPU memory, per device, MIG instances by their own UUIDs.
func TestProcessMemory(t *testing.T) {
	s := dgxa100.NewWithGPUs(gpus.Multiple(2, gpus.A100_SXM4_40GB)...)
	for i, d := range s.Devices {
		procs := []nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 3 << 30}, {Pid: uint32(200 + i), UsedGpuMemory: 1 << 20},
			{Pid: 300, UsedGpuMemory: ^uint64(0)}} // usage unknown: left out
		d.(*server.Device).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return procs, nvml.SUCCESS }
		utilUnsupported(d.(*server.Device))
	}
	sess, inv := Open(s)
	if sess == nil {
		t.Fatalf("Open: %v", inv)
	}
	defer sess.Close()
	got, err := sess.ProcessMemory()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int]int64{
		s.Devices[0].(*server.Device).UUID: {100: 3 << 30, 200: 1 << 20},
		s.Devices[1].(*server.Device).UUID: {100: 3 << 30, 201: 1 << 20},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	s.Devices[1].(*server.Device).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return nil, nvml.ERROR_NO_PERMISSION
	}
	if _, err := sess.ProcessMemory(); !errors.Is(err, nvml.ERROR_NO_PERMISSION) || !strings.Contains(err.Error(), "running compute processes") {
		t.Fatalf("err %v, want the device's error wrapped", err)
	}
}

// utilUnsupported makes a mock device answer NOT_SUPPORTED to both
// utilization calls.
func utilUnsupported(d *server.Device) {
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	d.GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
}

// Utilization per device and per process, where NVML gives it: a device
// or process figure NVML does not support is Unknown (no figure), not 0.
func TestUsage(t *testing.T) {
	type devAnswer struct {
		rates    nvml.Utilization
		ratesRet nvml.Return
		samples  []nvml.ProcessUtilizationSample
		procRet  nvml.Return
	}
	tests := []struct {
		name    string
		dev     devAnswer
		util    int
		memUtil int
		known   bool           // per-process utilization known
		procs   map[int]int    // pid → SM % (ProcUtil of that one pid)
		sum     map[string]int // a pid list → its summed SM %
	}{
		{
			name: "both supported",
			dev: devAnswer{rates: nvml.Utilization{Gpu: 87, Memory: 40}, samples: []nvml.ProcessUtilizationSample{
				{Pid: 100, TimeStamp: 10, SmUtil: 60}, {Pid: 100, TimeStamp: 20, SmUtil: 80}, {Pid: 101, TimeStamp: 15, SmUtil: 30},
				{Pid: 102, TimeStamp: 16, SmUtil: 90}}},
			util: 87, memUtil: 40, known: true,
			procs: map[int]int{100: 70, 101: 30, 999: 0},
			sum:   map[string]int{"100,101": 100, "100,102": 100, "101": 30},
		},
		{
			name: "no process samples: none ran a kernel",
			dev:  devAnswer{rates: nvml.Utilization{Gpu: 0, Memory: 0}, procRet: nvml.ERROR_NOT_FOUND},
			util: 0, memUtil: 0, known: true,
			procs: map[int]int{100: 0},
		},
		{
			name: "device figure only",
			dev:  devAnswer{rates: nvml.Utilization{Gpu: 250, Memory: 3}, procRet: nvml.ERROR_NOT_SUPPORTED},
			util: 100, memUtil: 3,
		},
		{
			name: "neither supported (a MIG instance, an old GPU)",
			dev:  devAnswer{ratesRet: nvml.ERROR_NOT_SUPPORTED, procRet: nvml.ERROR_NOT_SUPPORTED},
			util: Unknown, memUtil: Unknown,
		},
		{
			name: "utilization fails otherwise: unknown, not an error",
			dev:  devAnswer{ratesRet: nvml.ERROR_UNKNOWN, procRet: nvml.ERROR_NO_PERMISSION},
			util: Unknown, memUtil: Unknown,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := dgxa100.NewWithGPUs(gpus.A100_SXM4_40GB)
			d := s.Devices[0].(*server.Device)
			d.MemoryInfo.Used = 5 << 30
			d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
				return []nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 2 << 30}}, nvml.SUCCESS
			}
			d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return tc.dev.rates, tc.dev.ratesRet }
			var seen []uint64
			d.GetProcessUtilizationFunc = func(last uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
				seen = append(seen, last)
				return tc.dev.samples, tc.dev.procRet
			}
			sess, inv := Open(s)
			if sess == nil {
				t.Fatalf("Open: %v", inv)
			}
			defer sess.Close()
			u, err := sess.Usage()
			if err != nil {
				t.Fatal(err)
			}
			if len(u.Devices) != 1 {
				t.Fatalf("%d devices, want 1", len(u.Devices))
			}
			got := u.Devices[0]
			if got.UUID != d.UUID || got.Util != tc.util || got.MemUtil != tc.memUtil || got.MemoryUsed != 5<<30 ||
				got.ProcUtilKnown != tc.known || !reflect.DeepEqual(got.Procs, map[int]int64{100: 2 << 30}) {
				t.Fatalf("got %+v, want util %d, memory util %d, 5 GiB used, per-process known %v", got, tc.util, tc.memUtil, tc.known)
			}
			for pid, want := range tc.procs {
				if v, ok := got.ProcUtil([]int{pid}); !ok || v != want {
					t.Errorf("pid %d: %d, %v; want %d", pid, v, ok, want)
				}
			}
			for pids, want := range tc.sum {
				var ps []int
				for _, f := range strings.Split(pids, ",") {
					var p int
					fmt.Sscan(f, &p)
					ps = append(ps, p)
				}
				if v, ok := got.ProcUtil(ps); !ok || v != want {
					t.Errorf("pids %s: %d, %v; want %d", pids, v, ok, want)
				}
			}
			if !tc.known {
				if v, ok := got.ProcUtil([]int{100}); ok {
					t.Errorf("ProcUtil %d, known; want no figure", v)
				}
			}
			// The next read asks only for samples after the newest seen.
			if _, err := sess.Usage(); err != nil {
				t.Fatal(err)
			}
			var newest uint64
			for _, x := range tc.dev.samples {
				newest = max(newest, x.TimeStamp)
			}
			if want := []uint64{0, newest}; !reflect.DeepEqual(seen, want) {
				t.Errorf("asked for samples after %v, want %v", seen, want)
			}
		})
	}
}
