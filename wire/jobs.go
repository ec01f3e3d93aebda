package wire

import "strconv"

// Job methods (docs/jobs.md).
const (
	MethodSubmit   = "submit"      // SubmitJobRequest → SubmitReply
	MethodItems    = "items"       // ItemsRequest → Empty (more items of a submission)
	MethodResults  = "results"     // ResultsRequest → ResultsReply
	MethodExchange = "jd.exchange" // ExchangeRequest → ExchangeReply (agent ↔ job driver)
	MethodDriver   = "jd.driver"   // DriverRequest → DriverReply (agent pumping a driver process ↔ job driver)
)

// Worker protocols.
const (
	ProtocolStream = "stream"
	ProtocolExec   = "exec"
)

// MaxResultSize bounds one item's result (docs/jobs.md).
const MaxResultSize = 64 << 10

// JobSpec is a job as submitted: the keys of docs/jobs.md, with sizes in bytes
// and times in milliseconds. Zero values mean "the default".
type JobSpec struct {
	Description       string   `cbor:"1,keyasint,omitempty" json:"description,omitempty"`
	Class             string   `cbor:"2,keyasint,omitempty" json:"scheduling_class,omitempty"`
	Executable        string   `cbor:"3,keyasint" json:"process_executable"`
	Args              []string `cbor:"4,keyasint,omitempty" json:"process_executable_args,omitempty"`
	WorkerProtocol    string   `cbor:"5,keyasint,omitempty" json:"worker_protocol,omitempty"`
	Memory            int64    `cbor:"6,keyasint,omitempty" json:"process_memory_size,omitempty"`
	Pipelines         int      `cbor:"7,keyasint,omitempty" json:"process_pipeline_count,omitempty"`
	DeploymentsMax    int      `cbor:"8,keyasint,omitempty" json:"process_deployments_max,omitempty"`
	InitTimeMaxMS     int64    `cbor:"9,keyasint,omitempty" json:"process_initialization_time_max_ms,omitempty"`
	InitFailuresCap   int      `cbor:"10,keyasint,omitempty" json:"process_initialization_failures_cap,omitempty"`
	FailuresLimit     int      `cbor:"11,keyasint,omitempty" json:"process_failures_limit,omitempty"`
	PerItemTimeMaxMS  int64    `cbor:"12,keyasint,omitempty" json:"process_per_item_time_max_ms,omitempty"`
	MaxJobErrors      int      `cbor:"13,keyasint,omitempty" json:"max_job_errors,omitempty"`
	MaxItemRetries    int      `cbor:"14,keyasint,omitempty" json:"max_item_retries,omitempty"`
	ServiceDependency []string `cbor:"15,keyasint,omitempty" json:"service_dependency,omitempty"`
	WorkingDirectory  string   `cbor:"16,keyasint,omitempty" json:"working_directory,omitempty"`
	LogDirectory      string   `cbor:"17,keyasint,omitempty" json:"log_directory,omitempty"`
	Environment       []string `cbor:"18,keyasint,omitempty" json:"environment,omitempty"`
	MachineList       []string `cbor:"19,keyasint,omitempty" json:"machine_list,omitempty"`
	// Umask of the job processes, four octal digits ("0077"); the CLI
	// sends the caller's. "" means 0022.
	Umask string `cbor:"20,keyasint,omitempty" json:"umask,omitempty"`
	// ShareGroup names a group whose members may read the logs and
	// results of this work besides its owner (share_with_group); ShareGID
	// is its gid, looked up by the CLI on the submitter's node.
	ShareGroup string `cbor:"40,keyasint,omitempty" json:"share_with_group,omitempty"`
	ShareGID   uint32 `cbor:"41,keyasint,omitempty" json:"share_gid,omitempty"`
	// DriverExecutable, when set, is the job's driver process: it produces
	// the work items over the driver protocol (docs/jobs.md) instead of the
	// submitter sending them. DriverMemory is its memory cap in bytes.
	DriverExecutable string   `cbor:"21,keyasint,omitempty" json:"driver_executable,omitempty"`
	DriverArgs       []string `cbor:"22,keyasint,omitempty" json:"driver_executable_args,omitempty"`
	DriverMemory     int64    `cbor:"23,keyasint,omitempty" json:"driver_memory_size,omitempty"`
	// GPUs asks each job process (not the driver) for that many whole GPUs, all on one node;
	// GPUMemory for a slice of that many bytes of one GPU's memory (at
	// most one of the two); GPUModel restricts either to GPUs of that
	// model (NVML's name, e.g. "NVIDIA H100 80GB HBM3").
	GPUs      int    `cbor:"70,keyasint,omitempty" json:"process_gpus,omitempty"`
	GPUMemory int64  `cbor:"71,keyasint,omitempty" json:"process_gpu_memory,omitempty"`
	GPUModel  string `cbor:"72,keyasint,omitempty" json:"process_gpu_model,omitempty"`
}

// DefaultDriverMemory is a driver process's memory cap when the spec
// gives none.
const DefaultDriverMemory = 512 << 20

// DriverRequest is the call of the agent that runs a job's driver process
// (docs/jobs.md, "Driver process protocol"): it says the driver is ready,
// hands over the items it produced since its last call, and learns how
// many more the job driver wants. Base numbers the items: Items[0] is the
// driver's item Base (0 is its first), so a chunk sent again (the answer
// was lost in a failover) is not added twice.
type DriverRequest struct {
	JobID  uint64   `cbor:"1,keyasint"`
	ProcID string   `cbor:"2,keyasint"`
	Node   string   `cbor:"3,keyasint"`
	Ready  bool     `cbor:"4,keyasint,omitempty"` // the driver said {"ready": true}
	InitMS int64    `cbor:"5,keyasint,omitempty"` // how long its initialization took
	Base   int      `cbor:"6,keyasint,omitempty"`
	Items  []string `cbor:"7,keyasint,omitempty"`
	End    bool     `cbor:"8,keyasint,omitempty"` // the driver said {"end": true}: these are the last items
	Total  int      `cbor:"9,keyasint,omitempty"` // the driver's {"total": N}, 0 if not said
	// WaitMS lets the job driver hold the call this long while the job
	// has enough items queued (long poll).
	WaitMS int64 `cbor:"10,keyasint,omitempty"`
	// Failed says the agent lost track of the driver's items (it
	// restarted while the driver ran): the job ends DriverProcessFailed.
	Failed string `cbor:"11,keyasint,omitempty"`
}

// DriverReply answers a DriverRequest. Have is how many of the driver's
// items the job has: the Base of the next chunk. Room is how many more
// items the job driver would queue now (the high-water mark less the
// items queued); Stop means the job needs no more items (it ended or is
// being canceled): stop asking the driver.
type DriverReply struct {
	Have int  `cbor:"1,keyasint"`
	Room int  `cbor:"2,keyasint,omitempty"`
	Stop bool `cbor:"3,keyasint,omitempty"`
}

// SubmitJobRequest submits a job with its first chunk of items. With More
// set the job stays Received until an ItemsRequest with Last arrives.
type SubmitJobRequest struct {
	Spec  JobSpec  `cbor:"1,keyasint" json:"spec"`
	Items []string `cbor:"2,keyasint,omitempty" json:"items,omitempty"`
	More  bool     `cbor:"3,keyasint,omitempty" json:"more,omitempty"`
}

// ItemsRequest adds a chunk of items to a job submitted with More.
type ItemsRequest struct {
	ID    uint64   `cbor:"1,keyasint" json:"id"`
	Items []string `cbor:"2,keyasint,omitempty" json:"items,omitempty"`
	Last  bool     `cbor:"3,keyasint,omitempty" json:"last,omitempty"`
}

// ResultsRequest pages through a job's item outcomes.
type ResultsRequest struct {
	ID     uint64 `cbor:"1,keyasint" json:"id"`
	Failed bool   `cbor:"2,keyasint,omitempty" json:"failed,omitempty"` // only failed items
	Offset int    `cbor:"3,keyasint,omitempty" json:"offset,omitempty"` // item index to start at
	Limit  int    `cbor:"4,keyasint,omitempty" json:"limit,omitempty"`  // 0 = a server default
}

// ItemResult is the outcome of one work item.
type ItemResult struct {
	Index    int    `cbor:"1,keyasint" json:"index"`
	Item     string `cbor:"2,keyasint" json:"item"`
	OK       bool   `cbor:"3,keyasint" json:"ok"`
	Result   string `cbor:"4,keyasint,omitempty" json:"result,omitempty"` // raw JSON from the worker
	Error    string `cbor:"5,keyasint,omitempty" json:"error,omitempty"`
	Millis   int64  `cbor:"6,keyasint,omitempty" json:"millis,omitempty"`
	Proc     string `cbor:"7,keyasint,omitempty" json:"process,omitempty"`
	Attempts int    `cbor:"8,keyasint,omitempty" json:"attempts,omitempty"`
}

// ResultsReply is one page of results; Next is the offset of the next
// page, or -1 at the end.
type ResultsReply struct {
	Results []ItemResult `cbor:"1,keyasint" json:"results"`
	Next    int          `cbor:"2,keyasint" json:"next"`
	Total   int          `cbor:"3,keyasint" json:"total"`
}

// JobStats are a job's statistics (docs/jobs.md).
type JobStats struct {
	Total      int     `cbor:"1,keyasint" json:"total"`
	Done       int     `cbor:"2,keyasint" json:"done"`
	Failed     int     `cbor:"3,keyasint" json:"failed"`
	Retried    int     `cbor:"4,keyasint" json:"retried"`
	Dispatched int     `cbor:"5,keyasint" json:"dispatched"` // in flight now
	Preempted  int     `cbor:"6,keyasint" json:"preempted"`  // items re-queued after a process was taken away
	MinMS      float64 `cbor:"7,keyasint,omitempty" json:"min_ms,omitempty"`
	MaxMS      float64 `cbor:"8,keyasint,omitempty" json:"max_ms,omitempty"`
	MeanMS     float64 `cbor:"9,keyasint,omitempty" json:"mean_ms,omitempty"`
	StddevMS   float64 `cbor:"10,keyasint,omitempty" json:"stddev_ms,omitempty"`
	Rate       float64 `cbor:"11,keyasint,omitempty" json:"rate,omitempty"` // items/s over the last seconds
	Processes  int     `cbor:"12,keyasint" json:"processes"`                // live job processes
	Pipelines  int     `cbor:"13,keyasint,omitempty" json:"pipelines,omitempty"`
	Protocol   string  `cbor:"14,keyasint,omitempty" json:"worker_protocol,omitempty"`
	InitMeanMS float64 `cbor:"15,keyasint,omitempty" json:"init_mean_ms,omitempty"`
	// Queued is how many items wait to be handed out (not in flight).
	Queued int `cbor:"16,keyasint,omitempty" json:"queued,omitempty"`
}

// WorkItem is one item handed to a job process.
type WorkItem struct {
	Index int    `cbor:"1,keyasint" json:"index"`
	Item  string `cbor:"2,keyasint" json:"item"`
}

// ItemOutcome is what a job process made of one item.
type ItemOutcome struct {
	Index  int    `cbor:"1,keyasint" json:"index"`
	OK     bool   `cbor:"2,keyasint" json:"ok"`
	Result string `cbor:"3,keyasint,omitempty" json:"result,omitempty"`
	Error  string `cbor:"4,keyasint,omitempty" json:"error,omitempty"`
	Millis int64  `cbor:"5,keyasint,omitempty" json:"millis,omitempty"`
}

// LimitResult makes an ok outcome whose result is longer than
// MaxResultSize an item error that says so, and reports whether it did. A
// result is a JSON value: cutting it would make it invalid.
func (o *ItemOutcome) LimitResult() bool {
	if !o.OK || len(o.Result) <= MaxResultSize {
		return false
	}
	o.OK, o.Error = false, "result of "+strconv.Itoa(len(o.Result))+" bytes exceeds 64 KiB"
	o.Result = ""
	return true
}

// ExchangeRequest is an agent's call to a job driver for one job process:
// it returns outcomes, says which items it still holds, and asks for more.
//
// Held lists every item the process holds, unless HeldSame says that the
// driver knows them already: they are what the process held at the
// exchange numbered Seq-1 of the same Feed, plus the items that exchange's
// reply handed out, less the Outcomes of this one. An agent says HeldSame
// only after a reply that said Tracking, and only for the next exchange of
// that feed; the driver trusts it only when the previous exchange it
// served for the process was that one (else it answers without Tracking,
// hands out nothing, and the agent sends the whole list next). So the list
// crosses the wire once per feeder, failover or failed call, not with
// every batch of outcomes.
type ExchangeRequest struct {
	JobID    uint64        `cbor:"1,keyasint"`
	ProcID   string        `cbor:"2,keyasint"`
	Node     string        `cbor:"3,keyasint"`
	Ready    bool          `cbor:"4,keyasint,omitempty"` // the worker said {"ready": true}
	InitMS   int64         `cbor:"5,keyasint,omitempty"` // how long initialization took
	Want     int           `cbor:"6,keyasint,omitempty"` // how many more items it can take
	Held     []int         `cbor:"7,keyasint,omitempty"` // items it holds (buffered or in the worker)
	Outcomes []ItemOutcome `cbor:"8,keyasint,omitempty"`
	// WaitMS lets the driver hold the call this long when it has nothing
	// to hand out yet (long poll).
	WaitMS int64 `cbor:"9,keyasint,omitempty"`
	// Feed names the agent's feeder of this process (a random number drawn
	// when it starts, so a restarted agent's feeder is another feed); Seq
	// numbers its exchanges from 1. Zero: an agent that never says
	// HeldSame.
	Feed uint64 `cbor:"10,keyasint,omitempty"`
	Seq  uint64 `cbor:"11,keyasint,omitempty"`
	// HeldSame: Held is left out; see the type's comment.
	HeldSame bool `cbor:"12,keyasint,omitempty"`
	// HeldCount is how many items the process holds (len(Held) without
	// HeldSame).
	HeldCount int `cbor:"13,keyasint,omitempty"`
}

// ExchangeReply hands items to a job process. Release means the process
// is no longer needed: finish what it holds and exit.
type ExchangeReply struct {
	Items   []WorkItem `cbor:"1,keyasint,omitempty"`
	Release bool       `cbor:"2,keyasint,omitempty"`
	// Kill lists items that timed out: the process must be killed.
	Kill string `cbor:"3,keyasint,omitempty"`
	// Tracking: the driver took this exchange's held items (listed, or
	// HeldSame and trusted) as what the process holds, and keeps them up
	// to date with what it hands out and what is answered; the next
	// exchange of the same feed may say HeldSame.
	Tracking bool `cbor:"4,keyasint,omitempty"`
}

// HeldItems is how many items an exchange says its process holds.
func (r *ExchangeRequest) HeldItems() int {
	if r.HeldSame {
		return r.HeldCount
	}
	return len(r.Held)
}
