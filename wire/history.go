package wire

// MethodHistory lists accounting records of finished work: HistoryRequest
// → HistoryReply (`ducc history`, docs/operations.md).
const MethodHistory = "history"

// HistoryRequest selects accounting records: work that ended in [Since,
// Until) (unix ms; 0 = unbounded), of one user (ordinary users see only
// their own), one class, and one of some completion reasons (EndOfJob,
// Error, CanceledByUser...; case-insensitive). A page starts after the
// record (AfterEnd, AfterID) the previous page named.
type HistoryRequest struct {
	Since       int64    `cbor:"1,keyasint,omitempty" json:"since,omitempty"`
	Until       int64    `cbor:"2,keyasint,omitempty" json:"until,omitempty"`
	User        string   `cbor:"3,keyasint,omitempty" json:"user,omitempty"`
	Class       string   `cbor:"4,keyasint,omitempty" json:"class,omitempty"`
	Completions []string `cbor:"5,keyasint,omitempty" json:"completions,omitempty"`
	AfterEnd    int64    `cbor:"6,keyasint,omitempty" json:"after_end,omitempty"`
	AfterID     uint64   `cbor:"7,keyasint,omitempty" json:"after_id,omitempty"`
	Limit       int      `cbor:"8,keyasint,omitempty" json:"limit,omitempty"` // 0 = a server default
}

// HistoryRecord is the accounting record of one finished piece of work.
type HistoryRecord struct {
	ID          uint64   `cbor:"1,keyasint" json:"id"`
	Kind        WorkKind `cbor:"2,keyasint" json:"kind"`
	User        string   `cbor:"3,keyasint" json:"user"`
	Class       string   `cbor:"4,keyasint,omitempty" json:"class,omitempty"`
	Description string   `cbor:"5,keyasint,omitempty" json:"description,omitempty"`
	SubmittedAt int64    `cbor:"6,keyasint" json:"submitted_at"` // unix ms
	StartedAt   int64    `cbor:"7,keyasint,omitempty" json:"started_at,omitempty"`
	EndedAt     int64    `cbor:"8,keyasint" json:"ended_at"`
	State       string   `cbor:"9,keyasint" json:"state"` // Completed
	Completion  string   `cbor:"10,keyasint,omitempty" json:"completion,omitempty"`
	Reason      string   `cbor:"11,keyasint,omitempty" json:"reason,omitempty"`
	ExitCode    int      `cbor:"12,keyasint" json:"exit_code"`
	// Memory asked per process, and the largest cap a process got (bytes).
	Memory      int64 `cbor:"13,keyasint,omitempty" json:"memory,omitempty"`
	MemoryLimit int64 `cbor:"14,keyasint,omitempty" json:"memory_limit,omitempty"`
	// MaxRSS is the largest peak resident memory of one process (bytes),
	// CPUSeconds the CPU time of all of them.
	MaxRSS     int64   `cbor:"15,keyasint,omitempty" json:"max_rss,omitempty"`
	CPUSeconds float64 `cbor:"16,keyasint,omitempty" json:"cpu_seconds,omitempty"`
	// Jobs: work items in all, done, failed, and retries.
	Items   int `cbor:"17,keyasint,omitempty" json:"items,omitempty"`
	Done    int `cbor:"18,keyasint,omitempty" json:"done,omitempty"`
	Failed  int `cbor:"19,keyasint,omitempty" json:"failed,omitempty"`
	Retried int `cbor:"20,keyasint,omitempty" json:"retried,omitempty"`
	// Procs is how many processes the work had; Nodes where they ran (the
	// first 32 of NodeCount).
	Procs     int      `cbor:"21,keyasint,omitempty" json:"procs,omitempty"`
	Nodes     []string `cbor:"22,keyasint,omitempty" json:"nodes,omitempty"`
	NodeCount int      `cbor:"23,keyasint,omitempty" json:"node_count,omitempty"`
	// WorkPurgedAt: when the work left the live state (`ducc jobs --all`,
	// `ducc show`); ItemsPurgedAt: when a job's items and results were
	// dropped. 0: not yet.
	WorkPurgedAt  int64 `cbor:"24,keyasint,omitempty" json:"work_purged_at,omitempty"`
	ItemsPurgedAt int64 `cbor:"25,keyasint,omitempty" json:"items_purged_at,omitempty"`
	// GPUs asked per process (whole devices) or GPUMemory (a slice of one
	// device's memory, bytes); GPUSeconds the GPU time held by all its
	// processes (devices × seconds, a slice as its fraction of the
	// device); GPUMemoryPeak the most GPU memory one process used.
	GPUs          int     `cbor:"26,keyasint,omitempty" json:"gpus,omitempty"`
	GPUMemory     int64   `cbor:"27,keyasint,omitempty" json:"gpu_memory,omitempty"`
	GPUSeconds    float64 `cbor:"28,keyasint,omitempty" json:"gpu_seconds,omitempty"`
	GPUMemoryPeak int64   `cbor:"29,keyasint,omitempty" json:"gpu_memory_peak,omitempty"`
}

// HistoryReply is one page of records in end-time order. With More set,
// the next page starts after (NextEnd, NextID).
type HistoryReply struct {
	Records []HistoryRecord `cbor:"1,keyasint" json:"records"`
	More    bool            `cbor:"2,keyasint,omitempty" json:"more,omitempty"`
	NextEnd int64           `cbor:"3,keyasint,omitempty" json:"next_end,omitempty"`
	NextID  uint64          `cbor:"4,keyasint,omitempty" json:"next_id,omitempty"`
}
