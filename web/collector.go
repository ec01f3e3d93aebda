package web

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducc-project/ducc/wire"
)

// clusterCollector asks the head at scrape time for work, nodes and
// status. Every agent exports the same cluster view; scrape one (or
// aggregate with max) to avoid double counting.
type clusterCollector struct {
	data      fetcher
	node      string
	work      *prometheus.Desc
	nodes     *prometheus.Desc
	nodesUp   *prometheus.Desc
	isHead    *prometheus.Desc
	reachable *prometheus.Desc
	raftIndex *prometheus.Desc
	raftTerm  *prometheus.Desc
}

// NewClusterCollector returns a collector of cluster-wide gauges fetched
// from src when scraped; node is this agent's name (for ducc_is_head).
func NewClusterCollector(src Source, node string) prometheus.Collector {
	return &clusterCollector{
		data: fetcher{src: src}, node: node,
		work:      prometheus.NewDesc("ducc_work", "Active work (not ended) by state and kind.", []string{"state", "kind"}, nil),
		nodes:     prometheus.NewDesc("ducc_nodes", "Nodes by state.", []string{"state"}, nil),
		nodesUp:   prometheus.NewDesc("ducc_nodes_up", "Nodes whose heartbeats arrive.", nil, nil),
		isHead:    prometheus.NewDesc("ducc_is_head", "1 if this agent is the head (Raft leader).", nil, nil),
		reachable: prometheus.NewDesc("ducc_head_reachable", "1 if the head answered this scrape; the other cluster series are missing when 0.", nil, nil),
		raftIndex: prometheus.NewDesc("ducc_raft_applied_index", "The head's last applied Raft index.", nil, nil),
		raftTerm:  prometheus.NewDesc("ducc_raft_term", "The head's current Raft term.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.work, c.nodes, c.nodesUp, c.isHead, c.reachable, c.raftIndex, c.raftTerm} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx := context.Background() // each call has its own timeout (callTimeout)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st, err := c.data.status(ctx)
	if err != nil {
		gauge(c.reachable, 0)
		return
	}
	gauge(c.reachable, 1)
	isHead := 0.0
	if c.node != "" && st.Head == c.node {
		isHead = 1
	}
	gauge(c.isHead, isHead)
	gauge(c.nodesUp, float64(st.NodesUp))
	gauge(c.raftIndex, float64(st.RaftIndex))
	gauge(c.raftTerm, float64(st.RaftTerm))

	if nodes, err := c.data.nodes(ctx); err == nil {
		byState := map[string]int{}
		for _, n := range nodes.Nodes {
			byState[n.State]++
		}
		for s, n := range byState {
			gauge(c.nodes, float64(n), s)
		}
	}
	if work, err := c.data.jobs(ctx, wire.Caller{}, wire.ListRequest{}); err == nil {
		type key struct {
			state string
			kind  wire.WorkKind
		}
		by := map[key]int{}
		for _, w := range work.Work {
			if !w.Ended {
				by[key{w.State, w.Kind}]++
			}
		}
		for k, n := range by {
			gauge(c.work, float64(n), k.state, string(k.kind))
		}
	}
}
