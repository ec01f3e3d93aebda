package web

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// clusterCollector asks the head at scrape time whether it answers and
// who it is. The cluster-wide series themselves come from the head's own
// agent only (HeadMetrics.ServeCluster), so no agent re-exports them.
type clusterCollector struct {
	data      fetcher
	node      string
	isHead    *prometheus.Desc
	reachable *prometheus.Desc
}

// NewClusterCollector returns a collector of ducc_head_reachable and
// ducc_is_head, asked of src when scraped; node is this agent's name.
func NewClusterCollector(src Source, node string) prometheus.Collector {
	return &clusterCollector{
		data: fetcher{src: src}, node: node,
		isHead:    prometheus.NewDesc("ducc_is_head", "1 if this agent is the head (Raft leader); the cluster-wide series come from this agent only.", nil, nil),
		reachable: prometheus.NewDesc("ducc_head_reachable", "1 if the head answered this scrape.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.isHead
	ch <- c.reachable
}

// Collect implements prometheus.Collector.
func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx := context.Background() // each call has its own timeout (callTimeout)
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
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
}
