package web

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducc-project/ducc/wire"
)

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
	hm.Preempted(2)
	hm.ItemsDone(10)
	hm.QueueWait(40 * time.Millisecond)
	hm.SetRaftState("Leader")

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
		"ducc_nodes_up 1",
		"ducc_is_head 1",
		"ducc_head_reachable 1",
		"ducc_raft_applied_index 57",
		"ducc_agent_processes_started_total 1",
		"ducc_agent_processes_ended_total 1",
		"ducc_agent_oom_kills_total 1",
		"ducc_agent_heartbeat_lag_seconds_count 1",
		"ducc_agent_processes 2",
		`ducc_node_memory_bytes{kind="schedulable"} 1.7179869184e+10`,
		"ducc_head_rm_cycle_seconds_count 1",
		"ducc_head_raft_apply_seconds_count 1",
		"ducc_head_preemptions_total 2",
		"ducc_head_work_items_done_total 10",
		"ducc_head_queue_wait_seconds_count 1",
		`ducc_raft_state{state="Leader"} 1`,
		`ducc_raft_state{state="Follower"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `state="Completed"`) {
		t.Errorf("ended work must not be counted")
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
