package rm

import (
	"strings"
	"testing"
)

func TestTmpCount(t *testing.T) {
	in := steady(1000, 5000, 200)
	p := Schedule(in)
	n := map[string]int{}
	for _, l := range p.Trace {
		f := strings.Fields(l)
		if len(f) > 1 {
			n[f[0]]++
		}
	}
	t.Log(n, len(p.Starts), len(p.Stops), len(p.Pending))
	for _, l := range p.Trace {
		if strings.HasPrefix(l, "preemption") {
			t.Log(l)
		}
	}
}
