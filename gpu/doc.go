// Package gpu finds a node's GPUs: through NVML (libnvidia-ml.so.1, loaded
// at run time by github.com/NVIDIA/go-nvml) or from a static declaration
// in the agent's config (node.gpus) for hosts without NVML and for tests.
//
//	inv := gpu.DiscoverHost()   // or gpu.Discover(lib) with any nvml.Interface
//	inv.Log(logger)             // one line: "no NVML library", "NVML found, 0 GPUs", ...
//	devs := inv.Schedulable()   // whole GPUs and MIG instances, as devices
//
// Discovery reports each GPU's UUID, model, memory, index, minor number and
// MIG mode; with MIG enabled, each MIG instance is a device of its own (its
// UUID, its memory, its parent's UUID) and the parent is not schedulable.
// A host without the library or without GPUs has none, which the
// Inventory says in one typed result (Status) rather than as an error.
// Session.Usage reads, per device, the utilization and memory in use, and
// each process's memory and SM utilization, for the watchdog of GPU memory
// slices and the heartbeat; a utilization NVML does not give (MIG
// instances, older GPUs) is Unknown, never 0.
//
// Only duccd may link this package: NVML needs cgo. A build without cgo
// has the declaration and the types, and DiscoverHost, which reports no
// NVML library, and OpenHost, which has no reader; Discover, Open and
// Session need cgo. The agent discovers its node's GPUs at start (OpenHost,
// or Declare for node.gpus) and its GPU-slice watchdog reads memory
// through the MemoryReader OpenHost returns (docs/security.md, "GPU
// slices").
package gpu
