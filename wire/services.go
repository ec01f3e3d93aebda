package wire

// Service Manager methods (docs/services.md).
const (
	MethodServiceRegister = "services.register" // ServiceRegisterRequest → SubmitReply
	MethodServiceControl  = "services.control"  // ServiceControlRequest → ServiceInfo
	MethodServiceQuery    = "services.query"    // ServiceQueryRequest → ServiceList
	// MethodPingRun asks an agent to run a service's custom pinger once:
	// PingRunRequest → PingRunReply (head → agent).
	MethodPingRun = "ping.run"
)

// Service control actions.
const (
	SvcUnregister = "unregister"
	SvcStart      = "start"
	SvcStop       = "stop"
	SvcEnable     = "enable"
	SvcDisable    = "disable"
	SvcModify     = "modify"
	SvcObserve    = "observe-references"
	SvcIgnore     = "ignore-references"
)

// MaxServiceInstances bounds a service's instance ids: instances and
// max_instances must be below it.
const MaxServiceInstances = 1 << 16

// ServiceSpec is a service registration: the keys of docs/services.md, with sizes in
// bytes and times in milliseconds. Zero values mean "the default".
type ServiceSpec struct {
	Description       string   `cbor:"1,keyasint,omitempty" json:"description,omitempty"`
	Endpoint          string   `cbor:"2,keyasint" json:"service_request_endpoint"`
	Executable        string   `cbor:"3,keyasint,omitempty" json:"process_executable,omitempty"`
	Args              []string `cbor:"4,keyasint,omitempty" json:"process_executable_args,omitempty"`
	Memory            int64    `cbor:"5,keyasint,omitempty" json:"process_memory_size,omitempty"`
	Class             string   `cbor:"6,keyasint,omitempty" json:"scheduling_class,omitempty"`
	Instances         int      `cbor:"7,keyasint,omitempty" json:"instances,omitempty"`
	Autostart         bool     `cbor:"8,keyasint,omitempty" json:"autostart,omitempty"`
	LingerMS          int64    `cbor:"9,keyasint,omitempty" json:"service_linger_ms,omitempty"`
	Dependency        []string `cbor:"10,keyasint,omitempty" json:"service_dependency,omitempty"`
	FailuresWindowMS  int64    `cbor:"11,keyasint,omitempty" json:"instance_failures_window_ms,omitempty"`
	FailuresLimit     int      `cbor:"12,keyasint,omitempty" json:"instance_failures_limit,omitempty"`
	InitFailuresLimit int      `cbor:"13,keyasint,omitempty" json:"instance_init_failures_limit,omitempty"`
	PingExecutable    string   `cbor:"14,keyasint,omitempty" json:"service_ping_executable,omitempty"`
	PingArgs          []string `cbor:"15,keyasint,omitempty" json:"service_ping_arguments,omitempty"`
	PingTimeoutMS     int64    `cbor:"16,keyasint,omitempty" json:"service_ping_timeout_ms,omitempty"`
	PingIntervalMS    int64    `cbor:"17,keyasint,omitempty" json:"service_ping_interval_ms,omitempty"`
	Environment       []string `cbor:"18,keyasint,omitempty" json:"environment,omitempty"`
	WorkingDirectory  string   `cbor:"19,keyasint,omitempty" json:"working_directory,omitempty"`
	LogDirectory      string   `cbor:"20,keyasint,omitempty" json:"log_directory,omitempty"`
	Administrators    []string `cbor:"21,keyasint,omitempty" json:"administrators,omitempty"`
	MaxInstances      int      `cbor:"22,keyasint,omitempty" json:"max_instances,omitempty"`
	// Umask of the instances, four octal digits ("0077");
	// the CLI sends the caller's. "" means 0022.
	Umask string `cbor:"23,keyasint,omitempty" json:"umask,omitempty"`
	// ShareGroup names a group whose members may read the logs and
	// results of this work besides its owner (share_with_group); ShareGID
	// is its gid, looked up by the CLI on the submitter's node.
	ShareGroup string `cbor:"40,keyasint,omitempty" json:"share_with_group,omitempty"`
	ShareGID   uint32 `cbor:"41,keyasint,omitempty" json:"share_gid,omitempty"`
	// A Java pinger (DUCC's AServicePing; docs/services.md, "Java
	// pingers"): its class, or the name of a registered pinger; where
	// the class is; its JVM's options; whether its doLog writes.
	PingClass     string   `cbor:"50,keyasint,omitempty" json:"service_ping_class,omitempty"`
	PingClasspath string   `cbor:"51,keyasint,omitempty" json:"service_ping_classpath,omitempty"`
	PingJVMArgs   []string `cbor:"52,keyasint,omitempty" json:"service_ping_jvm_args,omitempty"`
	PingDoLog     bool     `cbor:"53,keyasint,omitempty" json:"service_ping_dolog,omitempty"`
	// A UIMA-AS service (docs/services.md, "UIMA-AS services"): the
	// deployment descriptor its instances deploy, the class path and
	// options of their JVMs, and the java command. The CLI turns them
	// into Executable and Args (a JVM running ducc.uima.ServiceMain) and
	// records in DDEndpoint the UIMA-AS:queue:broker its DD declares, so
	// that the head can compare it with Endpoint once it has resolved
	// ${DefaultBrokerURL}.
	ProcessDD  string   `cbor:"60,keyasint,omitempty" json:"process_DD,omitempty"`
	Classpath  string   `cbor:"61,keyasint,omitempty" json:"classpath,omitempty"`
	JVMArgs    []string `cbor:"62,keyasint,omitempty" json:"process_jvm_args,omitempty"`
	JVM        string   `cbor:"63,keyasint,omitempty" json:"jvm,omitempty"`
	DDEndpoint string   `cbor:"64,keyasint,omitempty" json:"dd_endpoint,omitempty"`
	// GPUs asks each instance for that many whole GPUs, all on one node;
	// GPUMemory for a slice of that many bytes of one GPU's memory (at
	// most one of the two); GPUModel restricts either to GPUs of that
	// model (NVML's name, e.g. "NVIDIA H100 80GB HBM3").
	GPUs      int    `cbor:"70,keyasint,omitempty" json:"process_gpus,omitempty"`
	GPUMemory int64  `cbor:"71,keyasint,omitempty" json:"process_gpu_memory,omitempty"`
	GPUModel  string `cbor:"72,keyasint,omitempty" json:"process_gpu_model,omitempty"`
}

// ServiceRegisterRequest registers a service.
type ServiceRegisterRequest struct {
	Spec ServiceSpec `cbor:"1,keyasint" json:"spec"`
	// ClassNotFound is what the CLI found when it looked for
	// service_ping_class in service_ping_classpath on the registering
	// node and did not find it (the refusal in words); the head refuses
	// with it unless the class names a registered pinger, which only the
	// head knows.
	ClassNotFound string `cbor:"30,keyasint,omitempty" json:"class_not_found,omitempty"`
}

// ServiceControlRequest changes a registered service. Service is its id
// or its endpoint. Instances is the count for start/stop (0: all). For
// modify, Keys names the spec keys (the names in the spec package's key table) to take from Spec.
type ServiceControlRequest struct {
	Service   string      `cbor:"1,keyasint" json:"service"`
	Action    string      `cbor:"2,keyasint" json:"action"`
	Instances int         `cbor:"3,keyasint,omitempty" json:"instances,omitempty"`
	Spec      ServiceSpec `cbor:"4,keyasint,omitempty" json:"spec,omitempty"`
	Keys      []string    `cbor:"5,keyasint,omitempty" json:"keys,omitempty"`
	// ClassNotFound: as in ServiceRegisterRequest, for a modify.
	ClassNotFound string `cbor:"30,keyasint,omitempty" json:"class_not_found,omitempty"`
}

// ServiceQueryRequest lists services; Service (id or endpoint) picks one.
type ServiceQueryRequest struct {
	Service string `cbor:"1,keyasint,omitempty" json:"service,omitempty"`
}

// ServiceInstance is one instance of a service.
type ServiceInstance struct {
	Instance int      `cbor:"1,keyasint" json:"instance"`
	Proc     ProcInfo `cbor:"2,keyasint" json:"proc"`
	Ready    bool     `cbor:"3,keyasint,omitempty" json:"ready,omitempty"`
}

// Service states (docs/services.md).
const (
	SvcStateStopped      = "Stopped"
	SvcStateStarting     = "Starting"
	SvcStateInitializing = "Initializing"
	SvcStateWaiting      = "Waiting"
	SvcStateAvailable    = "Available"
	SvcStateNotAvailable = "NotAvailable"
	SvcStateStopping     = "Stopping"
	SvcStateDisabled     = "Disabled"
	SvcStateAlert        = "Alert"
)

// ServiceInfo describes one registered service.
type ServiceInfo struct {
	ID           uint64            `cbor:"1,keyasint" json:"id"`
	Endpoint     string            `cbor:"2,keyasint" json:"endpoint"`
	User         string            `cbor:"3,keyasint" json:"user"`
	State        string            `cbor:"4,keyasint" json:"state"`
	Reason       string            `cbor:"5,keyasint,omitempty" json:"reason,omitempty"`
	Policy       string            `cbor:"6,keyasint" json:"policy"` // autostart, reference, manual, ping-only
	Enabled      bool              `cbor:"7,keyasint" json:"enabled"`
	Instances    int               `cbor:"8,keyasint" json:"instances"` // wanted when started
	Running      int               `cbor:"9,keyasint" json:"running"`
	References   []uint64          `cbor:"10,keyasint,omitempty" json:"references,omitempty"`
	Alive        bool              `cbor:"11,keyasint,omitempty" json:"alive"`
	Healthy      bool              `cbor:"12,keyasint,omitempty" json:"healthy"`
	PingInfo     string            `cbor:"13,keyasint,omitempty" json:"ping_info,omitempty"`
	LastPing     int64             `cbor:"14,keyasint,omitempty" json:"last_ping,omitempty"`
	LastUse      int64             `cbor:"15,keyasint,omitempty" json:"last_use,omitempty"`
	Failures     int               `cbor:"16,keyasint,omitempty" json:"failures,omitempty"` // runtime failures in the window
	InitFailures int               `cbor:"17,keyasint,omitempty" json:"init_failures,omitempty"`
	Class        string            `cbor:"18,keyasint" json:"class"`
	Memory       int64             `cbor:"19,keyasint" json:"memory"`
	Procs        []ServiceInstance `cbor:"20,keyasint,omitempty" json:"procs,omitempty"`
	Spec         ServiceSpec       `cbor:"21,keyasint" json:"spec"`
	RegisteredAt int64             `cbor:"22,keyasint" json:"registered_at"`
	Started      bool              `cbor:"23,keyasint,omitempty" json:"started,omitempty"` // started manually or by references
	ByReferences bool              `cbor:"24,keyasint,omitempty" json:"by_references,omitempty"`
	// Redacted names the parts of Spec left out because the caller is not
	// the owner, an administrator of the service or of the cluster
	// (RedactedEnv, RedactedArgs).
	Redacted []string `cbor:"25,keyasint,omitempty" json:"redacted,omitempty"`
}

// Redact removes what only the service's owner and administrators may
// see: the environment and the arguments of the instances and of the
// pinger. Redacted says what was removed.
func (s *ServiceInfo) Redact() {
	sp := &s.Spec
	if len(sp.Environment) > 0 {
		sp.Environment = nil
		s.Redacted = appendOnce(s.Redacted, RedactedEnv)
	}
	if len(sp.Args) > 0 || len(sp.PingArgs) > 0 || len(sp.JVMArgs) > 0 {
		sp.Args, sp.PingArgs, sp.JVMArgs = nil, nil, nil
		s.Redacted = appendOnce(s.Redacted, RedactedArgs)
	}
}

// ServiceList lists services by id.
type ServiceList struct {
	Services []ServiceInfo `cbor:"1,keyasint" json:"services"`
}

// PingState is what a custom pinger reads on its standard input (JSON)
// before each ping (docs/services.md).
type PingState struct {
	Service      uint64   `cbor:"1,keyasint" json:"service"`
	Endpoint     string   `cbor:"2,keyasint" json:"endpoint"`
	Instances    []int    `cbor:"3,keyasint" json:"instances"`    // all instance ids wanted
	Active       []int    `cbor:"4,keyasint" json:"active"`       // ids whose process runs
	StartedAt    []int64  `cbor:"5,keyasint" json:"started_at"`   // per active id: unix ms
	References   []uint64 `cbor:"6,keyasint" json:"references"`   // work that names the service
	Autostart    bool     `cbor:"7,keyasint" json:"autostart"`    // autostart as registered or modified
	RunFailures  int      `cbor:"8,keyasint" json:"run_failures"` // runtime failures in the window
	MaxInstances int      `cbor:"9,keyasint" json:"max_instances"`
}

// PingAnswer is a pinger's answer, one JSON object on its standard output.
type PingAnswer struct {
	Alive     bool   `cbor:"1,keyasint" json:"alive"`
	Healthy   *bool  `cbor:"2,keyasint,omitempty" json:"healthy,omitempty"` // default: alive
	Info      string `cbor:"3,keyasint,omitempty" json:"info,omitempty"`
	Additions int    `cbor:"4,keyasint,omitempty" json:"additions,omitempty"`
	Deletions []int  `cbor:"5,keyasint,omitempty" json:"deletions,omitempty"`
	Autostart *bool  `cbor:"6,keyasint,omitempty" json:"autostart,omitempty"`
	LastUse   int64  `cbor:"7,keyasint,omitempty" json:"last_use,omitempty"`
}

// PingRunRequest asks an agent to run a service's custom pinger once, as
// the service's owner, in a cgroup capped at MemoryLimit, with State as
// JSON on its standard input, killed after TimeoutMS.
type PingRunRequest struct {
	Service uint64   `cbor:"1,keyasint" json:"service"`
	Path    string   `cbor:"2,keyasint" json:"path"` // service_ping_executable
	Args    []string `cbor:"3,keyasint,omitempty" json:"args,omitempty"`
	User    string   `cbor:"4,keyasint" json:"user"`
	UID     uint32   `cbor:"5,keyasint" json:"uid"`
	GID     uint32   `cbor:"6,keyasint" json:"gid"`
	Groups  []uint32 `cbor:"7,keyasint,omitempty" json:"groups,omitempty"`
	// Env is the pinger's complete environment.
	Env []string `cbor:"8,keyasint,omitempty" json:"env,omitempty"`
	// Dir is the working directory; one missing on the agent's node means
	// "/".
	Dir         string    `cbor:"9,keyasint,omitempty" json:"dir,omitempty"`
	State       PingState `cbor:"10,keyasint" json:"state"`
	TimeoutMS   int64     `cbor:"11,keyasint" json:"timeout_ms"`
	MemoryLimit int64     `cbor:"12,keyasint" json:"memory_limit"` // bytes
	// Umask of the pinger: the service's (its owner's when registered),
	// four octal digits; "" means 0022.
	Umask string `cbor:"13,keyasint,omitempty" json:"umask,omitempty"`
	// Name is what messages call the pinger ("Java pinger CLASS"); ""
	// means Path.
	Name string `cbor:"14,keyasint,omitempty" json:"name,omitempty"`
}

// PingRunReply is the pinger's answer, or in Error why there is none ("pinger
// /x did not answer within 5s", "pinger /x: exited with code 2: <the last
// line of its stderr>", "pinger /x answered "ok", not JSON like ...").
type PingRunReply struct {
	Answer PingAnswer `cbor:"1,keyasint" json:"answer"`
	Error  string     `cbor:"2,keyasint,omitempty" json:"error,omitempty"`
}
