package spec

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// Kind is what a spec asks for.
type Kind uint8

// The kinds of specs.
const (
	KindJob     Kind = iota // ducc submit: a job of work items
	KindService             // ducc services register: a service
	KindRun                 // ducc run: a managed reservation, one process
	KindReserve             // ducc reserve: a whole machine
	numKinds
)

// String names the kind for messages: "job spec".
func (k Kind) String() string {
	switch k {
	case KindJob:
		return "job spec"
	case KindService:
		return "service registration"
	case KindRun:
		return "managed reservation"
	case KindReserve:
		return "reservation"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Type says how a key's value is written and read.
type Type uint8

// Value types.
const (
	Text       Type = iota // free text, kept as written
	String                 // a word; surrounding blanks are dropped
	Executable             // a command: ~ is expanded; a relative path with a slash is relative to the spec file's folder (flags: the current directory); a bare name is looked up in PATH on the node
	Path                   // a path: ~ is expanded, relative ones are resolved like an Executable's; "-" stays "-"
	Args                   // a YAML list, or a string split like a shell would
	List                   // a YAML list, or a comma/space separated string
	Env                    // a YAML map, a YAML list of NAME=VALUE, or "A=1 B='two words'"
	Int                    // a whole number, at least Key.Min
	Size                   // a memory size: 4G, 512M, 4GiB; a bare number is GiB
	Minutes                // minutes (decimals allowed) or a duration like 90s
	Millis                 // milliseconds or a duration like 10s
	Bool                   // true/false/yes/no/on/off; an empty value means true
	Items                  // a YAML list only (work items)
)

// takesList reports whether a YAML list is a valid value.
func (t Type) takesList() bool { return t == Args || t == List || t == Env || t == Items }

// Use is how one kind of spec uses a key. T is what the kind's spec
// builds: Job, wire.ServiceSpec, Run or Reserve.
type Use[T any] struct {
	// Help is the flag's help text (and what docs say of the key).
	Help string
	// Default is filled in, written as a user would, when the field is
	// zero (JobDefaults, ServiceDefaults); the help shows it.
	Default string
	// Flag is the CLI flag: "" is the key's name with dashes, "-" none.
	Flag string
	// Also are more flags that set the key, shown as "same as --Flag";
	// Hidden are such flags left out of the help. The last one given wins.
	Also, Hidden []string
	// Field is the field the key sets: a *string, *[]string, *int, *int64
	// or *bool, as Type needs.
	Field func(*T) any
}

// Key is one key of the table.
type Key struct {
	// Name is the key in YAML and properties files (DUCC's name).
	Name string
	Type Type
	// Min is the smallest value of an Int key a user may write.
	Min int64
	// Check, if set, normalizes and checks a String value.
	Check func(string) (string, error)
	// Modify: `ducc services modify` may change the key (the new value
	// replaces the old one).
	Modify bool

	Job     *Use[Job]
	Service *Use[wire.ServiceSpec]
	Run     *Use[Run]
	Reserve *Use[Reserve]
}

// use is a Use with its type erased, for code that serves every kind.
type use struct {
	help, def, flag string
	also, hidden    []string
	field           func(target any) any
}

func erase[T any](u *Use[T]) *use {
	if u == nil {
		return nil
	}
	flag := u.Flag
	return &use{help: u.Help, def: u.Default, flag: flag, also: u.Also, hidden: u.Hidden,
		field: func(target any) any { return u.Field(target.(*T)) }}
}

// use returns how kind uses the key, or nil.
func (k *Key) use(kind Kind) *use {
	var u *use
	switch kind {
	case KindJob:
		u = erase(k.Job)
	case KindService:
		u = erase(k.Service)
	case KindRun:
		u = erase(k.Run)
	case KindReserve:
		u = erase(k.Reserve)
	}
	if u != nil && u.flag == "" {
		u.flag = strings.ReplaceAll(k.Name, "_", "-")
	}
	return u
}

// Help is the key's help text for kind, with its default; "" if kind
// does not take the key.
func (k *Key) Help(kind Kind) string {
	u := k.use(kind)
	if u == nil {
		return ""
	}
	if u.def != "" {
		return u.help + " (default " + u.def + ")"
	}
	return u.help
}

// Flag is the key's CLI flag for kind; "" if it has none.
func (k *Key) Flag(kind Kind) string {
	u := k.use(kind)
	if u == nil || u.flag == "-" {
		return ""
	}
	return u.flag
}

// Job is a job spec interpreted: what to submit and what the CLI does.
type Job struct {
	Spec      wire.JobSpec
	InputFile string   // "" = none, "-" = standard input
	Items     []string // input_items
	HaveItems bool     // input_items was given (possibly empty)
	// What the CLI does after submitting.
	Wait, CancelOnInterrupt, AttachConsole bool
	// UIMA is what the UIMA keys say; BuildJob turns it into Spec.
	UIMA UIMA
}

// Run is a managed reservation as asked for on the command line or in a
// spec file. The command and environment of a spec file are in
// Executable, Args and Environment (the CLI lays them over its own).
type Run struct {
	Req         wire.RunRequest
	Detach      bool
	Executable  string
	Args        []string
	Environment []string
	duccWait    bool // DUCC's wait_for_completion and the like: ducc run always waits
}

// Reserve is a reservation as asked for on the command line.
type Reserve struct {
	Req  wire.ReserveRequest
	Wait bool
}

// The key table, in the order of DUCC's documentation: jobs first, then
// what services add. Values are checked in this order, so errors are
// deterministic, and the help lists them in this order.
var keys = []Key{
	{Name: "description", Type: Text, Modify: true,
		Job:     &Use[Job]{Help: "free text shown by 'ducc jobs'", Field: func(j *Job) any { return &j.Spec.Description }},
		Service: &Use[wire.ServiceSpec]{Help: "free text shown by 'ducc services query'", Field: func(s *wire.ServiceSpec) any { return &s.Description }},
		Run:     &Use[Run]{Help: "free text shown by 'ducc jobs'", Field: func(r *Run) any { return &r.Req.Description }},
		Reserve: &Use[Reserve]{Help: "free text", Field: func(r *Reserve) any { return &r.Req.Description }},
	},
	{Name: "scheduling_class", Type: String,
		Job:     &Use[Job]{Help: "scheduling class (default: placement rules, else the default FAIR class)", Field: func(j *Job) any { return &j.Spec.Class }},
		Service: &Use[wire.ServiceSpec]{Help: "a FIXED_SHARE class (default: the default fixed class)", Field: func(s *wire.ServiceSpec) any { return &s.Class }},
		Run:     &Use[Run]{Flag: "class", Help: "FIXED_SHARE scheduling class (default: fixed)", Field: func(r *Run) any { return &r.Req.Class }},
		Reserve: &Use[Reserve]{Flag: "class", Help: "RESERVE class (default: reserve)", Field: func(r *Reserve) any { return &r.Req.Class }},
	},
	{Name: "service_request_endpoint", Type: String,
		Service: &Use[wire.ServiceSpec]{Help: "CUSTOM:<name>, HTTP:<url>, TCP:<host:port> or UIMA-AS:<queue>:<broker-url> (required; a UIMA-AS service's is read from its process_DD when left out)", Field: func(s *wire.ServiceSpec) any { return &s.Endpoint }},
	},
	{Name: "process_executable", Type: Executable, Modify: true,
		Job:     &Use[Job]{Help: "the worker command (required)", Field: func(j *Job) any { return &j.Spec.Executable }},
		Service: &Use[wire.ServiceSpec]{Help: "the service command (none: a ping-only service)", Field: func(s *wire.ServiceSpec) any { return &s.Executable }},
		Run:     &Use[Run]{Flag: "-", Help: "the command (spec files; on the command line it follows '--')", Field: func(r *Run) any { return &r.Executable }},
	},
	{Name: "process_executable_args", Type: Args, Modify: true,
		Job:     &Use[Job]{Help: "arguments of the worker command, split like a shell would", Field: func(j *Job) any { return &j.Spec.Args }},
		Service: &Use[wire.ServiceSpec]{Help: "its arguments; ${DUCC_SERVICE_INSTANCE} is replaced by the instance id", Field: func(s *wire.ServiceSpec) any { return &s.Args }},
		Run:     &Use[Run]{Flag: "-", Help: "arguments of the command (spec files)", Field: func(r *Run) any { return &r.Args }},
	},
	{Name: "driver_executable", Type: Executable,
		Job: &Use[Job]{Help: "a driver process that produces the work items (docs/jobs.md, driver process protocol) instead of input_file, input_items or standard input", Field: func(j *Job) any { return &j.Spec.DriverExecutable }},
	},
	{Name: "driver_executable_args", Type: Args,
		Job: &Use[Job]{Help: "arguments of the driver process, split like a shell would", Field: func(j *Job) any { return &j.Spec.DriverArgs }},
	},
	{Name: "driver_memory_size", Type: Size,
		Job: &Use[Job]{Help: "memory of the driver process, e.g. 512M or 2G (default 512M)", Field: func(j *Job) any { return &j.Spec.DriverMemory }},
	},
	{Name: "driver_descriptor_CR", Type: String,
		Job: &Use[Job]{Help: "UIMA collection reader descriptor (a path ending in .xml, or a name on the class path): run in the driver process, each CAS it makes is a work item", Field: func(j *Job) any { return &j.UIMA.CR }},
	},
	{Name: "driver_descriptor_CR_overrides", Type: Args,
		Job: &Use[Job]{Help: "configuration parameters of the collection reader: \"Name=value Other='a b'\"", Field: func(j *Job) any { return &j.UIMA.CROverrides }},
	},
	{Name: "driver_jvm_args", Type: Args,
		Job: &Use[Job]{Help: "options of the driver process's JVM, e.g. -Xmx1G", Field: func(j *Job) any { return &j.UIMA.DriverJVMArgs }},
	},
	{Name: "process_descriptor_CM", Type: String,
		Job: &Use[Job]{Help: "UIMA CAS multiplier descriptor, first in the job processes' aggregate (path or name)", Field: func(j *Job) any { return &j.UIMA.CM }},
	},
	{Name: "process_descriptor_CM_overrides", Type: Args,
		Job: &Use[Job]{Help: "configuration parameters of the CAS multiplier: \"Name=value ...\"", Field: func(j *Job) any { return &j.UIMA.CMOverrides }},
	},
	{Name: "process_descriptor_AE", Type: String,
		Job: &Use[Job]{Help: "UIMA analysis engine (primitive or aggregate) the job processes run on each item (path or name)", Field: func(j *Job) any { return &j.UIMA.AE }},
	},
	{Name: "process_descriptor_AE_overrides", Type: Args,
		Job: &Use[Job]{Help: "configuration parameters of the analysis engine: \"Name=value ...\"", Field: func(j *Job) any { return &j.UIMA.AEOverrides }},
	},
	{Name: "process_descriptor_CC", Type: String,
		Job: &Use[Job]{Help: "UIMA CAS consumer descriptor, last in the job processes' aggregate (path or name)", Field: func(j *Job) any { return &j.UIMA.CC }},
	},
	{Name: "process_descriptor_CC_overrides", Type: Args,
		Job: &Use[Job]{Help: "configuration parameters of the CAS consumer: \"Name=value ...\"", Field: func(j *Job) any { return &j.UIMA.CCOverrides }},
	},
	{Name: "process_descriptor_DD", Type: String,
		Job: &Use[Job]{Help: "UIMA-AS deployment descriptor naming a plain aggregate, run in the job processes (no remote delegates)", Field: func(j *Job) any { return &j.UIMA.DD }},
		Service: &Use[wire.ServiceSpec]{Hidden: []string{"process-DD"}, // DUCC's --process_DD
			Help: "UIMA-AS deployment descriptor (a path ending in .xml, relative to working_directory, or a name on classpath): each instance deploys it as a UIMA-AS service", Field: func(s *wire.ServiceSpec) any { return &s.ProcessDD }},
	},
	{Name: "classpath", Type: String,
		Job:     &Use[Job]{Help: "class path of the UIMA job's JVMs (your jars and folders, ':' separated; relative to working_directory)", Field: func(j *Job) any { return &j.UIMA.Classpath }},
		Service: &Use[wire.ServiceSpec]{Help: "class path of a UIMA-AS service's JVMs (your jars and folders, ':' separated; dir/* for its jars)", Field: func(s *wire.ServiceSpec) any { return &s.Classpath }},
	},
	{Name: "process_jvm_args", Type: Args,
		Job:     &Use[Job]{Help: "options of the job processes' JVMs, e.g. -Xmx2G", Field: func(j *Job) any { return &j.UIMA.ProcessJVMArgs }},
		Service: &Use[wire.ServiceSpec]{Help: "options of a UIMA-AS service's JVMs, e.g. -Xmx1G -DDefaultBrokerURL=${DefaultBrokerURL}", Field: func(s *wire.ServiceSpec) any { return &s.JVMArgs }},
	},
	{Name: "jvm", Type: Executable,
		Job:     &Use[Job]{Help: "the java command of the UIMA job's JVMs (default: java on the node's PATH)", Field: func(j *Job) any { return &j.UIMA.JVM }},
		Service: &Use[wire.ServiceSpec]{Help: "the java command of a UIMA-AS service's JVMs (default: java on the node's PATH)", Field: func(s *wire.ServiceSpec) any { return &s.JVM }},
	},
	{Name: "worker_protocol", Type: String, Check: checkProtocol,
		Job: &Use[Job]{Help: "stream (one long-lived worker, JSON lines) or exec (one run per item)", Default: wire.ProtocolStream, Field: func(j *Job) any { return &j.Spec.WorkerProtocol }},
	},
	{Name: "input_file", Type: Path,
		Job: &Use[Job]{Help: "file with the work items, one per line ('-' = standard input)", Field: func(j *Job) any { return &j.InputFile }},
	},
	{Name: "input_items", Type: Items,
		Job: &Use[Job]{Flag: "-", Help: "the work items as a YAML list (YAML specs only)", Field: func(j *Job) any { return &j.Items }},
	},
	{Name: "process_memory_size", Type: Size, Modify: true,
		Job:     &Use[Job]{Help: "memory per job process, e.g. 4G or 512M (default: the class default, 4G)", Field: func(j *Job) any { return &j.Spec.Memory }},
		Service: &Use[wire.ServiceSpec]{Help: "memory per instance, e.g. 1G (default: the class default, 4G)", Field: func(s *wire.ServiceSpec) any { return &s.Memory }},
		Run: &Use[Run]{Flag: "memory", Help: "memory for the process, e.g. 512M or 4G (default: the class default, 4G)",
			Hidden: []string{"process-memory-size"}, Field: func(r *Run) any { return &r.Req.Memory }},
		Reserve: &Use[Reserve]{Flag: "memory", Help: "memory size of the machine, e.g. 64G (required)",
			Hidden: []string{"memory-size", "process-memory-size"}, Field: func(r *Reserve) any { return &r.Req.Memory }},
	},
	// GPUs (issue 25): whole devices or a slice of one device's memory
	// per process, never both; checkGPU checks them together. Not
	// modifiable: a service's instances keep the GPUs they were given.
	{Name: "process_gpus", Type: Int, Min: 0,
		Job:     &Use[Job]{Flag: "gpus", Help: "whole GPUs per job process (not the driver), all on one node (default 0)", Hidden: []string{"process-gpus"}, Field: func(j *Job) any { return &j.Spec.GPUs }},
		Service: &Use[wire.ServiceSpec]{Flag: "gpus", Help: "whole GPUs per instance, all on one node (default 0)", Hidden: []string{"process-gpus"}, Field: func(s *wire.ServiceSpec) any { return &s.GPUs }},
		Run:     &Use[Run]{Flag: "gpus", Help: "whole GPUs for the process, all on one node (default 0)", Hidden: []string{"process-gpus"}, Field: func(r *Run) any { return &r.Req.GPUs }},
		Reserve: &Use[Reserve]{Flag: "gpus", Help: "a machine with at least this many GPUs; the reservation holds all of its GPUs", Field: func(r *Reserve) any { return &r.Req.GPUs }},
	},
	{Name: "process_gpu_memory", Type: Size,
		Job:     &Use[Job]{Flag: "gpu-memory", Help: "a slice of one GPU's memory per job process, e.g. 20G (instead of --gpus)", Hidden: []string{"process-gpu-memory"}, Field: func(j *Job) any { return &j.Spec.GPUMemory }},
		Service: &Use[wire.ServiceSpec]{Flag: "gpu-memory", Help: "a slice of one GPU's memory per instance, e.g. 20G (instead of --gpus)", Hidden: []string{"process-gpu-memory"}, Field: func(s *wire.ServiceSpec) any { return &s.GPUMemory }},
		Run:     &Use[Run]{Flag: "gpu-memory", Help: "a slice of one GPU's memory for the process, e.g. 20G (instead of --gpus)", Hidden: []string{"process-gpu-memory"}, Field: func(r *Run) any { return &r.Req.GPUMemory }},
	},
	{Name: "process_gpu_model", Type: String, Check: CheckGPUModel,
		Job:     &Use[Job]{Flag: "gpu-model", Help: "only GPUs of this model, as 'ducc nodes' names them (with --gpus or --gpu-memory)", Hidden: []string{"process-gpu-model"}, Field: func(j *Job) any { return &j.Spec.GPUModel }},
		Service: &Use[wire.ServiceSpec]{Flag: "gpu-model", Help: "only GPUs of this model, as 'ducc nodes' names them (with --gpus or --gpu-memory)", Hidden: []string{"process-gpu-model"}, Field: func(s *wire.ServiceSpec) any { return &s.GPUModel }},
		Run:     &Use[Run]{Flag: "gpu-model", Help: "only GPUs of this model, as 'ducc nodes' names them (with --gpus or --gpu-memory)", Hidden: []string{"process-gpu-model"}, Field: func(r *Run) any { return &r.Req.GPUModel }},
		Reserve: &Use[Reserve]{Flag: "gpu-model", Help: "only a machine with GPUs of this model (with --gpus)", Field: func(r *Reserve) any { return &r.Req.GPUModel }},
	},
	{Name: "process_pipeline_count", Type: Int, Min: 1,
		Job: &Use[Job]{Help: "items a job process works on at once", Default: "4", Field: func(j *Job) any { return &j.Spec.Pipelines }},
	},
	{Name: "process_deployments_max", Type: Int, Min: 0,
		Job: &Use[Job]{Help: "cap on job processes (default: unlimited)", Field: func(j *Job) any { return &j.Spec.DeploymentsMax }},
	},
	{Name: "process_initialization_time_max", Type: Minutes,
		Job: &Use[Job]{Help: "minutes a job process may take to become ready", Default: "120", Field: func(j *Job) any { return &j.Spec.InitTimeMaxMS }},
	},
	{Name: "process_initialization_failures_cap", Type: Int, Min: 1,
		Job: &Use[Job]{Help: "init failures after which no new job processes are added", Default: "99", Field: func(j *Job) any { return &j.Spec.InitFailuresCap }},
	},
	{Name: "process_failures_limit", Type: Int, Min: 1,
		Job: &Use[Job]{Help: "job process failures after init that fail the job", Default: "20", Field: func(j *Job) any { return &j.Spec.FailuresLimit }},
	},
	{Name: "process_per_item_time_max", Type: Minutes,
		Job: &Use[Job]{Help: "minutes per item before it times out", Default: "1440", Field: func(j *Job) any { return &j.Spec.PerItemTimeMaxMS }},
	},
	{Name: "max_job_errors", Type: Int, Min: 1,
		Job: &Use[Job]{Help: "the job is ended when more items than this have failed (as DUCC)", Default: "15", Field: func(j *Job) any { return &j.Spec.MaxJobErrors }},
	},
	{Name: "max_item_retries", Type: Int, Min: 0,
		Job: &Use[Job]{Help: "retries of an item that failed or timed out (default 0)", Field: func(j *Job) any { return &j.Spec.MaxItemRetries }},
	},
	{Name: "instances", Type: Int, Min: 0, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "instances to run when started (default 1)", Field: func(s *wire.ServiceSpec) any { return &s.Instances }},
	},
	{Name: "max_instances", Type: Int, Min: 1, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "cap on instances, also for a pinger's additions (default 10)", Field: func(s *wire.ServiceSpec) any { return &s.MaxInstances }},
	},
	{Name: "autostart", Type: Bool, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "keep the service running from registration and cluster start", Field: func(s *wire.ServiceSpec) any { return &s.Autostart }},
	},
	{Name: "service_linger", Type: Millis, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "ms (or a duration like 30s) a reference-started service lingers after its last reference", Default: "300000", Field: func(s *wire.ServiceSpec) any { return &s.LingerMS }},
	},
	{Name: "service_dependency", Type: List, Modify: true,
		Job:     &Use[Job]{Help: "service endpoints the job needs, comma or space separated", Field: func(j *Job) any { return &j.Spec.ServiceDependency }},
		Service: &Use[wire.ServiceSpec]{Help: "endpoints of services this service needs", Field: func(s *wire.ServiceSpec) any { return &s.Dependency }},
	},
	{Name: "instance_failures_window", Type: Minutes, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "minutes (or a duration) over which instance failures are counted", Default: "30", Field: func(s *wire.ServiceSpec) any { return &s.FailuresWindowMS }},
	},
	{Name: "instance_failures_limit", Type: Int, Min: 1, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "instance failures in the window above which the service is disabled", Default: "5", Field: func(s *wire.ServiceSpec) any { return &s.FailuresLimit }},
	},
	{Name: "instance_init_failures_limit", Type: Int, Min: 1, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "initialization failures above which the service is disabled", Default: "1", Field: func(s *wire.ServiceSpec) any { return &s.InitFailuresLimit }},
	},
	{Name: "service_ping_executable", Type: Executable, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "custom pinger command, run as you (CUSTOM: endpoints need it or service_ping_class)", Field: func(s *wire.ServiceSpec) any { return &s.PingExecutable }},
	},
	{Name: "service_ping_arguments", Type: Args, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "arguments of the pinger (a Java pinger's init gets them joined by blanks)", Field: func(s *wire.ServiceSpec) any { return &s.PingArgs }},
	},
	{Name: "service_ping_timeout", Type: Millis, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "ms (or a duration) a ping may take; a Java pinger's default is 5000", Default: "500", Field: func(s *wire.ServiceSpec) any { return &s.PingTimeoutMS }},
	},
	{Name: "service_ping_interval", Type: Millis, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "ms (or a duration) between pings", Default: "10000", Field: func(s *wire.ServiceSpec) any { return &s.PingIntervalMS }},
	},
	// DUCC's Java pingers (docs/services.md, "Java pingers"): kept
	// together here, apart from the UIMA-AS service keys.
	{Name: "service_ping_class", Type: String, Check: CheckPingClass, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "Java pinger: a class extending org.apache.uima.ducc.cli.AServicePing, or the name of a pinger the administrators registered; ducc runs it in a JVM as you", Field: func(s *wire.ServiceSpec) any { return &s.PingClass }},
	},
	{Name: "service_ping_classpath", Type: Text, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "class path of the Java pinger (':' separated; dir/* is its jars); ducc's pinger API is added", Field: func(s *wire.ServiceSpec) any { return &s.PingClasspath }},
	},
	{Name: "service_ping_jvm_args", Type: Args, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "options of the Java pinger's JVM, e.g. -Xmx64m", Field: func(s *wire.ServiceSpec) any { return &s.PingJVMArgs }},
	},
	{Name: "service_ping_dolog", Type: Bool, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "the Java pinger's doLog writes (to its standard error, kept by the agent)", Field: func(s *wire.ServiceSpec) any { return &s.PingDoLog }},
	},
	{Name: "working_directory", Type: Path, Modify: true,
		Job:     &Use[Job]{Help: "working directory of the job processes (default: the current directory)", Field: func(j *Job) any { return &j.Spec.WorkingDirectory }},
		Service: &Use[wire.ServiceSpec]{Help: "working directory of the instances (default: the current directory)", Field: func(s *wire.ServiceSpec) any { return &s.WorkingDirectory }},
		Run:     &Use[Run]{Flag: "-", Help: "working directory of the process (default: the current directory)", Field: func(r *Run) any { return &r.Req.Dir }},
	},
	{Name: "log_directory", Type: Path, Modify: true,
		Job:     &Use[Job]{Help: "log directory; logs go to <dir>/<id>/ (default ~/ducc/logs)", Field: func(j *Job) any { return &j.Spec.LogDirectory }},
		Service: &Use[wire.ServiceSpec]{Help: "log directory; logs go to <dir>/<id>/ (default ~/ducc/logs)", Field: func(s *wire.ServiceSpec) any { return &s.LogDirectory }},
		Run:     &Use[Run]{Flag: "log-dir", Help: "log directory (default ~/ducc/logs); the log is <dir>/<id>/", Field: func(r *Run) any { return &r.Req.LogDir }},
	},
	{Name: "environment", Type: Env, Modify: true,
		Job: &Use[Job]{Help: "environment of the job processes: \"A=1 B='two words'\" (default: none beyond PATH, HOME, USER)",
			Hidden: []string{"env"}, Field: func(j *Job) any { return &j.Spec.Environment }},
		Service: &Use[wire.ServiceSpec]{Help: "environment of the instances and the pinger: \"A=1 B=2\"", Field: func(s *wire.ServiceSpec) any { return &s.Environment }},
		Run:     &Use[Run]{Flag: "-", Help: "environment added to yours (spec files): \"A=1 B=2\"", Field: func(r *Run) any { return &r.Environment }},
	},
	{Name: "umask", Type: String, Check: CheckUmask,
		Job:     &Use[Job]{Help: "umask of the job processes, e.g. 0077 (default: yours when you submit)", Field: func(j *Job) any { return &j.Spec.Umask }},
		Service: &Use[wire.ServiceSpec]{Help: "umask of the instances, e.g. 0077 (default: yours when you register)", Field: func(s *wire.ServiceSpec) any { return &s.Umask }},
		Run:     &Use[Run]{Help: "umask of the process, e.g. 0077 (default: yours)", Field: func(r *Run) any { return &r.Req.Umask }},
	},
	{Name: "share_with_group", Type: String, Check: CheckGroupName,
		Job:     &Use[Job]{Help: "a group whose members may read the job's logs and results (default: only you, root and the administrators)", Field: func(j *Job) any { return &j.Spec.ShareGroup }},
		Service: &Use[wire.ServiceSpec]{Help: "a group whose members may read the instances' logs (default: only you, root and the administrators)", Field: func(s *wire.ServiceSpec) any { return &s.ShareGroup }},
		Run:     &Use[Run]{Help: "a group whose members may read the process's log (default: only you, root and the administrators)", Field: func(r *Run) any { return &r.Req.ShareGroup }},
	},
	{Name: "machine_list", Type: List,
		Job:     &Use[Job]{Help: "run only on these nodes, comma or space separated", Field: func(j *Job) any { return &j.Spec.MachineList }},
		Run:     &Use[Run]{Flag: "machine", Help: "run only on these nodes", Field: func(r *Run) any { return &r.Req.MachineList }},
		Reserve: &Use[Reserve]{Flag: "machine", Help: "only these nodes", Field: func(r *Reserve) any { return &r.Req.MachineList }},
	},
	{Name: "administrators", Type: List, Modify: true,
		Service: &Use[wire.ServiceSpec]{Help: "users who may change the service besides you", Field: func(s *wire.ServiceSpec) any { return &s.Administrators }},
	},
	{Name: "wait_for_completion", Type: Bool,
		Job: &Use[Job]{Help: "wait for the job to end, showing progress; exit 0 only if it completed (EndOfJob)",
			Also: []string{"wait"}, Field: func(j *Job) any { return &j.Wait }},
		Run:     &Use[Run]{Flag: "-", Help: "accepted in spec files for DUCC compatibility: ducc run waits unless --detach", Field: func(r *Run) any { return &r.duccWait }},
		Reserve: &Use[Reserve]{Flag: "wait", Help: "wait until a machine is reserved", Hidden: []string{"wait-for-completion"}, Field: func(r *Reserve) any { return &r.Wait }},
	},
	{Name: "cancel_on_interrupt", Type: Bool,
		Job: &Use[Job]{Help: "while waiting, Ctrl-C cancels the job (implies waiting)", Field: func(j *Job) any { return &j.CancelOnInterrupt }},
		Run: &Use[Run]{Flag: "-", Help: "accepted in spec files for DUCC compatibility: Ctrl-C always cancels a waiting ducc run", Field: func(r *Run) any { return &r.duccWait }},
	},
	{Name: "attach_console", Type: Bool,
		Job: &Use[Job]{Help: "accepted for DUCC compatibility; use 'ducc logs ID -f' to follow a job process's output", Field: func(j *Job) any { return &j.AttachConsole }},
		Run: &Use[Run]{Flag: "-", Help: "accepted in spec files for DUCC compatibility: ducc run's output is always attached", Field: func(r *Run) any { return &r.duccWait }},
	},
	{Name: "detach", Type: Bool,
		Run: &Use[Run]{Help: "print the id and return without waiting", Field: func(r *Run) any { return &r.Detach }},
	},
}

// notTaken are DUCC/UIMA job keys that ducc does not take, with what to
// do instead, so that people porting a spec get a useful answer.
var notTaken = map[string]string{
	"driver_exception_handler":       "the error handler's limits are max_job_errors and max_item_retries",
	"process_error_window_threshold": "the error handler's limits are max_job_errors and max_item_retries",
	"process_error_window_size":      "the error handler's limits are max_job_errors and max_item_retries",
	"all_in_one":                     "run the worker by hand for a local test; ducc has no all-in-one mode",
}

// aliases are DUCC's other names for keys, accepted silently as DUCC
// does (lower case).
var aliases = map[string]string{
	"process_thread_count": "process_pipeline_count",
	"process_dd":           "process_descriptor_DD",
	"memory_size":          "process_memory_size",
	"service_ping_jvmargs": "service_ping_jvm_args",
}

// ignored are DUCC keys that ducc accepts and ignores, with why (lower
// case); reading one gives a warning, not an error, as DUCC accepts them.
var ignored = map[string]string{
	"classpath_order":                    "ducc's classes live in their own package (ducc.uima), so the order does not matter: the class path is ducc-uima.jar, classpath, then UIMA's jars",
	"process_get_meta_time_max":          "process_initialization_time_max bounds a job process's start",
	"driver_exception_handler_arguments": "the error handler's limits are max_job_errors and max_item_retries",
	"process_debug":                      "ducc does not attach debuggers; add the JVM's debug options to the command yourself",
	"driver_debug":                       "ducc does not attach debuggers; add the JVM's debug options to the command yourself",
	"debug":                              "ducc's CLI has no debug mode",
	"quiet":                              "ducc's CLI prints one line per submission already",
	"role_administrator":                 "ducc recognizes administrators by their user; no role needs to be claimed",
	"suppress_console_log":               "ducc writes no console log to suppress; the process's output is its log",
	"timestamp":                          "ducc's own messages carry no timestamps; 'ducc logs' shows the log as written",
}

// Keys returns the keys a kind of spec takes, in table order.
func Keys(kind Kind) []*Key {
	var out []*Key
	for i := range keys {
		if keys[i].use(kind) != nil {
			out = append(out, &keys[i])
		}
	}
	return out
}

// lookup finds the key called name in a kind of spec: its own name or a
// DUCC alias.
func lookup(kind Kind, name string) (*Key, bool) {
	for i := range keys {
		if keys[i].Name == name && keys[i].use(kind) != nil {
			return &keys[i], true
		}
	}
	if canon, ok := aliases[strings.ToLower(name)]; ok && canon != name {
		return lookup(kind, canon)
	}
	return nil, false
}

// ignoredKey returns why a DUCC key that ducc accepts and ignores is
// ignored; ok is false for keys that are not such.
func ignoredKey(name string) (why string, ok bool) {
	why, ok = ignored[strings.ToLower(name)]
	return why, ok
}

// badKey is one key of a spec that ducc does not take.
type badKey struct {
	at, name string
}

// unknownKeys is the error for a spec with keys ducc does not take: all
// of them at once, each with what to do, so that porting a spec takes
// one run, not one per key.
type unknownKeys struct {
	kind Kind
	keys []badKey
}

func (e *unknownKeys) Error() string {
	if len(e.keys) == 1 {
		k := e.keys[0]
		return prefix(k.at) + unknown(e.kind, k.name).Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d keys are not taken by ducc:", len(e.keys))
	listValid := false
	for _, k := range e.keys {
		msg, valid := explain(e.kind, k.name)
		listValid = listValid || valid
		fmt.Fprintf(&b, "\n  %s%s", prefix(k.at), msg)
	}
	if listValid {
		fmt.Fprintf(&b, "\n%s", whereKeys(e.kind))
	}
	return b.String()
}

func prefix(at string) string {
	if at == "" {
		return ""
	}
	return at + ": "
}

// unknown explains an unknown key: a DUCC key ducc does not take, a near
// miss, and where the valid keys are listed.
func unknown(kind Kind, name string) error {
	msg, valid := explain(kind, name)
	if valid {
		return fmt.Errorf("%s; %s", msg, whereKeys(kind))
	}
	return errors.New(msg)
}

// whereKeys says where the keys of a kind are listed (the command's help
// and the docs), rather than listing them all on one line.
func whereKeys(kind Kind) string {
	switch kind {
	case KindService:
		return "'ducc services register --help' lists the keys (as flags), docs/services.md explains them"
	case KindRun:
		return "'ducc run --help' lists the keys (as flags), docs/jobs.md explains them"
	case KindReserve:
		return "'ducc reserve --help' lists the keys (as flags)"
	}
	return "'ducc submit --help' lists the keys (as flags), docs/jobs.md explains them"
}

// explain says what to do about a key ducc does not take; valid is true
// when pointing to the list of valid keys would help.
func explain(kind Kind, name string) (msg string, valid bool) {
	lower := strings.ToLower(name)
	if canon, ok := aliases[lower]; ok {
		lower = strings.ToLower(canon)
	}
	if hint, ok := notTaken[lower]; ok {
		return fmt.Sprintf("key %q is not used by ducc: %s", name, hint), false
	}
	for _, k := range Keys(kind) {
		if strings.EqualFold(k.Name, strings.ReplaceAll(name, "-", "_")) {
			return fmt.Sprintf("unknown key %q; did you mean %q?", name, k.Name), true
		}
	}
	for _, other := range []Kind{KindJob, KindService, KindRun, KindReserve} {
		if _, ok := lookup(other, name); ok && other != kind {
			return fmt.Sprintf("key %q belongs in a %s, not a %s", name, other, kind), false
		}
	}
	if near := nearKeys(kind, name); len(near) > 0 {
		return fmt.Sprintf("unknown key %q; did you mean %s?", name, orList(near)), true
	}
	return fmt.Sprintf("unknown key %q", name), true
}

// nearKeys are the keys of kind nearest to name (at most three), by edit
// distance to their names, their DUCC aliases and their flags (dashes
// read as underscores, case ignored); else those whose names contain it.
func nearKeys(kind Kind, name string) []string {
	n := strings.ToLower(strings.ReplaceAll(strings.TrimLeft(name, "-"), "-", "_"))
	type cand struct {
		key  string
		dist int
	}
	best := map[string]int{}
	consider := func(key, spelling string) {
		d := editDistance(n, strings.ToLower(strings.ReplaceAll(spelling, "-", "_")))
		if old, ok := best[key]; !ok || d < old {
			best[key] = d
		}
	}
	for _, k := range Keys(kind) {
		consider(k.Name, k.Name)
		if f := k.Flag(kind); f != "" {
			consider(k.Name, f)
		}
		u := k.use(kind)
		for _, a := range append(append([]string{}, u.also...), u.hidden...) {
			consider(k.Name, a)
		}
	}
	for alias, canon := range aliases {
		if k, ok := lookup(kind, canon); ok {
			consider(k.Name, alias)
		}
	}
	limit := max(2, len(n)/4)
	var cs []cand
	for k, d := range best {
		if d <= limit {
			cs = append(cs, cand{k, d})
		}
	}
	if len(cs) == 0 && len(n) >= 4 {
		for _, k := range Keys(kind) {
			if strings.Contains(strings.ToLower(k.Name), n) {
				cs = append(cs, cand{k.Name, best[k.Name]})
			}
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.key, b.key)
	})
	var out []string
	for _, c := range cs {
		if len(out) == 3 {
			break
		}
		out = append(out, c.key)
	}
	return out
}

// orList is "a", "a" or "b", "a", "b" or "c", each quoted.
func orList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func checkProtocol(s string) (string, error) {
	switch p := strings.ToLower(s); p {
	case wire.ProtocolStream, wire.ProtocolExec:
		return p, nil
	}
	return "", fmt.Errorf("unknown worker protocol %q; use %q (one long-lived worker reading JSON lines) or %q (one run per item)", s, wire.ProtocolStream, wire.ProtocolExec)
}

// CheckGroupName checks the name of a group (share_with_group): a name
// as groupadd takes it, no blanks, colons or slashes. Whether the group
// exists is for the node that submits to say.
func CheckGroupName(s string) (string, error) {
	t := strings.TrimSpace(s)
	if t == "" || len(t) > 64 || strings.ContainsAny(t, " \t\n:/,") {
		return "", fmt.Errorf("bad group name %q: write the name of a group, e.g. myproject", s)
	}
	return t, nil
}

// CheckUmask normalizes a umask to four octal digits: "077", "0o77" and
// "0077" all become "0077"; at most 0777.
func CheckUmask(s string) (string, error) {
	t := strings.TrimSpace(s)
	if len(t) > 2 && (t[:2] == "0o" || t[:2] == "0O") {
		t = t[2:]
	}
	if t == "" || len(t) > 4 || strings.Trim(t, "01234567") != "" {
		return "", fmt.Errorf("bad umask %q: write it in octal like the umask command, e.g. 0077 or 022", s)
	}
	var v int
	for _, c := range t {
		v = v*8 + int(c-'0')
	}
	if v > 0o777 {
		return "", fmt.Errorf("bad umask %q: at most 0777", s)
	}
	return fmt.Sprintf("%04o", v), nil
}
