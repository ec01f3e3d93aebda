package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// dialInNetns opens a connection from inside the network namespace at
// nsPath (a node's 127.0.0.1 is its own). The socket is made on a thread
// moved into the namespace and keeps it; the thread moves back. Should it
// not move back it stays locked, and the runtime ends it with the
// goroutine.
func dialInNetns(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer orig.Close()
	target, err := os.Open(nsPath)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("enter %s: %w", nsPath, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
		return conn, err // the thread stays locked and dies with this goroutine
	}
	runtime.UnlockOSThread()
	return conn, err
}

// metrics scrapes the node's /metrics from inside its namespace.
func (n *nsNode) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dataDir, "web.url"))
	if err != nil {
		t.Fatalf("%s: no dashboard URL: %v", n.name, err)
	}
	nsPath := "/run/netns/" + n.ns
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialInNetns(ctx, nsPath, network, addr)
		},
	}}
	resp, err := client.Get(strings.TrimSpace(string(b)) + "metrics")
	if err != nil {
		t.Fatalf("%s: scrape: %v", n.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: scrape: %d %v", n.name, resp.StatusCode, err)
	}
	return parseMetrics(string(body))
}

// checkClusterMetricsFromHead scrapes every agent of c: the cluster-wide
// series come from the head's agent only, so sums across agents are
// right, and every agent exports its own series (docs/operations.md).
func checkClusterMetricsFromHead(t *testing.T, c *netCluster) {
	head := c.headNode(c.nodes[c.order[0]])
	sums := map[string]float64{}
	for _, name := range c.order {
		n := c.nodes[name]
		m := n.metrics(t)
		for k, v := range m {
			sums[k] += v
		}
		_, cluster := m[`ducc_nodes{state="Up"}`]
		if cluster != (n == head) || m["ducc_is_head"] != map[bool]float64{true: 1}[n == head] {
			t.Errorf("%s (head: %v) exports cluster series: %v, ducc_is_head %v", name, n == head, cluster, m["ducc_is_head"])
		}
		if m["ducc_head_reachable"] != 1 || m["ducc_node_memory_schedulable_bytes"] != 2<<30 {
			t.Errorf("%s: head reachable %v, schedulable memory %v (2G configured)", name, m["ducc_head_reachable"], m["ducc_node_memory_schedulable_bytes"])
		}
		if _, ok := m[fmt.Sprintf("ducc_node_heartbeat_age_seconds{node=%q}", name)]; ok != (n == head) {
			t.Errorf("%s: per-node series from a non-head agent, or missing at the head", name)
		}
	}
	want := float64(len(c.order))
	if sums[`ducc_nodes{state="Up"}`] != want || sums["ducc_is_head"] != 1 || sums["ducc_head_reachable"] != want {
		t.Errorf("sums across agents: nodes up %v (want %v), is_head %v (want 1), head reachable %v",
			sums[`ducc_nodes{state="Up"}`], want, sums["ducc_is_head"], sums["ducc_head_reachable"])
	}
	for _, name := range c.order {
		if got := sums[fmt.Sprintf("ducc_node_shares{node=%q}", name)]; got != 2 {
			t.Errorf("sum of ducc_node_shares for %s across agents: %v, want 2 (2G of 1G shares, once)", name, got)
		}
	}
}
