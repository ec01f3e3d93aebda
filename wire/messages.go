package wire

// Protocol ids and topic names. A version suffix lets a later release speak
// two versions side by side during a rolling upgrade.
const (
	// ProtoRPC is the request/response protocol: agent→head calls (submit,
	// query, report) and head→agent pushes (desired state).
	ProtoRPC = "/ducc/rpc/1"
	// ProtoRaft carries the Raft transport between head-eligible agents.
	ProtoRaft = "/ducc/raft/1"
	// ProtoLogs streams a process's log from the agent of its node to
	// another agent (LogRequest, then LogChunks).
	ProtoLogs = "/ducc/logs/1"
	// TopicHeartbeat is the gossipsub topic every agent publishes its
	// Heartbeat on.
	TopicHeartbeat = "ducc/heartbeat/1"
	// TopicLeader is the gossipsub topic the head announces itself on.
	TopicLeader = "ducc/leader/1"
)

// Process states reported by agents.
const (
	ProcStarting     = "Starting"
	ProcRunning      = "Running"
	ProcStopping     = "Stopping"
	ProcExited       = "Exited"
	ProcLaunchFailed = "LaunchFailed"
	ProcLost         = "Lost"
)

// ProcStatus is what an agent knows about one process it manages.
type ProcStatus struct {
	ID          string  `cbor:"1,keyasint" json:"id"`
	WorkID      uint64  `cbor:"2,keyasint" json:"work_id"`
	State       string  `cbor:"3,keyasint" json:"state"`
	PID         int     `cbor:"4,keyasint,omitempty" json:"pid,omitempty"`
	RSS         uint64  `cbor:"5,keyasint,omitempty" json:"rss,omitempty"`
	CPUSeconds  float64 `cbor:"6,keyasint,omitempty" json:"cpu_seconds,omitempty"`
	StartedAt   int64   `cbor:"7,keyasint,omitempty" json:"started_at,omitempty"` // unix ms
	EndedAt     int64   `cbor:"8,keyasint,omitempty" json:"ended_at,omitempty"`   // unix ms
	ExitCode    int     `cbor:"9,keyasint" json:"exit_code"`
	Signal      string  `cbor:"10,keyasint,omitempty" json:"signal,omitempty"`
	OOMKilled   bool    `cbor:"11,keyasint,omitempty" json:"oom_killed,omitempty"`
	MemoryLimit int64   `cbor:"12,keyasint,omitempty" json:"memory_limit,omitempty"`
	Reason      string  `cbor:"13,keyasint,omitempty" json:"reason,omitempty"`
	LogPath     string  `cbor:"14,keyasint,omitempty" json:"log_path,omitempty"`
	Node        string  `cbor:"15,keyasint,omitempty" json:"node,omitempty"`
	// OOMKills counts the processes of its tree (its cgroup) the kernel OOM
	// killer killed, itself included; a child's kill the process survived
	// counts too, with OOMKilled false.
	OOMKills uint64 `cbor:"16,keyasint,omitempty" json:"oom_kills,omitempty"`
	// MaxRSS is the peak resident memory (bytes) of an ended process and
	// the children it waited for; CPUSeconds of an ended process is its
	// total CPU time (for accounting, docs/operations.md).
	MaxRSS int64 `cbor:"17,keyasint,omitempty" json:"max_rss,omitempty"`
	// GPUMemory is the GPU memory the process (its tree) uses now,
	// GPUMemoryPeak the most seen (bytes; where NVML can say).
	GPUMemory     int64 `cbor:"18,keyasint,omitempty" json:"gpu_memory,omitempty"`
	GPUMemoryPeak int64 `cbor:"19,keyasint,omitempty" json:"gpu_memory_peak,omitempty"`
	// GPUSliceExceeded: the agent stopped the process because it used
	// more GPU memory than its slice (Reason says how much;
	// CodeGPUSlice).
	GPUSliceExceeded bool `cbor:"20,keyasint,omitempty" json:"gpu_slice_exceeded,omitempty"`
	// GPUUtil is the process's (its tree's) share of the SMs of its GPUs
	// since the last read, in percent, the mean over those of its GPUs
	// where NVML gives it; nil where it gives it on none (no NVML, MIG
	// instances, some GPUs). Like RSS, it is as fresh as the last
	// heartbeat that carries the process (a full one, or a change).
	GPUUtil *int `cbor:"21,keyasint,omitempty" json:"gpu_util,omitempty"`
}

// Ended reports whether the process has finished for good.
func (p ProcStatus) Ended() bool {
	return p.State == ProcExited || p.State == ProcLaunchFailed || p.State == ProcLost
}

// Heartbeat is published by every agent every heartbeat interval.
type Heartbeat struct {
	Node           string       `cbor:"1,keyasint" json:"node"`
	PeerID         string       `cbor:"2,keyasint" json:"peer_id"`
	Addrs          []string     `cbor:"3,keyasint,omitempty" json:"addrs,omitempty"`
	Seq            uint64       `cbor:"4,keyasint" json:"seq"`
	Time           int64        `cbor:"5,keyasint" json:"time"` // unix ms
	MemTotal       int64        `cbor:"6,keyasint" json:"mem_total"`
	MemSchedulable int64        `cbor:"7,keyasint" json:"mem_schedulable"`
	MemUsed        int64        `cbor:"8,keyasint" json:"mem_used"`
	SwapTotal      int64        `cbor:"9,keyasint,omitempty" json:"swap_total,omitempty"`
	SwapUsed       int64        `cbor:"10,keyasint,omitempty" json:"swap_used,omitempty"`
	CPUs           int          `cbor:"11,keyasint" json:"cpus"`
	Load1          float64      `cbor:"12,keyasint,omitempty" json:"load1,omitempty"`
	DesiredVersion uint64       `cbor:"13,keyasint" json:"desired_version"`
	Procs          []ProcStatus `cbor:"14,keyasint,omitempty" json:"procs,omitempty"`
	HeadEligible   bool         `cbor:"15,keyasint,omitempty" json:"head_eligible,omitempty"`
	Version        string       `cbor:"16,keyasint,omitempty" json:"version,omitempty"`
	Aliens         int          `cbor:"17,keyasint,omitempty" json:"aliens,omitempty"`
	// Raft is a head-eligible agent's standing: RaftWaiting before it
	// belongs to a Raft group, else the Raft state (Leader, Follower...).
	Raft string `cbor:"18,keyasint,omitempty" json:"raft,omitempty"`
	// Delta marks a heartbeat that carries only what changed: no
	// inventory (Addrs, MemTotal, MemSchedulable, SwapTotal, CPUs,
	// Version, Aliens) and, in Procs, only the processes whose state or
	// pid changed since the last heartbeat plus the ended ones not yet
	// acknowledged; GPUUse and Leftovers ride every heartbeat. The head
	// keeps the rest from the last full heartbeat
	// (HeartbeatShaper decides; docs/decisions.md, "Small heartbeats").
	Delta bool `cbor:"19,keyasint,omitempty" json:"delta,omitempty"`
	// Leftovers are processes of another cluster incarnation still
	// running on the node (at most MaxLeftovers), kept out of Procs; every
	// heartbeat carries them, full or delta.
	Leftovers []Leftover `cbor:"20,keyasint,omitempty" json:"leftovers,omitempty"`
	// GPUs are the node's schedulable GPUs (inventory: full heartbeats
	// only); GPUDiscovery says in one line how they were found or why
	// there are none ("NVML: 8 GPU(s), driver 550.54", "no NVML library").
	GPUs         []GPUDevice `cbor:"21,keyasint,omitempty" json:"gpus,omitempty"`
	GPUDiscovery string      `cbor:"22,keyasint,omitempty" json:"gpu_discovery,omitempty"`
	// GPUUse is what each of the node's GPUs is doing (utilization,
	// memory in use). Unlike the inventory it rides every heartbeat, full
	// or delta, when the node reads its GPUs through NVML (a few bytes per
	// GPU); none without NVML.
	GPUUse []GPUUse `cbor:"23,keyasint,omitempty" json:"gpu_use,omitempty"`
}

// MaxLeftovers bounds Heartbeat.Leftovers.
const MaxLeftovers = 64

// Leftover is a process that an earlier cluster incarnation (a cluster
// whose Raft state was lost, replaced with `ducc agent --bootstrap-new`)
// started and that still runs: the current head knows nothing of it, so
// its agent neither stops it nor takes it for the current cluster's
// process of the same id; an administrator decides (docs/operations.md).
type Leftover struct {
	ID          string `cbor:"1,keyasint" json:"id"`
	WorkID      uint64 `cbor:"2,keyasint" json:"work_id"`
	Incarnation string `cbor:"3,keyasint" json:"incarnation"`
	PID         int    `cbor:"4,keyasint,omitempty" json:"pid,omitempty"`
}

// RaftWaiting is Heartbeat.Raft of a head-eligible agent that is not yet in
// a Raft group (waiting for bootstrap_expect peers or for a leader).
const RaftWaiting = "Waiting"

// ProcSpec is one process the head wants a node to run.
type ProcSpec struct {
	ID          string   `cbor:"1,keyasint" json:"id"`
	WorkID      uint64   `cbor:"2,keyasint" json:"work_id"`
	Kind        ProcKind `cbor:"3,keyasint" json:"kind"`
	User        string   `cbor:"4,keyasint" json:"user"`
	UID         uint32   `cbor:"5,keyasint" json:"uid"`
	GID         uint32   `cbor:"6,keyasint" json:"gid"`
	Groups      []uint32 `cbor:"7,keyasint,omitempty" json:"groups,omitempty"`
	Path        string   `cbor:"8,keyasint" json:"path"`
	Args        []string `cbor:"9,keyasint,omitempty" json:"args,omitempty"`
	Env         []string `cbor:"10,keyasint,omitempty" json:"env,omitempty"`
	Dir         string   `cbor:"11,keyasint,omitempty" json:"dir,omitempty"`
	LogDir      string   `cbor:"12,keyasint,omitempty" json:"log_dir,omitempty"`
	MemoryLimit int64    `cbor:"13,keyasint" json:"memory_limit"`
	Stop        bool     `cbor:"14,keyasint,omitempty" json:"stop,omitempty"` // the head wants it stopped
	StopReason  string   `cbor:"15,keyasint,omitempty" json:"stop_reason,omitempty"`
	GraceMS     int64    `cbor:"16,keyasint,omitempty" json:"grace_ms,omitempty"`
	// Job processes: the worker protocol and pipeline count the agent
	// feeds items with.
	Protocol  string `cbor:"17,keyasint,omitempty" json:"protocol,omitempty"`
	Pipelines int    `cbor:"18,keyasint,omitempty" json:"pipelines,omitempty"`
	// Umask of the process, four octal digits ("0077"); "" means 0022.
	Umask string `cbor:"19,keyasint,omitempty" json:"umask,omitempty"`
	// GPUs are the UUIDs of the devices the process gets (its whole GPUs,
	// or the one its slice is on), in the order of the node's inventory;
	// GPUSlice is the slice's bytes (0: whole devices). The agent sets
	// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES to GPUs (set and
	// empty without any, on a node with GPUs) and fences the others off.
	GPUs     []string `cbor:"20,keyasint,omitempty" json:"gpus,omitempty"`
	GPUSlice int64    `cbor:"21,keyasint,omitempty" json:"gpu_slice,omitempty"`
}

// DesiredState is the full set of processes the head wants on one node.
// Processes the agent runs that are not listed, and are not ended, are
// stopped; ended processes listed in Ack may be forgotten.
type DesiredState struct {
	Node    string     `cbor:"1,keyasint" json:"node"`
	Version uint64     `cbor:"2,keyasint" json:"version"`
	Procs   []ProcSpec `cbor:"3,keyasint,omitempty" json:"procs,omitempty"`
	Ack     []string   `cbor:"4,keyasint,omitempty" json:"ack,omitempty"`
	Head    string     `cbor:"5,keyasint,omitempty" json:"head,omitempty"` // peer id of the sender
	// Incarnation is the cluster's incarnation id, made when its Raft
	// state began: the agent records it with every process it starts and
	// tells processes of another incarnation by it.
	Incarnation string `cbor:"6,keyasint,omitempty" json:"incarnation,omitempty"`
}

// LeaderAnnounce is published by the head on TopicLeader.
type LeaderAnnounce struct {
	PeerID string   `cbor:"1,keyasint" json:"peer_id"`
	Node   string   `cbor:"2,keyasint" json:"node"`
	Addrs  []string `cbor:"3,keyasint,omitempty" json:"addrs,omitempty"`
	Term   uint64   `cbor:"4,keyasint" json:"term"`
	Time   int64    `cbor:"5,keyasint" json:"time"`
	// HeartbeatMS is the heartbeat interval the head asks agents to use
	// (milliseconds; 0: their own). It grows with the cluster so that the
	// head's intake stays bounded (head.max_heartbeats_per_second).
	HeartbeatMS int64 `cbor:"6,keyasint,omitempty" json:"heartbeat_ms,omitempty"`
}

// LogRequest asks an agent for the log of one of its processes. The agent
// serves only the log file it recorded for that process.
type LogRequest struct {
	ProcID string `cbor:"1,keyasint" json:"proc_id"`
	// Path is the log path the head recorded for the process; the agent
	// serves it only if it is that process's log on this node.
	Path   string `cbor:"4,keyasint" json:"path"`
	Offset int64  `cbor:"2,keyasint,omitempty" json:"offset,omitempty"`
	// Follow keeps streaming until the process has ended and its log is
	// drained.
	Follow bool `cbor:"3,keyasint,omitempty" json:"follow,omitempty"`
	// Caller is who asked for the log, as the asking agent learned it;
	// the serving agent asks the head whether the caller may read it
	// (MethodLogAccess).
	Caller Caller `cbor:"5,keyasint" json:"caller"`
}

// MethodLogAccess asks the head whether the caller may read the logs of a
// piece of work: IDRequest → LogAccess (agent → head). The head refuses
// with CodeUsage anyone but the work's owner, root and the cluster's
// administrators.
const MethodLogAccess = "logs.access"

// LogAccess is the head's answer to MethodLogAccess: the work, and the
// identity its processes run as (ProcSpec's), whose uid must own the log
// files an agent serves.
type LogAccess struct {
	Work WorkInfo `cbor:"1,keyasint" json:"work"`
	UID  uint32   `cbor:"2,keyasint" json:"uid"`
	GID  uint32   `cbor:"3,keyasint" json:"gid"`
}

// LogChunk is one piece of a log stream; the last one has EOF or Err set.
type LogChunk struct {
	Data []byte `cbor:"1,keyasint,omitempty" json:"data,omitempty"`
	EOF  bool   `cbor:"2,keyasint,omitempty" json:"eof,omitempty"`
	Err  string `cbor:"3,keyasint,omitempty" json:"err,omitempty"`
	// Code is the error code of Err (CodeUsage: the log was refused).
	Code int `cbor:"4,keyasint,omitempty" json:"code,omitempty"`
}

// MaxLogChunk bounds the data of one LogChunk.
const MaxLogChunk = 64 << 10
