package proc

import (
	"fmt"
	"slices"

	"github.com/ducc-project/ducc/cgroup"
)

// The NVIDIA driver's character devices (fixed by the driver): GPU N is
// /dev/nvidiaN, major 195 minor N (NVML's minor number); nvidiactl is
// 195:255 and nvidia-modeset 195:254, both opened by every CUDA program.
// nvidia-uvm, nvidia-uvm-tools and nvidia-caps (MIG) get majors of their
// own, given at driver load (/proc/devices), so a fence of major 195 never
// touches them.
const (
	nvidiaMajor        = 195
	nvidiaMinors       = 256 // the driver's minor range
	nvidiaModesetMinor = 254
	nvidiaCtlMinor     = 255
	// MaxGPUMinor is the highest minor a GPU can have (254 and 255 are
	// nvidia-modeset and nvidiactl).
	MaxGPUMinor = 253
)

// GPUFence limits which NVIDIA GPUs a process may open: the device files
// of the other GPUs (major 195) are closed to it and everything it starts,
// by the cgroup (v1: devices controller; v2: a device BPF program), before
// it runs. nvidiactl, nvidia-modeset and nvidia-uvm stay open (every CUDA
// program needs them). MIG instances share their GPU's minor: a fence
// cannot tell them apart; CUDA_VISIBLE_DEVICES does (docs/security.md,
// "GPU fencing").
type GPUFence struct {
	// Allowed are the minors (N of /dev/nvidiaN, NVML's minor number,
	// 0..MaxGPUMinor) of the GPUs the process may open; empty: none (a
	// process without GPUs on a node with GPUs).
	Allowed []int `json:"allowed,omitempty"`
}

func (f *GPUFence) validate() error {
	if f == nil {
		return nil
	}
	for _, m := range f.Allowed {
		if m < 0 || m > MaxGPUMinor {
			return fmt.Errorf("GPU fence: minor %d is not a GPU's (0..%d; 254 and 255 are nvidia-modeset and nvidiactl, always open)", m, MaxGPUMinor)
		}
	}
	return nil
}

// deviceFence is f for the cgroup: the allowed GPUs, nvidia-modeset and
// nvidiactl open, the rest of major 195's minors closed.
func (f *GPUFence) deviceFence() cgroup.DeviceFence {
	allowed := make([]uint32, 0, len(f.Allowed)+2)
	for _, m := range f.Allowed {
		allowed = append(allowed, uint32(m))
	}
	allowed = append(allowed, nvidiaModesetMinor, nvidiaCtlMinor)
	slices.Sort(allowed)
	return cgroup.DeviceFence{Major: nvidiaMajor, Minors: nvidiaMinors, Allowed: slices.Compact(allowed)}
}
