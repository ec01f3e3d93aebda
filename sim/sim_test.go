package sim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakesEnv makes the test binary the fakes process (see TestMain).
const fakesEnv = "DUCC_SIM_TEST_FAKES"

func TestMain(m *testing.M) {
	if os.Getenv(fakesEnv) == "1" {
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := ServeFakes(context.Background(), os.Stdin, os.Stdout, logger); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// childCommand runs the fakes in a child process: this test binary.
func childCommand(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakesEnv, "1")
	return []string{exe, "-test.run=^$"}
}

// TestSimSmall runs a small simulation with the fakes in process: every
// node must be seen up and stay up, the head must place every piece of
// work and the fakes must report it running.
func TestSimSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Nodes: 20, NodesPerHost: 8, Duration: 2 * time.Second, Heartbeat: 250 * time.Millisecond,
		NodeMemory: 8 << 30, WorkMemory: 2 << 30, Work: 60, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.FakeHosts != 3 {
		t.Errorf("fake hosts = %d, want 3", res.FakeHosts)
	}
	if res.JoinSeconds < 0 || res.NodesUpMin != 20 || res.NodesUp != 20 {
		t.Errorf("nodes up: joined after %.1fs, min %d, end %d; want all 20 throughout", res.JoinSeconds, res.NodesUpMin, res.NodesUp)
	}
	// 20 nodes at 4 heartbeats/s: 80/s; allow for scheduling noise.
	if res.Idle.Heartbeats < 60 || res.Idle.Heartbeats > 100 {
		t.Errorf("idle heartbeats/s = %.1f, want about 80", res.Idle.Heartbeats)
	}
	w := res.Work
	if w.Submitted != 60 || w.SubmitErrors != 0 {
		t.Errorf("submitted %d with %d errors (%s), want 60 and none", w.Submitted, w.SubmitErrors, w.FirstError)
	}
	if w.Running != 60 || w.HeadRunning != 60 {
		t.Errorf("running: reported %d, head lists %d; want 60 (20 nodes × 4 slots of 2 GiB hold 80)", w.Running, w.HeadRunning)
	}
	if res.Fakes.Started != 60 {
		t.Errorf("fakes started %d processes, want 60", res.Fakes.Started)
	}
	if res.Idle.HeadCPU <= 0 || res.Idle.HeadRSSMiB <= 0 {
		t.Errorf("no resource figures: %+v", res.Idle)
	}
}

// TestSimStretchedHeartbeats: with more nodes than the head's heartbeat
// bound allows at their own interval, the head announces a longer one and
// the fake agents follow it; every node stays up.
func TestSimStretchedHeartbeats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Nodes: 20, NodesPerHost: 10, Duration: 2 * time.Second, Heartbeat: 250 * time.Millisecond,
		MaxHeartbeatsPerSecond: 40, Work: -1, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	// 20 nodes / 40 per second: every 0.5 s instead of 0.25 s.
	if res.AnnouncedHeartbeatSec != 0.5 {
		t.Errorf("announced heartbeat %.2fs, want 0.5s", res.AnnouncedHeartbeatSec)
	}
	if res.JoinSeconds < 0 || res.NodesUpMin != 20 {
		t.Errorf("nodes up: joined after %.1fs, min %d; want all 20 throughout", res.JoinSeconds, res.NodesUpMin)
	}
	// About 40/s, clearly below the 80/s of the nodes' own interval. The
	// window is short and fakes learn the stretched interval at their own
	// pace (a heartbeat already scheduled goes out at the old one), so
	// only a rate near 80/s says they did not follow.
	if res.Idle.Heartbeats < 20 || res.Idle.Heartbeats > 70 {
		t.Errorf("idle heartbeats/s = %.1f, want about 40 (80 unstretched)", res.Idle.Heartbeats)
	}
}

// TestSimFailover runs three head candidates, stops the leader hard once
// every reservation runs, and checks the outcome: another member takes
// over, declares no node down and writes off no process, and every
// reservation still runs.
func TestSimFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("watches a new head past its failover grace")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Nodes: 200, NodesPerHost: 50, Duration: 2 * time.Second, Heartbeat: 500 * time.Millisecond,
		Heads: 3, Failover: true, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	fo := res.Failover
	if fo == nil {
		t.Fatal("no failover result")
	}
	t.Logf("failover: %+v", *fo)
	if res.Work.Running != 200 || res.Work.SubmitErrors != 0 {
		t.Fatalf("before the failover: %d running, %d submissions failed; want 200 and none", res.Work.Running, res.Work.SubmitErrors)
	}
	if fo.NewHeadSeconds < 0 || fo.NewHead == fo.OldHead || fo.NewHead == "" {
		t.Fatalf("no new head took over from %s (new %q)", fo.OldHead, fo.NewHead)
	}
	if fo.NodesDown != 0 || fo.WrittenOff != 0 || fo.Stopped != 0 || !fo.Held() {
		t.Errorf("the new head declared %d nodes down, wrote off %d pieces of work, stopped %d processes; want none",
			fo.NodesDown, fo.WrittenOff, fo.Stopped)
	}
	if fo.AllUpSeconds < 0 || fo.HeadRunning != 200 {
		t.Errorf("after the failover: all up after %.1fs, head lists %d running; want every node up and 200", fo.AllUpSeconds, fo.HeadRunning)
	}
}

// TestSimChild runs the fakes in a child process and lets processes end:
// the head must see the ends and the fakes' CPU is reported separately.
func TestSimChild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Nodes: 10, NodesPerHost: 5, Duration: 2 * time.Second, Heartbeat: 250 * time.Millisecond,
		Work: 10, RunFor: 500 * time.Millisecond, Logger: testLogger(t), FakesCommand: childCommand(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.FakesInProcess || res.Fakes.CPUSeconds <= 0 || res.Fakes.HeartbeatsSent == 0 {
		t.Errorf("fakes figures missing: %+v", res.Fakes)
	}
	if res.Work.Running != 10 || res.Fakes.Ended != 10 {
		t.Errorf("work: %d reported running, %d ended; want 10 and 10", res.Work.Running, res.Fakes.Ended)
	}
	if res.Work.HeadRunning != 0 {
		t.Errorf("head still lists %d running after every process ended", res.Work.HeadRunning)
	}
}

// BenchmarkHeadNodes measures the head with 100 and 1,000 fake nodes (one
// simulation per size; the fakes run in a child process). Reported:
// head CPU (cores) and RSS idle and busy, heartbeats handled per second,
// submit → Running latency.
func BenchmarkHeadNodes(b *testing.B) {
	if testing.Short() {
		b.Skip("simulation benchmarks take tens of seconds")
	}
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var res *Result
			for range b.N {
				var err error
				res, err = Run(context.Background(), Options{Nodes: n, Duration: 5 * time.Second,
					Logger: testLogger(b), FakesCommand: childCommand(b)})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.Idle.HeadCPU, "idle-cores")
			b.ReportMetric(res.Busy.HeadCPU, "busy-cores")
			b.ReportMetric(res.Busy.HeadRSSMiB, "busy-MiB")
			b.ReportMetric(res.Busy.Heartbeats, "hb/s")
			b.ReportMetric(res.Work.LatencyP50MS, "p50-ms")
			b.ReportMetric(res.Work.AllRunningSeconds, "all-running-s")
			b.ReportMetric(float64(res.NodesUpMin), "min-up")
		})
	}
}

// TestSimGPUs: nodes with GPUs and work that asks for them; the head
// places no more than the GPUs hold (20 of 30 whole-GPU workers on 10
// nodes of 2 GPUs), with plenty of memory to spare.
func TestSimGPUs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Nodes: 10, NodesPerHost: 5, Duration: time.Second, Heartbeat: 250 * time.Millisecond,
		NodeMemory: 64 << 30, WorkMemory: 1 << 30, Work: 30, NodeGPUs: 2, NodeGPUMemory: 80 << 30, WorkGPUs: 1,
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	w := res.Work
	if w.Submitted != 30 || w.SubmitErrors != 0 {
		t.Errorf("submitted %d with %d errors (%s), want 30 and none", w.Submitted, w.SubmitErrors, w.FirstError)
	}
	if w.Running != 20 || w.HeadRunning != 20 {
		t.Errorf("running: reported %d, head lists %d; want 20 (10 nodes × 2 GPUs)", w.Running, w.HeadRunning)
	}
}

func TestOptionsGPUs(t *testing.T) {
	const g = 1 << 30
	tests := []struct {
		name    string
		o       Options
		wantErr string
		perNode int
	}{
		{"memory only", Options{NodeMemory: 32 * g, WorkMemory: 4 * g}, "", 8},
		{"whole GPUs", Options{NodeMemory: 32 * g, WorkMemory: 1 * g, NodeGPUs: 8, NodeGPUMemory: 80 * g, WorkGPUs: 2}, "", 4},
		{"slices", Options{NodeMemory: 32 * g, WorkMemory: 1 * g, NodeGPUs: 2, NodeGPUMemory: 80 * g, WorkGPUMemory: 20 * g}, "", 8},
		{"memory binds", Options{NodeMemory: 4 * g, WorkMemory: 1 * g, NodeGPUs: 8, NodeGPUMemory: 80 * g, WorkGPUs: 1}, "", 4},
		{"both", Options{NodeGPUs: 1, NodeGPUMemory: g, WorkGPUs: 1, WorkGPUMemory: g}, "not both", 0},
		{"no node GPUs", Options{WorkGPUs: 1}, "needs nodes with GPUs", 0},
		{"GPUs without size", Options{NodeGPUs: 2}, "memory size", 0},
		{"too many", Options{NodeGPUs: 2, NodeGPUMemory: g, WorkGPUs: 3}, "no node could hold it", 0},
		{"slice too big", Options{NodeGPUs: 2, NodeGPUMemory: g, WorkGPUMemory: 2 * g}, "no GPU could hold it", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Logger = testLogger(t)
			err := o.defaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("defaults() = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := o.perNode(); got != tt.perNode {
				t.Errorf("perNode() = %d, want %d", got, tt.perNode)
			}
		})
	}
}
