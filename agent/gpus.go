package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/ducc-project/ducc/gpu"
	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// The environment variables that name a process's GPUs (CUDA and the
// NVIDIA container runtime read them).
const (
	envCUDAVisible   = "CUDA_VISIBLE_DEVICES"
	envNVIDIAVisible = "NVIDIA_VISIBLE_DEVICES"
)

// gpuNode is what the agent knows of its node's GPUs: the inventory it
// found at start and reports in heartbeats, the reader of its processes'
// GPU memory, and the watch of the processes that hold GPUs (their memory
// and peak, and the slice watchdog). A nil *gpuNode is a node without
// GPUs.
type gpuNode struct {
	inv    gpu.Inventory
	devs   []wire.GPUDevice // the schedulable devices, in the inventory's order
	minors map[string]int   // device UUID → /dev/nvidia<minor>
	reader gpu.MemoryReader // nil: GPU memory cannot be read here
	log    *slog.Logger

	mu      sync.Mutex
	procs   map[string]*gpuProc // by process id
	use     []wire.GPUUse       // what each device did at the last read; nil without one
	readErr string              // the last read error logged, to log each once
}

// gpuProc is one process that holds GPUs.
type gpuProc struct {
	gpus  []string
	slice int64 // bytes; 0: whole devices
	used  int64 // GPU memory of its tree at the last read
	peak  int64
	util  *int // its tree's SM utilization at the last read; nil: unknown
	// exceeded is the Reason it was stopped with for using more than its
	// slice; "" while it has not.
	exceeded string
}

// discoverGPUs finds the node's GPUs: the config's node.gpus when it has
// one, else NVML (gpu.OpenHost). It logs what it found once. With
// declared GPUs it still opens NVML, if there is one, to read GPU memory;
// where there is none it says once that slices are not enforced.
func discoverGPUs(cfg *Config, logger *slog.Logger, openHost func() (gpu.MemoryReader, gpu.Inventory)) (*gpuNode, error) {
	reader, found := openHost()
	inv := found
	if cfg.GPUs != nil {
		var err error
		if inv, err = gpu.Declare(cfg.GPUs); err != nil {
			if reader != nil {
				_ = reader.Close()
			}
			return nil, fmt.Errorf("node.gpus: %w", err)
		}
	}
	g := newGPUNode(inv, reader, logger)
	inv.Log(logger)
	if cfg.GPUs != nil && len(g.devs) > 0 && reader == nil {
		g.log.Warn("GPU memory cannot be read on this node (" + found.String() + "): processes report no GPU memory and GPU memory slices are NOT enforced")
	}
	return g, nil
}

// newGPUNode makes the GPU state of a node with inventory inv.
func newGPUNode(inv gpu.Inventory, reader gpu.MemoryReader, logger *slog.Logger) *gpuNode {
	g := &gpuNode{inv: inv, reader: reader, minors: map[string]int{}, procs: map[string]*gpuProc{},
		log: logger.With("component", "gpu")}
	for _, d := range inv.Schedulable() {
		g.devs = append(g.devs, wire.GPUDevice{UUID: d.UUID, Model: d.Model, Memory: d.Memory, Minor: d.Minor, Parent: d.Parent})
		g.minors[d.UUID] = d.Minor
	}
	return g
}

// close releases the NVML library.
func (g *gpuNode) close() {
	if g != nil && g.reader != nil {
		if err := g.reader.Close(); err != nil {
			g.log.Debug("closing NVML", "err", err)
		}
	}
}

// has reports whether the node has schedulable GPUs.
func (g *gpuNode) has() bool { return g != nil && len(g.devs) > 0 }

// fillHeartbeat puts the inventory into a heartbeat, what each device did
// at the last read (GPUUse, where NVML reads them), and the GPU memory and
// utilization of each process that holds GPUs.
func (g *gpuNode) fillHeartbeat(hb *wire.Heartbeat) {
	if g == nil {
		return
	}
	hb.GPUs, hb.GPUDiscovery = g.devs, g.inv.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	hb.GPUUse = g.use
	for i := range hb.Procs {
		if p, ok := g.procs[hb.Procs[i].ID]; ok && !hb.Procs[i].Ended() {
			hb.Procs[i].GPUMemory, hb.Procs[i].GPUMemoryPeak, hb.Procs[i].GPUUtil = p.used, p.peak, p.util
		}
	}
}

// gpuEnv returns env with CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES
// set to the process's GPUs, comma-joined: set and empty for a process
// without GPUs on a node with GPUs (so that it sees none), and env as it
// is on a node without GPUs. Values of either name in env give way. A nil
// env (the shim's minimal environment, proc.Spec.Env) becomes that
// minimal environment plus the two.
func (g *gpuNode) gpuEnv(env []string, user string, gpus []string) []string {
	if !g.has() && len(gpus) == 0 {
		return env
	}
	if env == nil {
		env = proc.MinimalEnv(user)
	}
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if strings.HasPrefix(kv, envCUDAVisible+"=") || strings.HasPrefix(kv, envNVIDIAVisible+"=") {
			continue
		}
		out = append(out, kv)
	}
	v := strings.Join(gpus, ",")
	return append(out, envCUDAVisible+"="+v, envNVIDIAVisible+"="+v)
}

// fence is the GPU fence of a process that may open the GPUs of these
// minors: on a node with GPUs every process is fenced, to its own GPUs or,
// without any, to none (docs/security.md, "GPU fencing"); nil on a node
// without GPUs, where fencing would cost a start for nothing.
func (g *gpuNode) fence(minors []int) *proc.GPUFence {
	if !g.has() {
		return nil
	}
	return &proc.GPUFence{Allowed: minors}
}

// gpuMinors returns the /dev/nvidia minors of the devices of spec, sorted
// and each once (MIG instances share their GPU's): the character devices
// proc's device fencing lets the process open (with nvidiactl and
// nvidia-uvm). A device this node does not have is an error: the head's
// view of the node is stale, and the process must not run on other GPUs.
func (g *gpuNode) gpuMinors(spec wire.ProcSpec) ([]int, error) {
	var out []int
	for _, uuid := range spec.GPUs {
		m, ok := g.minor(uuid)
		if !ok {
			return nil, fmt.Errorf("GPU %s is not on this node (it has %s); the head will place the process again", uuid, g.inventoryLine())
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (g *gpuNode) minor(uuid string) (int, bool) {
	if g == nil {
		return 0, false
	}
	m, ok := g.minors[uuid]
	return m, ok
}

// inventoryLine names the node's GPUs for an error.
func (g *gpuNode) inventoryLine() string {
	if !g.has() {
		return "no GPUs"
	}
	uuids := make([]string, len(g.devs))
	for i, d := range g.devs {
		uuids[i] = d.UUID
	}
	return strings.Join(uuids, ", ")
}

// track watches a process that holds GPUs (a start, or a process the
// desired state names again: one re-adopted after a restart). What was
// measured of it is kept.
func (g *gpuNode) track(spec wire.ProcSpec) {
	if g == nil || len(spec.GPUs) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.procs[spec.ID]; ok {
		p.gpus, p.slice = spec.GPUs, spec.GPUSlice
		return
	}
	g.procs[spec.ID] = &gpuProc{gpus: spec.GPUs, slice: spec.GPUSlice}
}

// ended stops watching a process and says what its end report carries:
// its peak GPU memory, and the reason it was stopped for its slice ("" if
// it was not).
func (g *gpuNode) ended(id string) (peak int64, exceeded string, tracked bool) {
	if g == nil {
		return 0, "", false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.procs[id]
	if !ok {
		return 0, "", false
	}
	delete(g.procs, id)
	return p.peak, p.exceeded, true
}

// markEnded sets what the watch knows of an ended process on its report:
// its peak GPU memory, and, when the watchdog stopped it, the slice
// message, the flag and wire.CodeGPUSlice as its exit code.
func (g *gpuNode) markEnded(ps *wire.ProcStatus) {
	peak, exceeded, ok := g.ended(ps.ID)
	if !ok {
		return
	}
	ps.GPUMemoryPeak = peak
	if exceeded != "" {
		ps.GPUSliceExceeded, ps.Reason, ps.ExitCode = true, exceeded, wire.CodeGPUSlice
	}
}

// sliceStop is a process the watchdog stops for its slice.
type sliceStop struct {
	id, reason string
}

// poll reads the node's GPUs through NVML, once: what each device does
// (kept for the heartbeat's GPUUse), and the GPU memory and SM
// utilization of every watched process's tree (pids lists a process's
// pids; ok false: the process is gone or unknown, and is no longer
// watched). It records each process's use and peak, and returns the
// processes over their slices, each once. Without a reader (no NVML) it
// reads nothing.
func (g *gpuNode) poll(pids func(id string) (pids []int, ok bool)) []sliceStop {
	if g == nil || g.reader == nil {
		return nil
	}
	u, err := g.reader.Usage()
	if err != nil {
		g.mu.Lock()
		first := err.Error() != g.readErr
		g.readErr, g.use = err.Error(), nil
		g.mu.Unlock()
		if first {
			g.log.Warn("cannot read the GPU memory of processes; GPU memory slices are not enforced until it can", "err", err)
		}
		return nil
	}
	use := g.deviceUse(u)
	g.mu.Lock()
	g.use, g.readErr = use, ""
	ids := make([]string, 0, len(g.procs))
	for id := range g.procs {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	// The pid → memory of every device, summed: a process is held to its
	// slice on every device it can reach.
	byPID := map[int]int64{}
	devs := make(map[string]gpu.DeviceUse, len(u.Devices))
	for _, d := range u.Devices {
		devs[d.UUID] = d
		for pid, b := range d.Procs {
			byPID[pid] += b
		}
	}
	slices.Sort(ids)
	var stops []sliceStop
	for _, id := range ids {
		ps, ok := pids(id)
		var used int64
		for _, pid := range ps {
			used += byPID[pid]
		}
		g.mu.Lock()
		p := g.procs[id]
		switch {
		case p == nil:
		case !ok:
			delete(g.procs, id)
		default:
			p.used = used
			p.peak = max(p.peak, used)
			p.util = procUtil(devs, p.gpus, ps)
			if p.slice > 0 && used > p.slice && p.exceeded == "" {
				p.exceeded = fmt.Sprintf("GPU memory slice exceeded: used %s of %s", units.FormatSize(used), units.FormatSize(p.slice))
				stops = append(stops, sliceStop{id: id, reason: p.exceeded})
			}
		}
		g.mu.Unlock()
	}
	return stops
}

// deviceUse is the heartbeat's GPUUse of a read: the node's devices NVML
// read, in the inventory's order (a declared device NVML does not know
// has none).
func (g *gpuNode) deviceUse(u gpu.Usage) []wire.GPUUse {
	var out []wire.GPUUse
	for _, dev := range g.devs {
		for _, d := range u.Devices {
			if d.UUID != dev.UUID {
				continue
			}
			w := wire.GPUUse{UUID: d.UUID, MemoryUsed: d.MemoryUsed}
			if d.Util != gpu.Unknown {
				w.Util = wire.Percent(d.Util)
			}
			out = append(out, w)
			break
		}
	}
	return out
}

// procUtil is the SM utilization of the processes pids on their GPUs, the
// mean over the GPUs where NVML gives it; nil where it gives it on none.
func procUtil(devs map[string]gpu.DeviceUse, gpus []string, pids []int) *int {
	sum, n := 0, 0
	for _, uuid := range gpus {
		if v, ok := devs[uuid].ProcUtil(pids); ok {
			sum += v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return wire.Percent(sum / n)
}

// watchGPUs reads the node's GPUs once (each heartbeat, on the heartbeat
// loop's ticks, for the heartbeat's figures) and runs the GPU-slice
// watchdog: a process over its slice is killed at once, through the
// agent's stop, and reported with the slice message.
func (a *Agent) watchGPUs(ctx context.Context) {
	for _, s := range a.gpus.poll(a.procPIDs) {
		a.log.Warn("stopping a process over its GPU memory slice", "proc", s.id, "why", s.reason)
		a.stop(ctx, s.id, 0, s.reason)
	}
}

// procPIDs lists the pids of a process's tree: those of its cgroup, or
// its main process when there is no cgroup. ok is false for a process
// that is unknown or has ended.
func (a *Agent) procPIDs(id string) ([]int, bool) {
	st, ok := a.procs.Status(id)
	if !ok || st.State.Ended() {
		return nil, false
	}
	if a.cg != nil && a.cg.Enabled() {
		if g, err := a.cg.Load(id); err == nil {
			if pids, err := g.Procs(); err == nil && len(pids) > 0 {
				return pids, true
			}
		}
	}
	if st.PID > 0 {
		return []int{st.PID}, true
	}
	return nil, true
}

// gpuDevicesLine is a process's devices for the log.
func gpuDevicesLine(spec wire.ProcSpec) string {
	if len(spec.GPUs) == 0 {
		return ""
	}
	s := strings.Join(spec.GPUs, ",")
	if spec.GPUSlice > 0 {
		s += " (slice " + units.FormatSize(spec.GPUSlice) + ")"
	}
	return s
}
