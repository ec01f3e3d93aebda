package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Options configures a simulation.
type Options struct {
	// Nodes is the number of fake nodes (default 1000).
	Nodes int
	// NodesPerHost is how many fake nodes share one libp2p host (default
	// 250).
	NodesPerHost int
	// Duration is the length of each measurement window (idle, then busy;
	// default 10 s).
	Duration time.Duration
	// Heartbeat is each fake node's heartbeat interval (default 1 s).
	Heartbeat time.Duration
	// NodeMemory is each fake node's schedulable memory in bytes (default
	// 32 GiB).
	NodeMemory int64
	// Work is the number of managed reservations submitted after the idle
	// window (default: one per node, which with the default WorkMemory
	// fills the cluster; negative: none).
	Work int
	// WorkMemory is the memory of each managed reservation (default: a
	// whole node's NodeMemory).
	WorkMemory int64
	// NodeGPUs and NodeGPUMemory give each fake node that many GPUs of
	// that many bytes each (--node-gpus 8x80G; none by default).
	NodeGPUs      int
	NodeGPUMemory int64
	// WorkGPUs asks each managed reservation for that many whole GPUs;
	// WorkGPUMemory for a slice of one GPU of that many bytes (at most one
	// of the two; they need NodeGPUs).
	WorkGPUs      int
	WorkGPUMemory int64
	// RunFor ends each fake process this long after it started (0: they
	// run until the simulation ends).
	RunFor time.Duration
	// Submitters is how many submissions are in flight at once (default 16).
	Submitters int
	// SubscribeHeartbeats makes every fake host subscribe to the heartbeat
	// topic, as every agent once did: gossipsub
	// then delivers every heartbeat to every host. Off by default: the
	// fakes then model agents where only head candidates subscribe.
	SubscribeHeartbeats bool
	// NodeTimeout is the head's node timeout (default 10 s, as ducc's).
	NodeTimeout time.Duration
	// MaxHeartbeatsPerSecond is the head's heartbeat intake bound (default
	// 2,000, as ducc's head.max_heartbeats_per_second; negative: the
	// interval never stretches). The fake agents follow the interval the
	// head announces.
	MaxHeartbeatsPerSecond int
	// Heads is the number of head candidates (default 1): the first
	// bootstraps the head group and leads, the others join it as
	// followers, each with its own libp2p host and data directory, all in
	// this process.
	Heads int
	// Failover stops the leading head hard once the work runs (or after
	// the idle window when there is none) and measures the election and
	// what the new head does: time to a new head, nodes it declares down,
	// processes it writes off, heartbeat lag. It needs Heads ≥ 2 (3 if
	// zero) and processes that run until the end (RunFor 0).
	Failover bool
	// Elect is the head group's Raft heartbeat and election timeout
	// (head.election_timeout; 500 ms if zero, as ducc's default).
	Elect time.Duration
	// FakesCommand starts the fake agents in a child process (e.g.
	// {"/usr/bin/duccd", "sim", "--fakes-only"}); nil runs them in this
	// process, and the head's CPU and memory figures then include theirs.
	FakesCommand []string
	// Logger; nil means slog.Default(). component=sim is added.
	Logger *slog.Logger
}

func (o *Options) defaults() error {
	if o.Nodes == 0 {
		o.Nodes = 1000
	}
	if o.NodesPerHost <= 0 {
		o.NodesPerHost = 250
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = time.Second
	}
	if o.NodeMemory <= 0 {
		o.NodeMemory = 32 << 30
	}
	if o.WorkMemory <= 0 {
		o.WorkMemory = o.NodeMemory
	}
	if o.Work == 0 {
		o.Work = o.Nodes
	}
	if o.Work < 0 {
		o.Work = 0
	}
	if o.Submitters <= 0 {
		o.Submitters = 16
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 10 * time.Second
	}
	if o.MaxHeartbeatsPerSecond == 0 {
		o.MaxHeartbeatsPerSecond = 2000
	}
	if o.Heads <= 0 {
		o.Heads = 1
		if o.Failover {
			o.Heads = 3
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("component", "sim")
	if o.Nodes < 1 {
		return fmt.Errorf("sim: --nodes must be at least 1, got %d", o.Nodes)
	}
	if o.Failover && o.Heads < 2 {
		return fmt.Errorf("sim: a failover needs at least 2 heads, got %d", o.Heads)
	}
	if o.Failover && o.RunFor > 0 {
		return errors.New("sim: a failover counts every process that ends as written off: it needs processes that run until the end (no --run-for)")
	}
	if err := o.checkGPUs(); err != nil {
		return err
	}
	if o.WorkMemory > o.NodeMemory {
		return fmt.Errorf("sim: work memory %d exceeds node memory %d: no node could hold it", o.WorkMemory, o.NodeMemory)
	}
	return nil
}

// checkGPUs checks the GPU options against each other.
func (o *Options) checkGPUs() error {
	switch {
	case o.NodeGPUs < 0 || o.WorkGPUs < 0 || o.NodeGPUMemory < 0 || o.WorkGPUMemory < 0:
		return errors.New("sim: GPU counts and sizes cannot be negative")
	case o.NodeGPUs > 0 && o.NodeGPUMemory == 0:
		return errors.New("sim: node GPUs need a memory size (--node-gpus 8x80G)")
	case o.WorkGPUs > 0 && o.WorkGPUMemory > 0:
		return errors.New("sim: work asks for whole GPUs or a slice of one, not both")
	case (o.WorkGPUs > 0 || o.WorkGPUMemory > 0) && o.NodeGPUs == 0:
		return errors.New("sim: GPU work needs nodes with GPUs (--node-gpus)")
	case o.WorkGPUs > o.NodeGPUs:
		return fmt.Errorf("sim: work asks for %d GPUs, nodes have %d: no node could hold it", o.WorkGPUs, o.NodeGPUs)
	case o.WorkGPUMemory > o.NodeGPUMemory:
		return fmt.Errorf("sim: work asks for a %d-byte GPU slice, node GPUs have %d bytes: no GPU could hold it", o.WorkGPUMemory, o.NodeGPUMemory)
	}
	return nil
}

// perNode returns how many pieces of work one node holds.
func (o *Options) perNode() int {
	n := int(o.NodeMemory / o.WorkMemory)
	switch {
	case o.WorkGPUs > 0:
		n = min(n, o.NodeGPUs/o.WorkGPUs)
	case o.WorkGPUMemory > 0:
		n = min(n, o.NodeGPUs*int(o.NodeGPUMemory/o.WorkGPUMemory))
	}
	return n
}

// capacity returns how many pieces of work fit in the cluster.
func (o *Options) capacity() int { return o.Nodes * o.perNode() }

// hosts returns the number of fake libp2p hosts.
func (o *Options) hosts() int { return (o.Nodes + o.NodesPerHost - 1) / o.NodesPerHost }

// Result is what a simulation measured.
type Result struct {
	Nodes int `json:"nodes"`
	// NodeGPUs of NodeGPUMemory bytes each per node; WorkGPUs or
	// WorkGPUMemory per piece of work (0: none).
	NodeGPUs      int     `json:"node_gpus,omitempty"`
	NodeGPUMemory int64   `json:"node_gpu_memory,omitempty"`
	WorkGPUs      int     `json:"work_gpus,omitempty"`
	WorkGPUMemory int64   `json:"work_gpu_memory,omitempty"`
	Heads         int     `json:"heads"`
	FakeHosts     int     `json:"fake_hosts"`
	HeartbeatSec  float64 `json:"heartbeat_seconds"`
	// AnnouncedHeartbeatSec is the heartbeat interval the head announced
	// at the end (it stretches with the cluster), and
	// MaxHeartbeatsPerSecond the bound it stretched for (0: none).
	AnnouncedHeartbeatSec  float64 `json:"announced_heartbeat_seconds"`
	MaxHeartbeatsPerSecond int     `json:"max_heartbeats_per_second"`
	// FakesInProcess is true when the fake agents ran in the head's
	// process: the head figures then include the fakes' cost.
	FakesInProcess bool `json:"fakes_in_process"`
	// SubscribeHeartbeats: the fake hosts subscribed to the heartbeat topic.
	SubscribeHeartbeats bool `json:"subscribe_heartbeats"`
	// JoinSeconds is the time from starting the fakes until the head saw
	// every node up.
	JoinSeconds float64 `json:"join_seconds"`
	// NodesUp is how many nodes the head saw up at the end; NodesUpMin the
	// fewest at any sample after the join.
	NodesUp    int        `json:"nodes_up"`
	NodesUpMin int        `json:"nodes_up_min"`
	Idle       Phase      `json:"idle"`
	Submit     Phase      `json:"submit"`
	Busy       Phase      `json:"busy"`
	Work       WorkResult `json:"work"`
	// Failover is what happened when the leading head was stopped (nil:
	// no failover was run).
	Failover *FailoverResult `json:"failover,omitempty"`
	// HeadPeakRSSMiB is the head process's peak resident memory (VmHWM).
	HeadPeakRSSMiB float64   `json:"head_peak_rss_mib"`
	Fakes          FakeStats `json:"fakes"`
}

// Phase is what the head did during one window.
type Phase struct {
	Seconds float64 `json:"seconds"`
	// HeadCPU is CPU seconds per second of the head process (1.0 = one
	// core busy).
	HeadCPU float64 `json:"head_cpu"`
	// HeadRSSMiB is the head process's resident memory at the end of the
	// window; HeadHeapMiB the Go heap's live bytes after the last GC.
	HeadRSSMiB  float64 `json:"head_rss_mib"`
	HeadHeapMiB float64 `json:"head_heap_mib"`
	Goroutines  int     `json:"goroutines"`
	// Heartbeats per second the head handled (Head.Heartbeat calls), and
	// the fraction of the window its heartbeat loop was busy.
	Heartbeats    float64 `json:"heartbeats_per_second"`
	HeartbeatBusy float64 `json:"heartbeat_busy"`
	// HeartbeatLagP50MS/P99MS: from the fake's send time to the head's
	// handling (same clock).
	HeartbeatLagP50MS float64 `json:"heartbeat_lag_p50_ms"`
	HeartbeatLagP99MS float64 `json:"heartbeat_lag_p99_ms"`
	// Pushes per second of desired state to nodes, and failed pushes.
	Pushes     float64 `json:"pushes_per_second"`
	PushErrors uint64  `json:"push_errors"`
	// Cycles is the number of scheduling cycles, CycleMeanMS their mean
	// duration (Resource Manager only).
	Cycles      uint64  `json:"cycles"`
	CycleMeanMS float64 `json:"cycle_mean_ms"`
}

// WorkResult is what the workload driver measured.
type WorkResult struct {
	Submitted     int     `json:"submitted"`
	SubmitErrors  int     `json:"submit_errors"`
	FirstError    string  `json:"first_error,omitempty"`
	SubmitSeconds float64 `json:"submit_seconds"`
	// Running is how many submitted pieces of work had their process
	// reported Running (the report acknowledged by the head) in time.
	Running int `json:"running"`
	// Latency from the submit call to the process reported Running.
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP99MS float64 `json:"latency_p99_ms"`
	LatencyMaxMS float64 `json:"latency_max_ms"`
	// AllRunningSeconds is from the first submission until the last
	// process was reported Running.
	AllRunningSeconds float64 `json:"all_running_seconds"`
	// HeadRunning is how many of them the head lists as Running at the
	// end of the busy window.
	HeadRunning int `json:"head_running"`
}

// FakeStats is what the fake agents did, and what they cost.
type FakeStats struct {
	CPUSeconds     float64 `json:"cpu_seconds"`
	PeakRSSMiB     float64 `json:"peak_rss_mib"`
	HeartbeatsSent uint64  `json:"heartbeats_sent"`
	PublishErrors  uint64  `json:"publish_errors"`
	Pushes         uint64  `json:"pushes_received"`
	Reports        uint64  `json:"reports_sent"`
	ReportErrors   uint64  `json:"report_errors"`
	Started        uint64  `json:"procs_started"`
	Ended          uint64  `json:"procs_ended"`
}

// FailoverResult is what a failover measured, from the moment the leading
// head was stopped.
type FailoverResult struct {
	// OldHead is the node name of the head that was stopped and NewHead
	// the one that took over ("" if none did).
	OldHead string `json:"old_head"`
	NewHead string `json:"new_head,omitempty"`
	// NewHeadSeconds is from the stop until another member ran the head
	// (elected, its barrier applied); -1 if none did in time.
	NewHeadSeconds float64 `json:"new_head_seconds"`
	// Elections counts further changes of leader while watched (the
	// figures below are of whichever member led).
	Elections int `json:"elections,omitempty"`
	// AllUpSeconds is from the stop until the new head saw every node up
	// (each had sent it a heartbeat); -1 if it never did.
	AllUpSeconds float64 `json:"all_up_seconds"`
	// WatchedSeconds is how long the new head was watched after it took
	// over: past its failover grace and a node timeout.
	WatchedSeconds float64 `json:"watched_seconds"`
	// NodesDown is how many nodes the new head listed Down at any sample
	// (every 200 ms) while watched; NodesUpMin the fewest it listed Up
	// once all were up.
	NodesDown  int `json:"nodes_down"`
	NodesUpMin int `json:"nodes_up_min"`
	// WrittenOff is how much of the submitted work ended while watched
	// (every process runs until the end, so a process that ended was
	// written off); HeadRunning how many the new head lists running at
	// the end; Stopped how many processes the fakes were told to stop
	// in the whole run.
	WrittenOff  int    `json:"written_off"`
	HeadRunning int    `json:"head_running"`
	Stopped     uint64 `json:"procs_stopped"`
	// Heartbeat lag at the new head while watched, and heartbeats it
	// handled per second.
	HeartbeatLagP50MS float64 `json:"heartbeat_lag_p50_ms"`
	HeartbeatLagP99MS float64 `json:"heartbeat_lag_p99_ms"`
	HeartbeatLagMaxMS float64 `json:"heartbeat_lag_max_ms"`
	Heartbeats        float64 `json:"heartbeats_per_second"`
	HeadCPU           float64 `json:"head_cpu"`
}

// Held reports whether the failover lost nothing: a new head took over,
// declared no node down and wrote off no process while watched. (What
// the old head lost before it was stopped shows in Result.Work and
// Stopped.)
func (f *FailoverResult) Held() bool {
	return f.NewHeadSeconds >= 0 && f.NodesDown == 0 && f.WrittenOff == 0
}
