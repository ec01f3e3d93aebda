package web

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducc-project/ducc/wire"
)

// Cluster is the cluster as the head sees it at one scrape: the source of
// the cluster-wide series, which only the agent that is the head exports
// (HeadMetrics.ServeCluster). Label values come from bounded sets: work
// states and kinds, configured classes, the reason codes below, node
// names, service states and endpoints, completion reasons, GPU UUIDs and
// models.
type Cluster struct {
	// At is when the view was taken; heartbeat ages are measured from it.
	At        time.Time
	RaftTerm  uint64
	RaftIndex uint64
	// Work counts active (not ended) work by state and kind.
	Work []WorkCount
	// Pending counts active work with fewer processes than it wants, by
	// class and reason code (Reason* constants).
	Pending  []PendingCount
	Classes  []wire.ClassInfo
	Nodes    []wire.NodeInfo
	Services []ServiceSample
	// Items and Completed count events since the head's process started
	// (counters).
	Items     ItemTotals
	Completed []CompletedCount
	// ClassGPUs are the GPUs the live processes of each class hold (a
	// slice as its fraction of its device), for classes that hold any;
	// the GPUs of each node, allocated and used, are in Nodes.
	ClassGPUs []ClassGPUs
}

// ClassGPUs is the GPUs the processes of one class hold.
type ClassGPUs struct {
	Class string
	GPUs  float64
}

// WorkCount is a number of pieces of work in one state of one kind.
type WorkCount struct {
	State string
	Kind  wire.WorkKind
	N     int
}

// PendingCount is a number of pieces of work of one class that wait for
// one reason.
type PendingCount struct {
	Class  string
	Reason string
	N      int
}

// ServiceSample is one registered service.
type ServiceSample struct {
	Endpoint string
	State    string // wire.SvcState*
	Running  int    // instances running
	Healthy  bool   // the last ping said healthy
}

// ItemTotals count work item events.
type ItemTotals struct {
	Failed    uint64 // failed for good
	Retried   uint64 // failed attempts tried again
	Preempted uint64 // taken back from a process that ended before answering them
}

// CompletedCount is a number of pieces of work of one kind that ended for
// one reason (a completion reason, docs/jobs.md).
type CompletedCount struct {
	Kind   wire.WorkKind
	Reason string
	N      uint64
}

// clusterSeries exports a Cluster while the head serves one.
type clusterSeries struct {
	mu   sync.Mutex
	view func() Cluster
	gen  uint64

	work, nodes, term, index                      *prometheus.Desc
	pending                                       *prometheus.Desc
	demand, fairShare, allocated                  *prometheus.Desc
	hbAge, shares, sharesUsed                     *prometheus.Desc
	services, svcRunning, svcHealthy              *prometheus.Desc
	failed, retried, preempted, ended             *prometheus.Desc
	classGPUs, gpuMem, gpuAlloc, gpuUsed, gpuUtil *prometheus.Desc
}

func newClusterSeries() *clusterSeries {
	d := prometheus.NewDesc
	return &clusterSeries{
		work:       d("ducc_work", "Active work (not ended) by state and kind.", []string{"state", "kind"}, nil),
		nodes:      d("ducc_nodes", "Nodes by state.", []string{"state"}, nil),
		term:       d("ducc_raft_term", "The head's current Raft term.", nil, nil),
		index:      d("ducc_raft_applied_index", "The head's last applied Raft index.", nil, nil),
		pending:    d("ducc_work_pending", "Active work with fewer processes than it wants, by class and reason code.", []string{"class", "reason"}, nil),
		demand:     d("ducc_class_demand_bytes", "Memory the work of a class wants (processes wanted × their size).", []string{"class"}, nil),
		fairShare:  d("ducc_class_fair_share_bytes", "Memory the fair share computation gave a class.", []string{"class"}, nil),
		allocated:  d("ducc_class_allocated_bytes", "Memory the processes of a class hold.", []string{"class"}, nil),
		hbAge:      d("ducc_node_heartbeat_age_seconds", "Time since the head last heard from a node.", []string{"node"}, nil),
		shares:     d("ducc_node_shares", "Shares (quanta of schedulable memory) of a node, as the head sees it.", []string{"node"}, nil),
		sharesUsed: d("ducc_node_shares_used", "Shares of a node held by processes, as the head sees it.", []string{"node"}, nil),
		services:   d("ducc_services", "Registered services by state.", []string{"state"}, nil),
		svcRunning: d("ducc_service_instances", "Running instances of a service.", []string{"endpoint"}, nil),
		svcHealthy: d("ducc_service_healthy", "1 if the last ping of a service said it is healthy.", []string{"endpoint"}, nil),
		failed:     d("ducc_work_items_failed_total", "Work items that failed for good (their retries used up).", nil, nil),
		retried:    d("ducc_work_items_retried_total", "Failed work item attempts that were tried again.", nil, nil),
		preempted:  d("ducc_work_items_preempted_total", "Work items taken back from a process that ended before answering them (preempted, stopped, crashed, or on a node declared down) and queued again.", nil, nil),
		ended:      d("ducc_work_completed_total", "Work that ended, by kind and completion reason.", []string{"kind", "reason"}, nil),
		classGPUs:  d("ducc_class_gpus_allocated", "GPUs the processes of a class hold (a GPU memory slice as its fraction of the device).", []string{"class"}, nil),
		gpuMem:     d("ducc_gpu_memory_bytes", "Memory of a GPU (or MIG instance) of a node.", []string{"node", "uuid", "model"}, nil),
		gpuAlloc:   d("ducc_gpu_memory_allocated_bytes", "GPU memory the scheduler has given out: the whole device to a process that holds it whole, else the sum of the slices on it.", []string{"node", "uuid", "model"}, nil),
		gpuUsed:    d("ducc_gpu_memory_used_bytes", "GPU memory in use on a GPU, where the agent can read it (NVML); 0 otherwise.", []string{"node", "uuid", "model"}, nil),
		gpuUtil:    d("ducc_gpu_utilization_ratio", "Fraction of the last sample period in which a kernel ran on a GPU (0..1), as NVML reports it; only GPUs whose figure NVML gives.", []string{"node", "uuid", "model"}, nil),
	}
}

// serve exports view until the returned stop is called.
func (c *clusterSeries) serve(view func() Cluster) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	gen := c.gen
	c.view = view
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.gen == gen {
			c.view = nil
		}
	}
}

// Describe implements prometheus.Collector.
func (c *clusterSeries) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.work, c.nodes, c.term, c.index, c.pending, c.demand, c.fairShare, c.allocated,
		c.hbAge, c.shares, c.sharesUsed, c.services, c.svcRunning, c.svcHealthy, c.failed, c.retried, c.preempted, c.ended,
		c.classGPUs, c.gpuMem, c.gpuAlloc, c.gpuUsed, c.gpuUtil} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: nothing unless this agent's
// head serves a view.
func (c *clusterSeries) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	view := c.view
	c.mu.Unlock()
	if view == nil {
		return
	}
	v := view()
	gauge := func(d *prometheus.Desc, x float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, x, labels...)
	}
	counter := func(d *prometheus.Desc, x uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(x), labels...)
	}
	gauge(c.term, float64(v.RaftTerm))
	gauge(c.index, float64(v.RaftIndex))
	type workKey struct {
		state string
		kind  wire.WorkKind
	}
	work := map[workKey]int{}
	for _, w := range v.Work {
		work[workKey{w.State, w.Kind}] += w.N
	}
	for k, n := range work {
		gauge(c.work, float64(n), k.state, string(k.kind))
	}
	pending := map[[2]string]int{}
	for _, p := range v.Pending {
		pending[[2]string{p.Class, p.Reason}] += p.N
	}
	for k, n := range pending {
		gauge(c.pending, float64(n), k[0], k[1])
	}
	classes := map[string]bool{}
	for _, cl := range v.Classes {
		if classes[cl.Name] {
			continue
		}
		classes[cl.Name] = true
		gauge(c.demand, float64(cl.Demand), cl.Name)
		gauge(c.fairShare, float64(cl.FairShare), cl.Name)
		gauge(c.allocated, float64(cl.Allocated), cl.Name)
	}
	byState := map[string]int{}
	seen := map[string]bool{}
	for _, n := range v.Nodes {
		byState[n.State]++
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		if n.LastHeartbeat > 0 {
			gauge(c.hbAge, max(v.At.Sub(time.UnixMilli(n.LastHeartbeat)), 0).Seconds(), n.Name)
		}
		gauge(c.shares, float64(n.Shares), n.Name)
		gauge(c.sharesUsed, float64(n.SharesUsed), n.Name)
		// A UUID twice on one node (a bad node.gpus) would fail the
		// whole scrape: the first is kept.
		gpus := map[string]bool{}
		for _, g := range n.GPUs {
			if gpus[g.UUID] {
				continue
			}
			gpus[g.UUID] = true
			gauge(c.gpuMem, float64(g.Memory), n.Name, g.UUID, g.Model)
			gauge(c.gpuAlloc, float64(g.Allocated), n.Name, g.UUID, g.Model)
			gauge(c.gpuUsed, float64(g.Used), n.Name, g.UUID, g.Model)
			if g.Util != nil {
				gauge(c.gpuUtil, float64(*g.Util)/100, n.Name, g.UUID, g.Model)
			}
		}
	}
	classGPUs := map[string]float64{}
	for _, g := range v.ClassGPUs {
		classGPUs[g.Class] += g.GPUs
	}
	for cl, n := range classGPUs {
		gauge(c.classGPUs, n, cl)
	}
	for s, n := range byState {
		gauge(c.nodes, float64(n), s)
	}
	// An endpoint is registered once; should two entries name one anyway
	// (one being unregistered), they are added up: a series twice would
	// fail the whole scrape.
	svcByState := map[string]int{}
	running, healthy := map[string]int{}, map[string]float64{}
	for _, s := range v.Services {
		svcByState[s.State]++
		running[s.Endpoint] += s.Running
		if s.Healthy {
			healthy[s.Endpoint] = 1
		} else if _, ok := healthy[s.Endpoint]; !ok {
			healthy[s.Endpoint] = 0
		}
	}
	for s, n := range svcByState {
		gauge(c.services, float64(n), s)
	}
	for e, n := range running {
		gauge(c.svcRunning, float64(n), e)
		gauge(c.svcHealthy, healthy[e], e)
	}
	counter(c.failed, v.Items.Failed)
	counter(c.retried, v.Items.Retried)
	counter(c.preempted, v.Items.Preempted)
	ended := map[[2]string]uint64{}
	for _, e := range v.Completed {
		ended[[2]string{string(e.Kind), e.Reason}] += e.N
	}
	for k, n := range ended {
		counter(c.ended, n, k[0], k[1])
	}
}
