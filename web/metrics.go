package web

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// raftStates are the values of ducc_raft_state's state label.
var raftStates = []string{"Leader", "Follower", "Candidate", "Shutdown"}

// HeadMetrics are the head's own series. A nil *HeadMetrics is valid and
// records nothing, so callers need no checks.
//
// They are of two sorts. The series of the head's own work (cycle time,
// applies, commits, preemptions, items done) are counted by the agent
// whose head did the work, so each event is counted once and
// sum(rate(...)) across agents is right. The cluster-wide series (work,
// classes, nodes, services, item and completion totals; see Cluster) are
// exported only by the agent that is the head at the time of the scrape
// (ServeCluster), so sum() does not count them once per agent.
type HeadMetrics struct {
	cycle         prometheus.Histogram
	apply         prometheus.Histogram
	commit        prometheus.Histogram
	commitCmds    prometheus.Histogram
	preempted     prometheus.Counter
	itemsDone     prometheus.Counter
	queueWait     prometheus.Histogram
	raftState     *prometheus.GaugeVec
	leaderChanges prometheus.Counter
	cluster       *clusterSeries

	cycles     atomic.Uint64 // cycles observed (Cycles)
	cycleNanos atomic.Int64  // their total time
}

// NewHeadMetrics creates the head's metrics and registers them on reg
// (nil: unregistered, still usable).
func NewHeadMetrics(reg prometheus.Registerer) *HeadMetrics {
	m := &HeadMetrics{
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ducc_head_rm_cycle_seconds", Help: "Time the Resource Manager took for one scheduling cycle.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9), // 100µs .. 6.5s
		}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ducc_head_raft_apply_seconds", Help: "Latency of Raft applies issued by the head (commit and FSM apply).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
		}),
		preempted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ducc_head_preemptions_total", Help: "Processes the scheduler preempted or evicted.",
		}),
		itemsDone: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ducc_head_work_items_done_total", Help: "Work items finished (rate() gives items/s).",
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ducc_head_queue_wait_seconds", Help: "Time from submission to the first process of a piece of work starting.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10), // 5ms .. 22min
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ducc_raft_commit_seconds", Help: "Time from handing one log entry of the head's group commit to Raft to its being committed and applied.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
		}),
		commitCmds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ducc_raft_commit_commands", Help: "Commands per log entry of the head's group commit (callers share entries).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 6), // 1 .. 1024
		}),
		raftState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ducc_raft_state", Help: "1 for this agent's current Raft state (Leader, Follower, Candidate, Shutdown).",
		}, []string{"state"}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ducc_raft_leader_changes_total", Help: "Leaders this member of the head group saw elected (each member counts them; use max across members).",
		}),
		cluster: newClusterSeries(),
	}
	for _, s := range raftStates {
		m.raftState.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.cycle, m.apply, m.commit, m.commitCmds, m.preempted, m.itemsDone, m.queueWait, m.raftState,
			m.leaderChanges, m.cluster)
	}
	return m
}

// ObserveCommit records one log entry of the group commit: its commands
// and the time from Raft apply to its result.
func (m *HeadMetrics) ObserveCommit(commands int, d time.Duration) {
	if m != nil {
		m.commit.Observe(d.Seconds())
		m.commitCmds.Observe(float64(commands))
	}
}

// LeaderChanged counts a new leader this member saw elected.
func (m *HeadMetrics) LeaderChanged() {
	if m != nil {
		m.leaderChanges.Inc()
	}
}

// ServeCluster makes this agent export the cluster-wide series, read
// from view at each scrape, until the returned stop is called. The head
// calls it for its term; a later ServeCluster replaces an earlier one,
// whose stop then does nothing.
func (m *HeadMetrics) ServeCluster(view func() Cluster) (stop func()) {
	if m == nil {
		return func() {}
	}
	return m.cluster.serve(view)
}

// ObserveCycle records one scheduling cycle.
func (m *HeadMetrics) ObserveCycle(d time.Duration) {
	if m != nil {
		m.cycle.Observe(d.Seconds())
		m.cycles.Add(1)
		m.cycleNanos.Add(int64(d))
	}
}

// Cycles returns how many scheduling cycles were observed and their total
// time, without gathering the registry (which walks every series, per node
// and per GPU: ducc sim reads this between its windows).
func (m *HeadMetrics) Cycles() (n uint64, total time.Duration) {
	if m == nil {
		return 0, 0
	}
	return m.cycles.Load(), time.Duration(m.cycleNanos.Load())
}

// ObserveApply records one Raft apply.
func (m *HeadMetrics) ObserveApply(d time.Duration) {
	if m != nil {
		m.apply.Observe(d.Seconds())
	}
}

// Preempted counts n processes preempted or evicted.
func (m *HeadMetrics) Preempted(n int) {
	if m != nil && n > 0 {
		m.preempted.Add(float64(n))
	}
}

// ItemsDone counts n finished work items.
func (m *HeadMetrics) ItemsDone(n int) {
	if m != nil && n > 0 {
		m.itemsDone.Add(float64(n))
	}
}

// QueueWait records how long a piece of work waited for its first process.
func (m *HeadMetrics) QueueWait(d time.Duration) {
	if m != nil {
		m.queueWait.Observe(d.Seconds())
	}
}

// SetRaftState sets the current Raft state (raft.RaftState.String()).
func (m *HeadMetrics) SetRaftState(state string) {
	if m == nil {
		return
	}
	m.raftState.Reset()
	for _, s := range raftStates {
		m.raftState.WithLabelValues(s).Set(0)
	}
	m.raftState.WithLabelValues(state).Set(1)
}

// AgentMetrics are a node agent's series. A nil *AgentMetrics is valid
// and records nothing.
type AgentMetrics struct {
	started     prometheus.Counter
	ended       prometheus.Counter
	oom         prometheus.Counter
	heartbeat   prometheus.Histogram
	procs       prometheus.Gauge
	memTotal    prometheus.Gauge
	memSchedule prometheus.Gauge
	memUsed     prometheus.Gauge
}

// NewAgentMetrics creates an agent's metrics and registers them on reg
// (nil: unregistered, still usable).
func NewAgentMetrics(reg prometheus.Registerer) *AgentMetrics {
	m := &AgentMetrics{
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ducc_agent_processes_started_total", Help: "Processes this agent started.",
		}),
		ended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ducc_agent_processes_ended_total", Help: "Processes of this agent that ended, for any reason.",
		}),
		oom: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ducc_agent_oom_kills_total", Help: "Processes killed for exceeding their cgroup memory limit.",
		}),
		heartbeat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ducc_agent_heartbeat_lag_seconds", Help: "Delay of each heartbeat behind its schedule; _count counts heartbeats sent.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9), // 0.5ms .. 33s
		}),
		procs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ducc_agent_processes", Help: "Processes this agent manages now.",
		}),
		memTotal: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ducc_node_memory_total_bytes", Help: "This node's memory.",
		}),
		memSchedule: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ducc_node_memory_schedulable_bytes", Help: "This node's memory the scheduler may hand out: total less memory_reserved, or the memory the agent declares.",
		}),
		memUsed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ducc_node_memory_used_bytes", Help: "This node's memory in use.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.started, m.ended, m.oom, m.heartbeat, m.procs, m.memTotal, m.memSchedule, m.memUsed)
	}
	return m
}

// ProcStarted counts a started process.
func (m *AgentMetrics) ProcStarted() {
	if m != nil {
		m.started.Inc()
	}
}

// ProcEnded counts an ended process and the OOM kills in its tree (the
// process itself, its children).
func (m *AgentMetrics) ProcEnded(oomKills uint64) {
	if m == nil {
		return
	}
	m.ended.Inc()
	m.oom.Add(float64(oomKills))
}

// HeartbeatSent records a heartbeat sent lag behind its schedule.
func (m *AgentMetrics) HeartbeatSent(lag time.Duration) {
	if m != nil {
		m.heartbeat.Observe(max(lag, 0).Seconds())
	}
}

// SetProcs sets the number of processes this agent manages.
func (m *AgentMetrics) SetProcs(n int) {
	if m != nil {
		m.procs.Set(float64(n))
	}
}

// SetNode sets the node's memory figures in bytes.
func (m *AgentMetrics) SetNode(total, schedulable, used int64) {
	if m == nil {
		return
	}
	m.memTotal.Set(float64(total))
	m.memSchedule.Set(float64(schedulable))
	m.memUsed.Set(float64(used))
}
