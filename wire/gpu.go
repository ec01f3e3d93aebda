package wire

// GPUDevice is one GPU of a node, or one MIG instance of a GPU, as its
// agent reports it (NVML discovery or the config's node.gpus). A GPU with
// MIG enabled is not listed: its instances are, each a device of its own.
type GPUDevice struct {
	UUID   string `cbor:"1,keyasint" json:"uuid"` // what CUDA_VISIBLE_DEVICES names
	Model  string `cbor:"2,keyasint" json:"model"`
	Memory int64  `cbor:"3,keyasint" json:"memory"` // bytes
	// Minor is the device's /dev/nvidia<minor> (a MIG instance: its
	// parent's), what a process must be let open.
	Minor int `cbor:"4,keyasint" json:"minor"`
	// Parent is a MIG instance's GPU UUID; "" for a whole GPU.
	Parent string `cbor:"5,keyasint,omitempty" json:"parent,omitempty"`
}

// NodeGPU is one GPU of a node in `ducc nodes` and the dashboard: the
// device, what the scheduler has given out of it, and what NVML says is
// used.
type NodeGPU struct {
	GPUDevice
	// Allocated is the memory given out (bytes): the whole device when a
	// process holds it whole, else the sum of the slices on it.
	Allocated int64 `cbor:"10,keyasint,omitempty" json:"allocated,omitempty"`
	// Holders are the ids of the processes that hold the device or a
	// slice of it.
	Holders []string `cbor:"11,keyasint,omitempty" json:"holders,omitempty"`
	// Used is the GPU memory its processes use now (bytes), where the
	// agent can read it (NVML); 0 otherwise.
	Used int64 `cbor:"12,keyasint,omitempty" json:"used,omitempty"`
}

// GPU reason and exit codes.
const (
	// ReasonGPUs: no node has the GPUs (whole devices or a slice of one's
	// memory) free now.
	ReasonGPUs ReasonCode = "GPUs"

	// CodeGPUSlice: 'ducc run' and 'ducc wait' of a managed reservation
	// whose process ducc stopped because it used more GPU memory than its
	// slice (--gpu-memory); ProcStatus.GPUSliceExceeded says so. It is
	// above 128 + every signal number, so a shell does not read it as a
	// signal.
	CodeGPUSlice = 193
)
