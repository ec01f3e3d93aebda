package web

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ducc-project/ducc/wire"
)

// testCluster is a head's view with one of everything.
func testCluster() Cluster {
	return Cluster{
		At: testNow, RaftTerm: 3, RaftIndex: 57,
		Work: []WorkCount{
			{State: "Running", Kind: wire.WorkManaged, N: 2},
			{State: "Running", Kind: wire.WorkJob, N: 1},
			{State: "WaitingForResources", Kind: wire.WorkManaged, N: 1},
		},
		Pending: []PendingCount{{Class: "normal", Reason: "Resources", N: 1}, {Class: "normal", Reason: "FairShare", N: 2}},
		Classes: []wire.ClassInfo{{Name: "normal", Demand: 8 << 30, FairShare: 6 << 30, Allocated: 4 << 30}, {Name: "fixed"}},
		Nodes: []wire.NodeInfo{
			{Name: "n1", State: "Up", Shares: 16, SharesUsed: 5, LastHeartbeat: testNow.Add(-1500 * time.Millisecond).UnixMilli(),
				GPUs: []wire.NodeGPU{{GPUDevice: wire.GPUDevice{UUID: "GPU-a", Memory: 80 << 30}, Allocated: 40 << 30, Used: 1 << 30}}},
			{Name: "n2", State: "Down", Shares: 8, LastHeartbeat: testNow.Add(-time.Minute).UnixMilli()},
			{Name: "n3", State: "Unknown"}, // not heard from by this head
		},
		Services: []ServiceSample{
			{Endpoint: "UIMA-AS:q1:tcp://b:61616", State: "Available", Running: 2, Healthy: true},
			{Endpoint: "CUSTOM:web", State: "Waiting"},
		},
		Items:     ItemTotals{Failed: 3, Retried: 4, Preempted: 5},
		Completed: []CompletedCount{{Kind: wire.WorkJob, Reason: "EndOfJob", N: 7}, {Kind: wire.WorkJob, Reason: "Error", N: 1}},
		ClassGPUs: []ClassGPUs{{Class: "fixed", GPUs: 1.5}},
	}
}

func TestMetricsEndpoint(t *testing.T) {
	src := newFake()
	srv, reg := newTestServer(t, src, nil)
	am := NewAgentMetrics(reg)
	hm := NewHeadMetrics(reg)
	am.ProcStarted()
	am.ProcEnded(1)
	am.HeartbeatSent(3 * time.Millisecond)
	am.SetProcs(2)
	am.SetNode(32<<30, 16<<30, 5<<30)
	hm.ObserveCycle(2 * time.Millisecond)
	hm.ObserveApply(time.Millisecond)
	hm.ObserveCommit(12, time.Millisecond)
	hm.LeaderChanged()
	hm.Preempted(2)
	hm.ItemsDone(10)
	hm.QueueWait(40 * time.Millisecond)
	hm.SetRaftState("Leader")
	defer hm.ServeCluster(testCluster)()

	code, body, _ := get(t, srv.URL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`ducc_work{kind="managed",state="Running"} 2`,
		`ducc_work{kind="job",state="Running"} 1`,
		`ducc_work{kind="managed",state="WaitingForResources"} 1`,
		`ducc_nodes{state="Up"} 1`,
		`ducc_nodes{state="Down"} 1`,
		"ducc_is_head 1",
		"ducc_head_reachable 1",
		"ducc_raft_applied_index 57",
		"ducc_raft_term 3",
		`ducc_work_pending{class="normal",reason="FairShare"} 2`,
		`ducc_work_pending{class="normal",reason="Resources"} 1`,
		`ducc_class_demand_bytes{class="normal"} 8.589934592e+09`,
		`ducc_class_fair_share_bytes{class="normal"} 6.442450944e+09`,
		`ducc_class_allocated_bytes{class="normal"} 4.294967296e+09`,
		`ducc_class_demand_bytes{class="fixed"} 0`,
		`ducc_node_heartbeat_age_seconds{node="n1"} 1.5`,
		`ducc_class_gpus_allocated{class="fixed"} 1.5`,
		`ducc_gpu_memory_allocated_bytes{model="",node="n1",uuid="GPU-a"} 4.294967296e+10`,
		`ducc_gpu_memory_used_bytes{model="",node="n1",uuid="GPU-a"} 1.073741824e+09`,
		`ducc_node_heartbeat_age_seconds{node="n2"} 60`,
		`ducc_node_shares{node="n1"} 16`,
		`ducc_node_shares_used{node="n1"} 5`,
		`ducc_services{state="Available"} 1`,
		`ducc_service_instances{endpoint="UIMA-AS:q1:tcp://b:61616"} 2`,
		`ducc_service_healthy{endpoint="UIMA-AS:q1:tcp://b:61616"} 1`,
		`ducc_service_healthy{endpoint="CUSTOM:web"} 0`,
		"ducc_work_items_failed_total 3",
		"ducc_work_items_retried_total 4",
		"ducc_work_items_preempted_total 5",
		`ducc_work_completed_total{kind="job",reason="EndOfJob"} 7`,
		`ducc_work_completed_total{kind="job",reason="Error"} 1`,
		"ducc_agent_processes_started_total 1",
		"ducc_agent_processes_ended_total 1",
		"ducc_agent_oom_kills_total 1",
		"ducc_agent_heartbeat_lag_seconds_count 1",
		"ducc_agent_processes 2",
		"ducc_node_memory_total_bytes 3.4359738368e+10",
		"ducc_node_memory_schedulable_bytes 1.7179869184e+10",
		"ducc_node_memory_used_bytes 5.36870912e+09",
		"ducc_head_rm_cycle_seconds_count 1",
		"ducc_head_raft_apply_seconds_count 1",
		"ducc_raft_commit_seconds_count 1",
		"ducc_raft_commit_commands_sum 12",
		"ducc_raft_leader_changes_total 1",
		"ducc_head_preemptions_total 2",
		"ducc_head_work_items_done_total 10",
		"ducc_head_queue_wait_seconds_count 1",
		`ducc_raft_state{state="Leader"} 1`,
		`ducc_raft_state{state="Follower"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, gone := range []string{"ducc_nodes_up", "ducc_node_memory_bytes", `ducc_node_heartbeat_age_seconds{node="n3"}`} {
		if strings.Contains(body, gone) {
			t.Errorf("/metrics has %q", gone)
		}
	}
	if strings.Contains(body, `state="Completed"`) {
		t.Errorf("ended work must not be counted")
	}
}

// The exposition passes the Prometheus linter (what promtool check
// metrics runs) and a pedantic registry's consistency checks.
func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewClusterCollector(newFake(), "n1"))
	am := NewAgentMetrics(reg)
	hm := NewHeadMetrics(reg)
	am.SetNode(1, 1, 1)
	hm.SetRaftState("Leader")
	defer hm.ServeCluster(testCluster)()
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// Only the agent whose head serves a view exports the cluster series, and
// a stale stop does not end a newer view.
func TestMetricsClusterOnlyFromHead(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	hm := NewHeadMetrics(reg)
	has := func() bool {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "ducc_work_completed_total" {
				return true
			}
		}
		return false
	}
	if has() {
		t.Fatal("cluster series exported without a head")
	}
	stop1 := hm.ServeCluster(testCluster)
	if !has() {
		t.Fatal("cluster series missing while the head serves them")
	}
	stop2 := hm.ServeCluster(testCluster) // the next term
	stop1()
	if !has() {
		t.Fatal("the old term's stop ended the new term's series")
	}
	stop2()
	if has() {
		t.Fatal("cluster series exported after the head stopped")
	}
}

// Two entries for one endpoint or node must not fail the scrape.
func TestMetricsClusterDuplicates(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	hm := NewHeadMetrics(reg)
	defer hm.ServeCluster(func() Cluster {
		c := testCluster()
		c.Services = append(c.Services, ServiceSample{Endpoint: "CUSTOM:web", State: "Stopping", Running: 1})
		c.Nodes = append(c.Nodes, c.Nodes[0])
		c.Classes = append(c.Classes, c.Classes[0])
		return c
	})()
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("gather: %v", err)
	}
}

func TestMetricsHeadDown(t *testing.T) {
	src := newFake()
	src.err = wire.Errorf(wire.CodeUnreachable, "no head")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewClusterCollector(src, "n1"))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "ducc_head_reachable" {
		t.Errorf("with the head down only ducc_head_reachable is exported, got %v", mfs)
	}
	if v := gather(t, reg, "ducc_head_reachable"); v != 0 {
		t.Errorf("ducc_head_reachable %v, want 0", v)
	}
}

func TestMetricsNotHead(t *testing.T) {
	c := NewClusterCollector(newFake(), "n2")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if v := gather(t, reg, "ducc_is_head"); v != 0 {
		t.Errorf("n2 is not the head: ducc_is_head %v", v)
	}
}

func TestMetricsNilSafe(t *testing.T) {
	var am *AgentMetrics
	var hm *HeadMetrics
	am.ProcStarted()
	am.ProcEnded(0)
	am.HeartbeatSent(time.Second)
	am.SetProcs(1)
	am.SetNode(1, 1, 1)
	hm.ObserveCycle(time.Second)
	hm.ObserveApply(time.Second)
	hm.ObserveCommit(1, time.Second)
	hm.LeaderChanged()
	hm.ServeCluster(testCluster)()
	hm.Preempted(1)
	hm.ItemsDone(1)
	hm.QueueWait(time.Second)
	hm.SetRaftState("Leader")
	// Unregistered metrics work too.
	NewAgentMetrics(nil).ProcStarted()
	NewHeadMetrics(nil).SetRaftState("Follower")
}

func TestMetricsRaftStateMoves(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	hm := NewHeadMetrics(reg)
	hm.SetRaftState("Follower")
	hm.SetRaftState("Leader")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("pedantic registry: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "ducc_raft_state" {
			for _, m := range mf.Metric {
				got[m.Label[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if got["Leader"] != 1 || got["Follower"] != 0 || len(got) != 4 {
		t.Errorf("raft state gauge did not move: %v", got)
	}
}

func gather(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) > 0 {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}
