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
	// Used is the GPU memory in use on the device now (bytes), where the
	// agent can read it (NVML): the device's own figure (GPUUse, every
	// process on it) when the node reports one, else the sum its holders
	// report; 0 otherwise.
	Used int64 `cbor:"12,keyasint,omitempty" json:"used,omitempty"`
	// Util is the device's utilization in percent (GPUUse.Util); nil
	// where NVML does not give it (no NVML, a MIG instance, an older GPU).
	Util *int `cbor:"13,keyasint,omitempty" json:"util,omitempty"`
}

// GPUUse is what one device of a node is doing, as its agent's NVML read
// it just before the heartbeat. Heartbeat.GPUUse carries one per
// schedulable device, in every heartbeat (full or delta) of a node whose
// GPUs NVML reads: a few bytes per GPU beyond its UUID. A node without
// NVML (GPUs declared in node.gpus) sends none.
type GPUUse struct {
	UUID string `cbor:"1,keyasint" json:"uuid"`
	// Util is the percent of the last sample period in which a kernel ran
	// on the device; nil where NVML does not give it (MIG instances,
	// some GPUs): no figure, which is not 0.
	Util *int `cbor:"2,keyasint,omitempty" json:"util,omitempty"`
	// MemoryUsed is the device memory in use, by any process (bytes).
	MemoryUsed int64 `cbor:"3,keyasint,omitempty" json:"memory_used,omitempty"`
}

// Percent returns a pointer to v, for the optional utilization fields
// (GPUUse.Util, NodeGPU.Util, ProcStatus.GPUUtil, ProcInfo.GPUUtil).
func Percent(v int) *int { return &v }

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
