package wire

import (
	"slices"

	"github.com/fxamacker/cbor/v2"
)

// RPC method names. The same names are used on the local API socket
// (POST /v1/<method>) and on ProtoRPC streams.
const (
	MethodRun     = "run"     // RunRequest → SubmitReply
	MethodCancel  = "cancel"  // CancelRequest → WorkInfo
	MethodJobs    = "jobs"    // ListRequest → WorkList
	MethodShow    = "show"    // IDRequest → WorkInfo
	MethodWait    = "wait"    // WaitRequest → WorkInfo
	MethodNodes   = "nodes"   // Empty → NodeList
	MethodStatus  = "status"  // Empty → StatusInfo
	MethodReport  = "report"  // Report → Empty (agent → head)
	MethodDesired = "desired" // DesiredState → Empty (head → agent)
	// MethodRaftJoin asks the head to add the calling head-eligible agent
	// to the Raft group as a voter: Empty → Empty (agent → head).
	MethodRaftJoin = "raft.join"
)

// Caller identifies who asked, as the local agent learned it from the
// kernel (SO_PEERCRED) and, for root, from --as. A Caller without a User
// is not a person: an agent's own calls and the dashboard, which cannot
// tell who is looking; the head shows it nothing private
// (docs/decisions.md).
type Caller struct {
	UID    uint32   `cbor:"1,keyasint" json:"uid"`
	GID    uint32   `cbor:"2,keyasint" json:"gid"`
	User   string   `cbor:"3,keyasint" json:"user"`
	Groups []uint32 `cbor:"4,keyasint,omitempty" json:"groups,omitempty"`
	Node   string   `cbor:"5,keyasint,omitempty" json:"node,omitempty"`
	Home   string   `cbor:"6,keyasint,omitempty" json:"home,omitempty"`
}

// Request is the envelope of one RPC on a stream.
type Request struct {
	Method string          `cbor:"1,keyasint"`
	Caller Caller          `cbor:"2,keyasint"`
	Body   cbor.RawMessage `cbor:"3,keyasint,omitempty"`
}

// Response is the envelope of an RPC answer. Code follows the CLI's exit
// codes where it maps (2 usage / bad input, 3 unreachable), else 1.
type Response struct {
	Error string          `cbor:"1,keyasint,omitempty"`
	Code  int             `cbor:"2,keyasint,omitempty"`
	Body  cbor.RawMessage `cbor:"3,keyasint,omitempty"`
}

// Empty is the body of calls that carry nothing.
type Empty struct{}

// RunRequest asks for a managed reservation: one process, any command.
type RunRequest struct {
	Memory      int64    `cbor:"1,keyasint" json:"memory"` // bytes; 0 = default
	Class       string   `cbor:"2,keyasint,omitempty" json:"class,omitempty"`
	Path        string   `cbor:"3,keyasint" json:"path"`
	Args        []string `cbor:"4,keyasint,omitempty" json:"args,omitempty"`
	Env         []string `cbor:"5,keyasint,omitempty" json:"env,omitempty"`
	Dir         string   `cbor:"6,keyasint,omitempty" json:"dir,omitempty"`
	LogDir      string   `cbor:"7,keyasint,omitempty" json:"log_dir,omitempty"`
	Description string   `cbor:"8,keyasint,omitempty" json:"description,omitempty"`
	MachineList []string `cbor:"9,keyasint,omitempty" json:"machine_list,omitempty"`
	// Umask is the process's umask, four octal digits ("0077"); the CLI
	// sends the caller's. "" means 0022.
	Umask string `cbor:"10,keyasint,omitempty" json:"umask,omitempty"`
	// ShareGroup names a group whose members may read the logs and
	// results of this work besides its owner (share_with_group); ShareGID
	// is its gid, looked up by the CLI on the submitter's node.
	ShareGroup string `cbor:"40,keyasint,omitempty" json:"share_with_group,omitempty"`
	ShareGID   uint32 `cbor:"41,keyasint,omitempty" json:"share_gid,omitempty"`
	// GPUs asks each process for that many whole GPUs, all on one node;
	// GPUMemory for a slice of that many bytes of one GPU's memory (at
	// most one of the two); GPUModel restricts either to GPUs of that
	// model (NVML's name, e.g. "NVIDIA H100 80GB HBM3").
	GPUs      int    `cbor:"70,keyasint,omitempty" json:"process_gpus,omitempty"`
	GPUMemory int64  `cbor:"71,keyasint,omitempty" json:"process_gpu_memory,omitempty"`
	GPUModel  string `cbor:"72,keyasint,omitempty" json:"process_gpu_model,omitempty"`
}

// SubmitReply answers a submission.
type SubmitReply struct {
	ID uint64 `cbor:"1,keyasint" json:"id"`
}

// IDRequest names one piece of work.
type IDRequest struct {
	ID uint64 `cbor:"1,keyasint" json:"id"`
}

// CancelRequest cancels one piece of work, or with Process one process
// of a job (DUCC's --dpid): its items go to the job's other processes.
type CancelRequest struct {
	ID      uint64 `cbor:"1,keyasint" json:"id"`
	Reason  string `cbor:"2,keyasint,omitempty" json:"reason,omitempty"`
	Process string `cbor:"3,keyasint,omitempty" json:"process,omitempty"`
}

// WaitRequest waits until a piece of work ends or the timeout passes.
type WaitRequest struct {
	ID        uint64 `cbor:"1,keyasint" json:"id"`
	TimeoutMS int64  `cbor:"2,keyasint,omitempty" json:"timeout_ms,omitempty"`
	// State returns as soon as the work leaves this state (used by the
	// CLI to learn that a process started); empty means "until ended".
	State string `cbor:"3,keyasint,omitempty" json:"state,omitempty"`
}

// ListRequest lists work.
type ListRequest struct {
	All  bool   `cbor:"1,keyasint,omitempty" json:"all,omitempty"`
	User string `cbor:"2,keyasint,omitempty" json:"user,omitempty"`
}

// ProcInfo is a process of a piece of work as the head sees it.
type ProcInfo struct {
	ID          string  `cbor:"1,keyasint" json:"id"`
	Node        string  `cbor:"2,keyasint" json:"node"`
	State       string  `cbor:"3,keyasint" json:"state"`
	PID         int     `cbor:"4,keyasint,omitempty" json:"pid,omitempty"`
	MemoryLimit int64   `cbor:"5,keyasint" json:"memory_limit"`
	RSS         uint64  `cbor:"6,keyasint,omitempty" json:"rss,omitempty"`
	CPUSeconds  float64 `cbor:"7,keyasint,omitempty" json:"cpu_seconds,omitempty"`
	StartedAt   int64   `cbor:"8,keyasint,omitempty" json:"started_at,omitempty"`
	EndedAt     int64   `cbor:"9,keyasint,omitempty" json:"ended_at,omitempty"`
	ExitCode    int     `cbor:"10,keyasint" json:"exit_code"`
	Reason      string  `cbor:"11,keyasint,omitempty" json:"reason,omitempty"`
	LogPath     string  `cbor:"12,keyasint,omitempty" json:"log_path,omitempty"`
	InitMS      int64   `cbor:"13,keyasint,omitempty" json:"init_ms,omitempty"`
	Done        int     `cbor:"14,keyasint,omitempty" json:"done,omitempty"`
	Errors      int     `cbor:"15,keyasint,omitempty" json:"errors,omitempty"`
	// OOMKills counts the processes of its tree the OOM killer killed at
	// its memory cap (ProcStatus.OOMKills); the reason says so too.
	OOMKills uint64 `cbor:"16,keyasint,omitempty" json:"oom_kills,omitempty"`
	// Kind is ProcDriver for a job's driver process, "" otherwise.
	Kind ProcKind `cbor:"17,keyasint,omitempty" json:"kind,omitempty"`
	// Stopped says why ducc stopped the process ("job ended", "canceled by
	// ann", "preempted"), when it did and the stop is no failure: its exit
	// code or signal is then ducc's doing, not the program's.
	Stopped string `cbor:"50,keyasint,omitempty" json:"stopped,omitempty"`
	// GPUs are the UUIDs of the devices the process holds: whole, or the
	// one its slice of GPUSlice bytes is on (0: whole devices).
	GPUs     []string `cbor:"60,keyasint,omitempty" json:"gpus,omitempty"`
	GPUSlice int64    `cbor:"61,keyasint,omitempty" json:"gpu_slice,omitempty"`
	// GPUMemory is the GPU memory it uses now, GPUMemoryPeak the most it
	// used (bytes, where NVML can say); GPUSeconds its GPUs held × its
	// run time (a slice counts as its fraction of the device).
	GPUMemory     int64   `cbor:"62,keyasint,omitempty" json:"gpu_memory,omitempty"`
	GPUMemoryPeak int64   `cbor:"63,keyasint,omitempty" json:"gpu_memory_peak,omitempty"`
	GPUSeconds    float64 `cbor:"64,keyasint,omitempty" json:"gpu_seconds,omitempty"`
	// GPUUtil is its share of its GPUs' SMs in percent, where NVML gives
	// it (ProcStatus.GPUUtil); nil otherwise.
	GPUUtil *int `cbor:"65,keyasint,omitempty" json:"gpu_util,omitempty"`
}

// WorkInfo describes one piece of work (job, managed reservation, ...).
type WorkInfo struct {
	ID          uint64     `cbor:"1,keyasint" json:"id"`
	Kind        WorkKind   `cbor:"2,keyasint" json:"kind"`
	User        string     `cbor:"3,keyasint" json:"user"`
	Class       string     `cbor:"4,keyasint" json:"class"`
	State       string     `cbor:"5,keyasint" json:"state"`
	Reason      string     `cbor:"6,keyasint,omitempty" json:"reason,omitempty"`
	Memory      int64      `cbor:"7,keyasint" json:"memory"`
	Node        string     `cbor:"8,keyasint,omitempty" json:"node,omitempty"`
	SubmittedAt int64      `cbor:"9,keyasint" json:"submitted_at"`
	StartedAt   int64      `cbor:"10,keyasint,omitempty" json:"started_at,omitempty"`
	EndedAt     int64      `cbor:"11,keyasint,omitempty" json:"ended_at,omitempty"`
	ExitCode    int        `cbor:"12,keyasint" json:"exit_code"`
	Command     []string   `cbor:"13,keyasint,omitempty" json:"command,omitempty"`
	Description string     `cbor:"14,keyasint,omitempty" json:"description,omitempty"`
	Procs       []ProcInfo `cbor:"15,keyasint,omitempty" json:"procs,omitempty"`
	Completion  string     `cbor:"16,keyasint,omitempty" json:"completion,omitempty"`
	Ended       bool       `cbor:"17,keyasint,omitempty" json:"ended"`
	Job         *JobStats  `cbor:"18,keyasint,omitempty" json:"job,omitempty"`
	// Redacted names what the head left out because the caller is neither
	// the owner nor an administrator (RedactedArgs).
	Redacted []string `cbor:"19,keyasint,omitempty" json:"redacted,omitempty"`
	// ShareGroup is the group whose members may read the work's logs and
	// results (share_with_group).
	ShareGroup string `cbor:"40,keyasint,omitempty" json:"share_with_group,omitempty"`
	// PurgedAt is set when the work has left the live state (retention,
	// docs/operations.md): what remains is its accounting record, and the
	// reply has no processes or arguments.
	PurgedAt int64 `cbor:"20,keyasint,omitempty" json:"purged_at,omitempty"`
	// ReasonCode classifies Reason for work that waits (ReasonCodes).
	ReasonCode ReasonCode `cbor:"50,keyasint,omitempty" json:"reason_code,omitempty"`
	// Held says why running work has fewer processes than it could use
	// (its class's growth caps, its fair share, the room on the nodes);
	// HeldCode classifies it. Empty for work that waits (see Reason).
	Held     string     `cbor:"51,keyasint,omitempty" json:"held,omitempty"`
	HeldCode ReasonCode `cbor:"52,keyasint,omitempty" json:"held_code,omitempty"`
	// Wanted is how many processes the scheduler would give the work now
	// (0 when it knows none), Nodes the nodes of its live processes.
	Wanted int      `cbor:"53,keyasint,omitempty" json:"processes_wanted,omitempty"`
	Nodes  []string `cbor:"54,keyasint,omitempty" json:"nodes,omitempty"`
	// MemoryCap is each process's memory cap: Memory, held by the
	// scheduler in whole shares of Quantum, the share quantum of the
	// work's nodepool.
	MemoryCap int64 `cbor:"55,keyasint,omitempty" json:"memory_cap,omitempty"`
	Quantum   int64 `cbor:"56,keyasint,omitempty" json:"share_quantum,omitempty"`
	// The GPU request per process, as submitted (RunRequest.GPUs...).
	GPUs      int    `cbor:"70,keyasint,omitempty" json:"gpus,omitempty"`
	GPUMemory int64  `cbor:"71,keyasint,omitempty" json:"gpu_memory,omitempty"`
	GPUModel  string `cbor:"72,keyasint,omitempty" json:"gpu_model,omitempty"`
}

// What a reply may leave out for callers other than the owner and the
// administrators (WorkInfo.Redacted, ServiceInfo.Redacted).
const (
	RedactedArgs = "arguments"   // the command's arguments (the executable stays)
	RedactedEnv  = "environment" // a service's environment
)

// Redact removes what only the work's owner and the administrators may
// see: the command's arguments (the executable stays). Redacted says what
// was removed.
func (w *WorkInfo) Redact() {
	if len(w.Command) > 1 {
		w.Command = w.Command[:1:1]
		w.Redacted = appendOnce(w.Redacted, RedactedArgs)
	}
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// WorkList is a list of work.
type WorkList struct {
	Work []WorkInfo `cbor:"1,keyasint" json:"work"`
}

// NodeInfo describes one node as the head sees it.
type NodeInfo struct {
	Name           string  `cbor:"1,keyasint" json:"name"`
	State          string  `cbor:"2,keyasint" json:"state"`
	PeerID         string  `cbor:"3,keyasint,omitempty" json:"peer_id,omitempty"`
	MemTotal       int64   `cbor:"4,keyasint" json:"mem_total"`
	MemSchedulable int64   `cbor:"5,keyasint" json:"mem_schedulable"`
	MemUsed        int64   `cbor:"6,keyasint" json:"mem_used"`
	Shares         int     `cbor:"7,keyasint" json:"shares"`
	SharesUsed     int     `cbor:"8,keyasint" json:"shares_used"`
	Procs          int     `cbor:"9,keyasint" json:"procs"`
	LastHeartbeat  int64   `cbor:"10,keyasint" json:"last_heartbeat"` // unix ms
	CPUs           int     `cbor:"11,keyasint,omitempty" json:"cpus,omitempty"`
	Load1          float64 `cbor:"12,keyasint,omitempty" json:"load1,omitempty"`
	// Addrs are the agent's libp2p addresses, from its heartbeat.
	Addrs []string `cbor:"13,keyasint,omitempty" json:"addrs,omitempty"`
	// Leftovers are processes of an earlier cluster incarnation still
	// running on the node (Heartbeat.Leftovers).
	Leftovers []Leftover `cbor:"14,keyasint,omitempty" json:"leftovers,omitempty"`
	// GPUs are the node's schedulable GPUs and their use; GPUDiscovery
	// says in one line how the agent found them (Heartbeat.GPUDiscovery).
	GPUs         []NodeGPU `cbor:"15,keyasint,omitempty" json:"gpus,omitempty"`
	GPUDiscovery string    `cbor:"16,keyasint,omitempty" json:"gpu_discovery,omitempty"`
}

// NodeList is a list of nodes.
type NodeList struct {
	Nodes []NodeInfo `cbor:"1,keyasint" json:"nodes"`
}

// StatusInfo describes the cluster as the head sees it.
type StatusInfo struct {
	Head      string   `cbor:"1,keyasint" json:"head"`
	HeadPeer  string   `cbor:"2,keyasint,omitempty" json:"head_peer,omitempty"`
	RaftState string   `cbor:"3,keyasint" json:"raft_state"`
	RaftTerm  uint64   `cbor:"4,keyasint,omitempty" json:"raft_term,omitempty"`
	RaftIndex uint64   `cbor:"5,keyasint,omitempty" json:"raft_index,omitempty"`
	Peers     []string `cbor:"6,keyasint,omitempty" json:"peers,omitempty"`
	NodesUp   int      `cbor:"7,keyasint" json:"nodes_up"`
	NodesAll  int      `cbor:"8,keyasint" json:"nodes_all"`
	Version   string   `cbor:"9,keyasint,omitempty" json:"version,omitempty"`
	Agent     string   `cbor:"10,keyasint,omitempty" json:"agent,omitempty"`
	Quantum   int64    `cbor:"11,keyasint,omitempty" json:"quantum,omitempty"`
	Cluster   string   `cbor:"12,keyasint,omitempty" json:"cluster,omitempty"`
	// Voters are the members of the head group with their state.
	Voters []VoterInfo `cbor:"13,keyasint,omitempty" json:"voters,omitempty"`
	// Incarnation is the id of this cluster's incarnation: a cluster
	// started anew (--bootstrap-new) after its Raft state was lost has
	// another one (DesiredState.Incarnation).
	Incarnation string `cbor:"20,keyasint,omitempty" json:"incarnation,omitempty"`
	// Snapshot describes the head's Raft snapshots (nil from an older head).
	Snapshot *SnapshotInfo `cbor:"14,keyasint,omitempty" json:"snapshot,omitempty"`
}

// SnapshotInfo describes a head group member's Raft snapshots: the last
// one it took or restored, how much log it applied since, and the restore
// of its last start.
type SnapshotInfo struct {
	Index        uint64 `cbor:"1,keyasint,omitempty" json:"index,omitempty"`
	Size         int64  `cbor:"2,keyasint,omitempty" json:"size,omitempty"` // bytes
	SinceEntries uint64 `cbor:"3,keyasint,omitempty" json:"since_entries,omitempty"`
	SinceBytes   uint64 `cbor:"4,keyasint,omitempty" json:"since_bytes,omitempty"`
	// RestoredIndex is the index of the last snapshot restored (0: none
	// since this member started), RestoredAt when (unix ms) and
	// RestoreMS how long it took.
	RestoredIndex uint64 `cbor:"5,keyasint,omitempty" json:"restored_index,omitempty"`
	RestoredAt    int64  `cbor:"6,keyasint,omitempty" json:"restored_at,omitempty"`
	RestoreMS     int64  `cbor:"7,keyasint,omitempty" json:"restore_ms,omitempty"`
}

// VoterInfo is one member of the head group (a Raft server) as the head
// sees it.
type VoterInfo struct {
	Peer string `cbor:"1,keyasint" json:"peer"`
	// Node is the member's node name, "" when the head has not heard
	// from it since it started.
	Node string `cbor:"2,keyasint,omitempty" json:"node,omitempty"`
	// State is the member's Raft state as its heartbeats carry it
	// (Leader, Follower, Candidate), or VoterUnreachable.
	State string `cbor:"3,keyasint" json:"state"`
	// Voter is false for a member that does not vote (yet).
	Voter bool `cbor:"4,keyasint" json:"voter"`
	// LastHeartbeat is when the head last heard from the member (unix
	// ms; 0: never since it started).
	LastHeartbeat int64 `cbor:"5,keyasint,omitempty" json:"last_heartbeat,omitempty"`
}

// VoterUnreachable is VoterInfo.State of a member the head has not heard
// from for longer than the node timeout.
const VoterUnreachable = "Unreachable"

// Report carries process state changes from an agent to the head right
// away (heartbeats carry them too, until acknowledged).
type Report struct {
	Node  string       `cbor:"1,keyasint" json:"node"`
	Procs []ProcStatus `cbor:"2,keyasint" json:"procs"`
}

// Methods of the Resource Manager's user interface.
const (
	MethodClasses = "classes" // Empty → ClassList
	MethodReserve = "reserve" // ReserveRequest → SubmitReply
)

// ClassInfo is a scheduling class with its live demand and allocation.
type ClassInfo struct {
	Name       string `cbor:"1,keyasint" json:"name"`
	Policy     string `cbor:"2,keyasint" json:"policy"`
	Priority   int    `cbor:"3,keyasint" json:"priority"`
	Weight     int    `cbor:"4,keyasint,omitempty" json:"weight,omitempty"`
	Pool       string `cbor:"5,keyasint" json:"nodepool"`
	Quantum    int64  `cbor:"6,keyasint" json:"quantum"`
	Guaranteed int64  `cbor:"7,keyasint,omitempty" json:"guaranteed,omitempty"`
	Max        int64  `cbor:"8,keyasint,omitempty" json:"max,omitempty"`
	Default    bool   `cbor:"9,keyasint,omitempty" json:"default,omitempty"`
	Works      int    `cbor:"10,keyasint" json:"works"`
	Demand     int64  `cbor:"11,keyasint" json:"demand"`
	FairShare  int64  `cbor:"12,keyasint,omitempty" json:"fair_share,omitempty"`
	Allocated  int64  `cbor:"13,keyasint" json:"allocated"`
}

// ClassList lists classes in config order.
type ClassList struct {
	Classes []ClassInfo `cbor:"1,keyasint" json:"classes"`
}

// ReserveRequest asks for a whole machine of a given memory size.
type ReserveRequest struct {
	Memory      int64    `cbor:"1,keyasint" json:"memory"`
	Class       string   `cbor:"2,keyasint,omitempty" json:"class,omitempty"`
	Description string   `cbor:"3,keyasint,omitempty" json:"description,omitempty"`
	MachineList []string `cbor:"4,keyasint,omitempty" json:"machine_list,omitempty"`
	// GPUs asks for a machine with at least that many GPUs (of GPUModel,
	// if set); the reservation holds every GPU of the machine it gets.
	GPUs     int    `cbor:"70,keyasint,omitempty" json:"gpus,omitempty"`
	GPUModel string `cbor:"72,keyasint,omitempty" json:"gpu_model,omitempty"`
}

// Admin methods.
const (
	MethodReconfigure = "admin.reconfigure" // ReconfigureRequest → ClassList
	MethodNodeAdmin   = "admin.node"        // NodeAdminRequest → NodeList
	// MethodRemoveServer removes a member from the head group (Raft
	// RemoveServer): RemoveServerRequest → RemoveServerReply. The head's
	// server answers it, not the head of one term, like MethodRaftJoin.
	MethodRemoveServer = "admin.remove-server"
)

// RemoveServerRequest names the member of the head group to remove: its
// node name or its peer id.
type RemoveServerRequest struct {
	Server string `cbor:"1,keyasint" json:"server"`
}

// RemoveServerReply says which member was removed and lists the members
// left.
type RemoveServerReply struct {
	Removed VoterInfo   `cbor:"1,keyasint" json:"removed"`
	Voters  []VoterInfo `cbor:"2,keyasint" json:"voters"`
}

// ReconfigureRequest carries a new `scheduler:` section (YAML).
type ReconfigureRequest struct {
	Scheduler []byte `cbor:"1,keyasint" json:"scheduler"`
}

// NodeAdminRequest varies a node off, quiesces it, or varies it on
// (State "").
type NodeAdminRequest struct {
	Node  string `cbor:"1,keyasint" json:"node"`
	State string `cbor:"2,keyasint,omitempty" json:"state,omitempty"`
}
