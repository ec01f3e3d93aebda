package rm

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
)

// Byte multiples, short for the tests.
const (
	KiB = units.KiB
	MiB = units.MiB
	GiB = units.GiB
	TiB = units.TiB
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// flat returns cfg with growth limits off (no doubling, no prediction), so a
// job gets its fair share in one cycle.
func flat(cfg *Config) *Config {
	f := false
	for i := range cfg.Classes {
		cfg.Classes[i].ExpandByDoubling = &f
		cfg.Classes[i].UsePrediction = &f
	}
	return cfg
}

func mustConfig(t testing.TB, y string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(y))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return c
}

func mkNodes(prefix string, n int, mem int64) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{Name: fmt.Sprintf("%s%02d", prefix, i+1), MemSchedulable: mem}
	}
	return out
}

// job is a fair-share job that has initialized before and wants items processes.
func job(id uint64, user, class string, mem int64, items int) Work {
	return Work{ID: id, Kind: Job, User: user, Class: class, Memory: mem, SubmitTime: t0.Add(time.Duration(id) * time.Second),
		ItemsRemaining: items, Pipelines: 1, EverInitialized: true}
}

// running adds n running processes of w, placed on the given nodes in turn.
func running(w Work, shares int, nodes ...string) Work {
	for i, n := range nodes {
		w.Procs = append(w.Procs, Proc{ID: fmt.Sprintf("%d.%d", w.ID, len(w.Procs)+1), Node: n, Shares: shares,
			State: ProcRunning, StartedAt: t0.Add(time.Duration(i) * time.Millisecond), InitializedAt: t0.Add(time.Second)})
	}
	return w
}

func countStarts(p Plan) map[uint64]int {
	m := map[uint64]int{}
	for _, s := range p.Starts {
		m[s.WorkID]++
	}
	return m
}

func countStops(p Plan) map[uint64]int {
	m := map[uint64]int{}
	for _, s := range p.Stops {
		m[s.WorkID]++
	}
	return m
}

func pendingOf(p Plan, id uint64) string {
	for _, x := range p.Pending {
		if x.WorkID == id {
			return x.Reason
		}
	}
	return ""
}

// sim applies plans to a fake cluster cycle after cycle: starts become
// running, initialized processes; stopped processes are gone by the next
// cycle.
type sim struct {
	cfg   *Config
	nodes []Node
	work  []Work
	carry Carry
	now   time.Time
	seq   map[uint64]int
	// linger keeps stopped processes around this long (0: gone next cycle),
	// like processes that take kill_wait to die.
	linger  time.Duration
	stopped map[string]time.Time
	index   map[uint64]int
}

func (s *sim) find(id uint64) *Work {
	if i, ok := s.index[id]; ok {
		return &s.work[i]
	}
	return nil
}

func (s *sim) step(dt time.Duration) Plan {
	s.now = s.now.Add(dt)
	if s.seq == nil {
		s.seq = map[uint64]int{}
	}
	if s.stopped == nil {
		s.stopped = map[string]time.Time{}
	}
	// Processes told to stop are gone after linger.
	for i := range s.work {
		w := &s.work[i]
		var keep []Proc
		for _, p := range w.Procs {
			if p.State != ProcStopping || s.now.Sub(s.stopped[p.ID]) < s.linger {
				keep = append(keep, p)
			}
		}
		w.Procs = keep
	}
	p := Schedule(Input{Now: s.now, Config: s.cfg, Nodes: s.nodes, Work: s.work, Carry: s.carry})
	s.carry = p.Carry
	s.index = make(map[uint64]int, len(s.work))
	for i := range s.work {
		s.index[s.work[i].ID] = i
	}
	for _, st := range p.Stops {
		w := s.find(st.WorkID)
		for j := range w.Procs {
			if w.Procs[j].ID == st.ProcID {
				w.Procs[j].State = ProcStopping
				s.stopped[st.ProcID] = s.now
			}
		}
	}
	for _, st := range p.Starts {
		w := s.find(st.WorkID)
		if s.seq[w.ID] == 0 {
			for _, p := range w.Procs {
				var a, b int
				fmt.Sscanf(p.ID, "%d.%d", &a, &b)
				s.seq[w.ID] = max(s.seq[w.ID], b)
			}
		}
		s.seq[w.ID]++
		w.Procs = append(w.Procs, Proc{ID: fmt.Sprintf("%d.%d", w.ID, s.seq[w.ID]), Node: st.Node, Shares: st.Shares,
			State: ProcRunning, StartedAt: s.now, InitializedAt: s.now, GPUs: st.GPUs})
		w.EverInitialized = true
	}
	return p
}

// holding returns live (non-stopping) process counts per work.
func (s *sim) holding() map[uint64]int {
	m := map[uint64]int{}
	for _, w := range s.work {
		for _, p := range w.Procs {
			if p.State != ProcStopping {
				m[w.ID]++
			}
		}
	}
	return m
}

func fmtCounts(m map[uint64]int) string {
	var ids []uint64
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d:%d ", id, m[id])
	}
	return b.String()
}
