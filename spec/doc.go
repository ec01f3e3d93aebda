// Package spec owns what users write to ask for work: job specs, service
// registrations, managed reservations (`ducc run`) and reservations
// (`ducc reserve`).
//
// One key table (keys.go) lists every key with its YAML and properties
// name, its type, its CLI flag and help text, its default, its checks and
// whether `ducc services modify` may change it. Everything else is driven
// by the table:
//
//   - ParseFile, ParseYAML and ParseProperties read spec files (YAML, or
//     DUCC-style Java properties with continuations and ${VAR}) into a Raw
//     spec, strictly: unknown keys are errors that name the right key;
//   - AddFlags and FlagValues make and read the CLI's flags;
//   - BuildJob, BuildService, BuildRun and BuildReserve interpret a Raw
//     spec into the wire requests;
//   - JobDefaults and ServiceDefaults fill what was left out;
//   - ValidateJob, ValidateService, ValidateRun and ValidateReserve refuse
//     what could never work, without looking at the cluster (classes, node
//     sizes and ACLs are the head's business);
//   - CheckModify and Merge are `ducc services modify`.
//
// The UIMA keys (uima.go: driver_descriptor_CR, process_descriptor_*,
// classpath, jvm, the JVM options) are turned by BuildJob into a stream
// job whose process_executable and driver_executable are JVMs running
// ducc-uima.jar (java/ in the repository; docs/jobs.md, "UIMA jobs").
//
// The Java pinger keys (pinger.go: service_ping_class, _classpath,
// _jvm_args, _dolog) are checked here; CheckPingClasspath looks for the
// class in its class path on the registering node, ReadRegisteredPinger
// reads an administrator's registered pinger (DUCC's service_monitors),
// and FindPingerPaths finds the pinger jars (docs/services.md, "Java
// pingers").
//
// The UIMA-AS service keys (uimaas.go: process_DD, classpath,
// process_jvm_args, jvm) are turned by BuildService into instances that
// are JVMs running ducc-uima.jar's ServiceMain on the deployment
// descriptor; BuildService reads the DD, as DUCC's CLI does, to record the
// endpoint it declares, which the head compares with the registered one
// once it has resolved ${DefaultBrokerURL} (ResolveServiceBroker).
//
// The GPU keys (gpu.go: process_gpus, process_gpu_memory,
// process_gpu_model) are checked together as well as one by one: whole
// GPUs or a slice, not both, and a model only with one of them; the
// Build functions name the flags typed, the Validate functions the keys.
//
// Adding a key means adding one entry to the table (and its field to the
// wire type). The package is pure apart from ParseFile reading a file and
// the environment, UIMAPaths (called by BuildJob for UIMA jobs only)
// and FindPingerPaths looking for ducc's jars beside the running binary,
// BuildService reading a UIMA-AS service's deployment descriptor, and
// CheckPingClasspath and ReadRegisteredPinger reading the files they are
// given; it imports wire and units.
package spec
