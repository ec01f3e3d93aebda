package wire

import "strconv"

// Job methods (docs/jobs.md).
const (
	MethodSubmit   = "submit"      // SubmitJobRequest → SubmitReply
	MethodItems    = "items"       // ItemsRequest → Empty (more items of a submission)
	MethodResults  = "results"     // ResultsRequest → ResultsReply
	MethodExchange = "jd.exchange" // ExchangeRequest → ExchangeReply (agent ↔ job driver)
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

	// The driver process that produces the work items (its protocol is
	// in docs/jobs.md). These three fields belong to the driver-process
	// change; the UIMA translation (spec/uima.go) only fills them. When
	// both changes meet, keep the driver-process change's declaration.
	DriverExecutable string   `cbor:"21,keyasint,omitempty" json:"driver_executable,omitempty"`
	DriverArgs       []string `cbor:"22,keyasint,omitempty" json:"driver_executable_args,omitempty"`
	DriverMemory     int64    `cbor:"23,keyasint,omitempty" json:"driver_memory_size,omitempty"`
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
}

// ExchangeReply hands items to a job process. Release means the process
// is no longer needed: finish what it holds and exit.
type ExchangeReply struct {
	Items   []WorkItem `cbor:"1,keyasint,omitempty"`
	Release bool       `cbor:"2,keyasint,omitempty"`
	// Kill lists items that timed out: the process must be killed.
	Kill string `cbor:"3,keyasint,omitempty"`
}
