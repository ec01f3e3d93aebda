package rm

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current decision traces, then fail")

// story is a multi-cycle scenario whose decision traces are pinned in
// testdata/<name>.golden. Ids and times are fixed, so traces only change
// when the scheduler's decisions (or their wording) change. To accept a
// change on purpose, regenerate in two steps:
//
//	go test ./head/rm -run Golden -update   # rewrites the files and fails
//	git diff head/rm/testdata               # review every changed decision
//	go test ./head/rm -run Golden           # passes against the new files
//
// A run with -update always fails, so a regeneration never passes unseen.
type story struct {
	name  string
	sim   func(t *testing.T) *sim
	steps []func(s *sim) // run before each cycle (may be nil)
	dt    time.Duration
}

func goldenStories() []story {
	return []story{
		{
			name: "preemption_kill_wait_max_per_round",
			sim: func(t *testing.T) *sim {
				s := preemptSetup(flat(DefaultConfig()))
				s.linger = 18 * time.Second // victims outlive kill_wait (15s) a little
				return s
			},
			steps: make([]func(*sim), 16),
			dt:    1500 * time.Millisecond,
		},
		{
			name: "reserve_fixed_fair",
			sim: func(t *testing.T) *sim {
				nodes := []Node{{Name: "a1", MemSchedulable: 32 * GiB}, {Name: "a2", MemSchedulable: 32 * GiB}, {Name: "b1", MemSchedulable: 64 * GiB}}
				return &sim{cfg: flat(DefaultConfig()), nodes: nodes, now: t0, work: []Work{
					job(1, "alice", "normal", 4*GiB, 100),
					job(2, "bob", "high", 8*GiB, 100),
				}}
			},
			steps: []func(*sim){nil, func(s *sim) {
				s.work = append(s.work,
					Work{ID: 3, Kind: Reservation, User: "carol", Class: "reserve", Memory: 32 * GiB, SubmitTime: s.now},
					Work{ID: 4, Kind: Service, User: "svc", Class: "fixed", Memory: 2 * GiB, ServiceID: "db", SubmitTime: s.now},
					Work{ID: 5, Kind: Service, User: "svc", Class: "fixed", Memory: 2 * GiB, ServiceID: "db", Instance: 1, SubmitTime: s.now},
					Work{ID: 6, Kind: ManagedReservation, User: "dan", Class: "fixed", Memory: 128 * GiB, SubmitTime: s.now})
			}, nil, nil, nil},
			dt: 4 * time.Second,
		},
		{
			name: "squatters_and_defrag",
			sim: func(t *testing.T) *sim {
				s := &sim{cfg: poolsConfig(t), now: t0}
				s.nodes = append(mkNodes("cpu", 2, 8*GiB), mkNodes("gpu", 2, 8*GiB)...)
				s.work = []Work{job(1, "alice", "normal", GiB, 100)}
				return s
			},
			steps: []func(*sim){nil, func(s *sim) {
				s.work = append(s.work, job(2, "bob", "gpu", 4*GiB, 100), job(3, "carol", "normal", 8*GiB, 100))
			}, nil, nil, nil, nil},
			dt: 4 * time.Second,
		},
		{
			name: "job_growth_caps",
			sim: func(t *testing.T) *sim {
				w := Work{ID: 1, Kind: Job, User: "alice", Class: "normal", Memory: 2 * GiB, SubmitTime: t0,
					ItemsRemaining: 400, Pipelines: 4, MeanItemTime: 10 * time.Second, MeanInitTime: 30 * time.Second}
				return &sim{cfg: DefaultConfig(), nodes: mkNodes("n", 4, 32*GiB), now: t0, work: []Work{w}}
			},
			steps: make([]func(*sim), 5),
			dt:    time.Second,
		},
		{
			// Two nodes with two 80 GiB GPUs each: a job of whole GPUs, slices
			// of `ducc run`s packed two to a GPU, a memory-only job beside them.
			name: "gpu_whole_and_slices",
			sim: func(t *testing.T) *sim {
				w := withGPUs(job(1, "alice", "normal", 4*GiB, 100), 1, 0)
				return &sim{cfg: flat(DefaultConfig()), nodes: gpuNodes("g", 2, 32*GiB, 2, 80*GiB), now: t0,
					work: []Work{w, run(2, "bob", 2*GiB, 0, 40*GiB)}}
			},
			steps: []func(*sim){nil, func(s *sim) {
				s.work = append(s.work, run(3, "carol", 2*GiB, 0, 40*GiB), run(4, "carol", 2*GiB, 0, 30*GiB),
					run(5, "carol", 2*GiB, 0, 60*GiB), job(6, "dan", "normal", 2*GiB, 100))
			}, nil, nil},
			dt: 4 * time.Second,
		},
	}
}

func TestGoldenTraces(t *testing.T) {
	for _, st := range goldenStories() {
		t.Run(st.name, func(t *testing.T) {
			s := st.sim(t)
			var b strings.Builder
			for i, f := range st.steps {
				if f != nil {
					f(s)
				}
				p := s.step(st.dt)
				fmt.Fprintf(&b, "=== cycle %d\n", i+1)
				for _, l := range p.Trace {
					b.WriteString(l)
					b.WriteByte('\n')
				}
				fmt.Fprintf(&b, "--- holding: %s\n", fmtCounts(s.holding()))
			}
			path := filepath.Join("testdata", st.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Fatalf("golden file %s rewritten; review the diff and run again without -update", path)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("trace differs from %s; if the change is intended, rerun with -update, review the rewritten file and run again.\n%s", path, firstDiff(string(want), got))
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, x, y)
		}
	}
	return ""
}
