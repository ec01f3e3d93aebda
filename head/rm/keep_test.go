package rm

import (
	"runtime"
	"testing"
	"weak"
)

// A Scheduler keeps its working memory between cycles, but nothing of an
// earlier cycle's Input: after a big snapshot and smaller ones, the big
// one is garbage. (Slabs reused without clearing their tails held one old
// snapshot per entry, and a head whose backlog rose and fell grew by
// gigabytes.)
func TestSchedulerKeepsNoOldInput(t *testing.T) {
	s := &Scheduler{}
	big := benchCluster(50, 400, 10)
	for i := range big.Work {
		if big.Work[i].Kind == Job {
			big.Work[i].Procs = append(big.Work[i].Procs, Proc{ID: "p", Node: big.Nodes[0].Name})
			break
		}
	}
	works, nodes := weak.Make(&big.Work[0]), weak.Make(&big.Nodes[0])
	cfg := big.Config // one configuration throughout, as the orchestrator's
	s.Schedule(big)
	big = Input{}
	for range 3 {
		small := benchCluster(5, 10, 2)
		small.Config = cfg
		s.Schedule(small)
	}
	runtime.GC()
	runtime.GC()
	if works.Value() != nil {
		t.Error("the Scheduler still holds the works of an earlier, bigger cycle")
	}
	if nodes.Value() != nil {
		t.Error("the Scheduler still holds the nodes of an earlier, bigger cycle")
	}
	runtime.KeepAlive(s)
}
