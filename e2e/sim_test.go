package e2e

import (
	"encoding/json"
	"testing"

	"github.com/ducc-project/ducc/sim"
)

// TestSimCommand runs `ducc sim` of the real binary on a small cluster, the
// fakes in their own process, and checks the JSON it prints.
func TestSimCommand(t *testing.T) {
	out, errs, code := runDucc(t.TempDir(), "sim", "--nodes", "30", "--nodes-per-host", "10", "--duration", "2s",
		"--heartbeat", "500ms", "--node-memory", "8G", "--work-memory", "2G", "--work", "90", "--json")
	if code != 0 {
		t.Fatalf("ducc sim: exit %d\n%s\n%s", code, out, errs)
	}
	var res sim.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ducc sim --json: %v\n%s", err, out)
	}
	if res.FakesInProcess || res.FakeHosts != 3 || res.Fakes.CPUSeconds <= 0 {
		t.Errorf("fakes: in process %v, %d hosts, %.2f CPU s; want a separate process with 3 hosts", res.FakesInProcess, res.FakeHosts, res.Fakes.CPUSeconds)
	}
	if res.NodesUpMin != 30 || res.Work.Running != 90 || res.Work.HeadRunning != 90 {
		t.Errorf("nodes up (min) %d, work running %d, head lists %d; want 30, 90, 90\n%s", res.NodesUpMin, res.Work.Running, res.Work.HeadRunning, out)
	}
	if res.Idle.Heartbeats < 40 || res.Idle.HeadRSSMiB <= 0 {
		t.Errorf("idle window: %+v; want about 60 heartbeats/s", res.Idle)
	}
}
