package sm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

// service builds an active service; opts adjust it.
func service(id uint64, ep string, opts ...func(*state.Work)) *state.Work {
	sp := wire.ServiceSpec{Endpoint: ep, Executable: "/bin/srv", Instances: 1}
	spec.ServiceDefaults(&sp)
	w := &state.Work{ID: id, Kind: wire.WorkService, User: "alice", State: state.StateRunning,
		Service: &state.Service{Spec: sp, IDs: []int{0}}}
	for _, o := range opts {
		o(w)
	}
	w.Deps = w.Service.Spec.Dependency
	return w
}

func started(w *state.Work)   { w.Service.Started = true }
func byRefs(w *state.Work)    { w.Service.Started, w.Service.ByRefs = true, true }
func autostart(w *state.Work) { w.Service.Autostart, w.Service.Started = true, true }
func disabled(w *state.Work)  { w.Service.Disabled, w.Service.Why = true, "Excessive runtime errors" }
func pingOnly(w *state.Work)  { w.Service.Spec.Executable, w.Service.IDs = "", nil }
func ids(n ...int) func(*state.Work) {
	return func(w *state.Work) { w.Service.IDs = n }
}
func deps(d ...string) func(*state.Work) {
	return func(w *state.Work) { w.Service.Spec.Dependency = d }
}
func linger(d time.Duration) func(*state.Work) {
	return func(w *state.Work) { w.Service.Spec.LingerMS = d.Milliseconds() }
}

// proc adds a live process: state "R" running and ready, "r" running not
// ready, "S" starting, "X" stopping.
func proc(inst int, st string) func(*state.Work) {
	return func(w *state.Work) {
		p := &state.Proc{ID: fmt.Sprintf("%d.%d", w.ID, len(w.Procs)+1), Instance: inst, Node: "n1", StartedAt: ms(-time.Minute)}
		switch st {
		case "R":
			p.State, p.ReadyAt = wire.ProcRunning, ms(-50*time.Second)
		case "r":
			p.State = wire.ProcRunning
		case "S":
			p.State = wire.ProcStarting
		case "X":
			p.State, p.Stop = wire.ProcStopping, true
		}
		w.Procs = append(w.Procs, p)
	}
}

func job(id uint64, st state.WorkState, dep ...string) *state.Work {
	return &state.Work{ID: id, Kind: wire.WorkJob, State: st, Deps: dep, Job: &state.Job{}}
}

func alive(d time.Duration) Ping {
	return Ping{Seq: 1, At: t0.Add(d), Alive: true, Healthy: true, Info: "ok"}
}

// ops summarizes commands as "svc:op", "stop:proc", "finish:id",
// "deps:id", "ready:proc".
func ops(cmds []state.Command) []string {
	var out []string
	for _, c := range cmds {
		switch c.Type {
		case state.CmdSvcChange:
			if c.Service.Op == state.SvcOpReady {
				out = append(out, "ready:"+c.ProcID)
				continue
			}
			s := fmt.Sprintf("%d:%s", c.WorkID, c.Service.Op)
			if c.Service.N != 0 {
				s += fmt.Sprintf("(%d)", c.Service.N)
			}
			if len(c.Service.IDs) > 0 {
				s += fmt.Sprint(c.Service.IDs)
			}
			out = append(out, s)
		case state.CmdStopProc:
			out = append(out, "stop:"+c.ProcID)
		case state.CmdFinish:
			out = append(out, fmt.Sprintf("finish:%d:%s", c.WorkID, c.Completion))
		case state.CmdDepsMet:
			out = append(out, fmt.Sprintf("deps:%d", c.WorkID))
		}
	}
	return out
}

// decideCase is one case of TestDecide: the input of one decision and
// what it must decide (a nil map or list: nothing is checked, except
// commands and pingers, which must then be none).
type decideCase struct {
	name    string
	work    []*state.Work
	pings   map[uint64]Ping
	soft    Soft
	cmds    []string
	wanted  map[uint64][]int
	state   map[uint64]string
	waiting map[uint64]string // substring of the reason
	pingers []uint64
}

// The endpoints of TestDecide's services.
const ep, ep2 = "HTTP:h:1/", "TCP:h:2"

// instanceCases are TestDecide's cases about one service's instances,
// readiness, pinger and status.
func instanceCases() []decideCase {
	return []decideCase{
		{name: "registered, not started: nothing runs",
			work:   []*state.Work{service(1, ep)},
			wanted: map[uint64][]int{1: nil}, state: map[uint64]string{1: wire.SvcStateStopped}},
		{name: "started: one instance at a time",
			work:   []*state.Work{service(1, ep, started, ids(0, 1, 2))},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateStarting}},
		{name: "next instance only once the first is ready",
			work:   []*state.Work{service(1, ep, started, ids(0, 1, 2), proc(0, "r"))},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateInitializing},
			pingers: []uint64{1}},
		{name: "pinger alive after the start marks the instance ready; the next may start",
			work:   []*state.Work{service(1, ep, started, ids(0, 1, 2), proc(0, "r"))},
			pings:  map[uint64]Ping{1: alive(0)},
			cmds:   []string{"ready:1.1"},
			wanted: map[uint64][]int{1: {0, 1}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "a ping from before the start does not make it ready",
			work:   []*state.Work{service(1, ep, started, proc(0, "r"))},
			pings:  map[uint64]Ping{1: alive(-2 * time.Minute)},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateInitializing},
			pingers: []uint64{1}},
		{name: "a failed instance is replaced with the same id",
			work:   []*state.Work{service(1, ep, started, ids(0, 1), proc(0, "R"))},
			pings:  map[uint64]Ping{1: alive(0)},
			wanted: map[uint64][]int{1: {0, 1}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "missed pings: Waiting",
			work:   []*state.Work{service(1, ep, started, proc(0, "R"))},
			pings:  map[uint64]Ping{1: {Seq: 3, At: t0, Info: "connection refused", Missed: 2}},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateWaiting},
			pingers: []uint64{1}},
		{name: "alive but not healthy: Alert",
			work:   []*state.Work{service(1, ep, started, proc(0, "R"))},
			pings:  map[uint64]Ping{1: {Seq: 1, At: t0, Alive: true, Info: "HTTP 404"}},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAlert},
			pingers: []uint64{1}},
		{name: "disabled: running instances stay, nothing new starts",
			work:   []*state.Work{service(1, ep, started, disabled, ids(0, 1), proc(0, "R"))},
			pings:  map[uint64]Ping{1: alive(0)},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateDisabled},
			pingers: []uint64{1}},
		{name: "stopped: its instances are stopped",
			work:   []*state.Work{service(1, ep, proc(0, "R"), proc(1, "X"))},
			cmds:   []string{"stop:1.1"},
			wanted: map[uint64][]int{1: nil}, state: map[uint64]string{1: wire.SvcStateStopping}},
		{name: "an instance id removed: that instance is stopped",
			work:   []*state.Work{service(1, ep, started, ids(0), proc(0, "R"), proc(1, "R"))},
			pings:  map[uint64]Ping{1: alive(0)},
			cmds:   []string{"stop:1.2"},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "ping-only: no instances, the pinger decides",
			work:   []*state.Work{service(1, ep, pingOnly)},
			pings:  map[uint64]Ping{1: alive(0)},
			wanted: map[uint64][]int{1: nil}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
	}
}

// referenceCases are TestDecide's cases about references (reference
// starts, chains, linger) and work that waits for services.
func referenceCases() []decideCase {
	return []decideCase{
		{name: "a job references a stopped service: reference start, the job waits",
			work:   []*state.Work{service(1, ep, ids()), job(2, state.StateWaitingForServices, ep)},
			cmds:   []string{"1:refstart"},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateStarting},
			waiting: map[uint64]string{2: "waiting for services: HTTP:h:1/ (service 1 Starting"}},
		{name: "available: the job goes on",
			work:   []*state.Work{service(1, ep, byRefs, proc(0, "R")), job(2, state.StateWaitingForServices, ep)},
			pings:  map[uint64]Ping{1: alive(0)},
			cmds:   []string{"deps:2"},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "unknown endpoint: the job fails with ServicesUnavailable",
			work: []*state.Work{job(2, state.StateWaitingForServices, "CUSTOM:gone")},
			cmds: []string{"finish:2:ServicesUnavailable"}},
		{name: "disabled dependency: the job waits and says why",
			work:    []*state.Work{service(1, ep, disabled), job(2, state.StateWaitingForServices, ep)},
			state:   map[uint64]string{1: wire.SvcStateDisabled},
			wanted:  map[uint64][]int{1: nil},
			waiting: map[uint64]string{2: "Disabled: Excessive runtime errors"}},
		{name: "a chain: the reference propagates, the dependent waits for its dependency",
			work: []*state.Work{service(1, ep, ids()), service(2, ep2, ids(), deps(ep)),
				job(3, state.StateWaitingForServices, ep2)},
			cmds:   []string{"2:refstart", "1:refstart"},
			wanted: map[uint64][]int{1: {0}, 2: nil},
			state:  map[uint64]string{1: wire.SvcStateStarting, 2: wire.SvcStateNotAvailable}},
		{name: "no references left: linger starts, nothing stops yet",
			work:   []*state.Work{service(1, ep, byRefs, linger(time.Minute), proc(0, "R"))},
			pings:  map[uint64]Ping{1: alive(0)},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "linger passed: reference stop",
			work:   []*state.Work{service(1, ep, byRefs, linger(time.Minute), proc(0, "R"))},
			pings:  map[uint64]Ping{1: alive(0)},
			soft:   Soft{Idle: map[uint64]time.Time{1: t0.Add(-time.Minute)}},
			cmds:   []string{"1:refstop", "stop:1.1"},
			wanted: map[uint64][]int{1: nil}, state: map[uint64]string{1: wire.SvcStateStopping}},
		{name: "a new reference cancels the linger",
			work: []*state.Work{service(1, ep, byRefs, linger(time.Minute), proc(0, "R")),
				job(2, state.StateRunning, ep)},
			pings:  map[uint64]Ping{1: alive(0)},
			soft:   Soft{Idle: map[uint64]time.Time{1: t0.Add(-time.Hour)}},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "manually started services ignore references",
			work:   []*state.Work{service(1, ep, started, linger(time.Second), proc(0, "R"))},
			pings:  map[uint64]Ping{1: alive(0)},
			soft:   Soft{Idle: map[uint64]time.Time{1: t0.Add(-time.Hour)}},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "autostart keeps running without references",
			work:   []*state.Work{service(1, ep, autostart, linger(time.Second), proc(0, "R"))},
			pings:  map[uint64]Ping{1: alive(0)},
			soft:   Soft{Idle: map[uint64]time.Time{1: t0.Add(-time.Hour)}},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
	}
}

// pingerAnswerCases are TestDecide's cases about a custom pinger's
// answers.
func pingerAnswerCases() []decideCase {
	return []decideCase{
		{name: "pinger additions are obeyed within max_instances",
			work: []*state.Work{service(1, ep, started, proc(0, "R"), func(w *state.Work) { w.Service.Spec.MaxInstances = 3 })},
			pings: map[uint64]Ping{1: {Seq: 5, At: t0, Alive: true, Healthy: true,
				Answer: &wire.PingAnswer{Alive: true, Additions: 5}}},
			cmds:   []string{"1:add(2)"},
			wanted: map[uint64][]int{1: {0, 1}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "an answer already obeyed is not obeyed twice",
			work: []*state.Work{service(1, ep, started, proc(0, "R"))},
			pings: map[uint64]Ping{1: {Seq: 5, At: t0, Alive: true, Healthy: true,
				Answer: &wire.PingAnswer{Alive: true, Additions: 1}}},
			soft:   Soft{Applied: map[uint64]uint64{1: 5}},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "pinger deletions stop those instances; unknown ids are ignored",
			work: []*state.Work{service(1, ep, started, ids(0, 1), proc(0, "R"), proc(1, "R"))},
			pings: map[uint64]Ping{1: {Seq: 2, At: t0, Alive: true, Healthy: true,
				Answer: &wire.PingAnswer{Alive: true, Deletions: []int{1, 7}, LastUse: 99}}},
			cmds:   []string{"1:delete[1]", "1:lastuse(99)", "stop:1.2"},
			wanted: map[uint64][]int{1: {0}}, state: map[uint64]string{1: wire.SvcStateAvailable},
			pingers: []uint64{1}},
		{name: "a stopped service ignores additions",
			work:   []*state.Work{service(1, ep)},
			pings:  map[uint64]Ping{1: {Seq: 1, At: t0, Answer: &wire.PingAnswer{Additions: 2}}},
			wanted: map[uint64][]int{1: nil}, state: map[uint64]string{1: wire.SvcStateStopped}},
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range slices.Concat(instanceCases(), referenceCases(), pingerAnswerCases()) {
		t.Run(tc.name, func(t *testing.T) { checkDecide(t, tc) })
	}
}

// checkDecide runs the decision of tc and compares what tc checks.
func checkDecide(t *testing.T, tc decideCase) {
	t.Helper()
	out := Decide(Input{Now: t0, Work: tc.work, Pings: tc.pings, Soft: tc.soft})
	if got := ops(out.Commands); !slices.Equal(got, tc.cmds) {
		t.Errorf("commands %q, want %q", got, tc.cmds)
	}
	for id, want := range tc.wanted {
		if got := out.Wanted[id]; !slices.Equal(got, want) {
			t.Errorf("wanted[%d] = %v, want %v", id, got, want)
		}
	}
	for id, want := range tc.state {
		if got := out.Status[id]; got.State != want {
			t.Errorf("state[%d] = %s (%s), want %s", id, got.State, got.Reason, want)
		}
	}
	for id, want := range tc.waiting {
		if got := out.Waiting[id]; !strings.Contains(got, want) {
			t.Errorf("waiting[%d] = %q, want it to contain %q", id, got, want)
		}
	}
	var pingers []uint64
	for _, p := range out.Pingers {
		pingers = append(pingers, p.Service)
	}
	if !slices.Equal(pingers, tc.pingers) {
		t.Errorf("pingers %v, want %v", pingers, tc.pingers)
	}
}

// TestDecideLingerClock walks a reference-started service through its
// linger with an injected clock: idle since the first decision without
// references, stopped once the linger has passed.
func TestDecideLingerClock(t *testing.T) {
	w := service(1, "HTTP:h:1/", byRefs, linger(30*time.Second), proc(0, "R"))
	var soft Soft
	for _, step := range []struct {
		at   time.Duration
		stop bool
	}{{0, false}, {10 * time.Second, false}, {29 * time.Second, false}, {30 * time.Second, true}} {
		out := Decide(Input{Now: t0.Add(step.at), Work: []*state.Work{w}, Soft: soft})
		soft = out.Soft
		got := slices.Contains(ops(out.Commands), "1:refstop")
		if got != step.stop {
			t.Fatalf("at %s: refstop %v, want %v (%q)", step.at, got, step.stop, ops(out.Commands))
		}
	}
}

// TestDecideDeterministic: the same input gives the same output.
func TestDecideDeterministic(t *testing.T) {
	mk := func() Input {
		return Input{Now: t0, Work: []*state.Work{
			service(3, "TCP:h:3", started, ids(0, 1, 2), proc(0, "R"), proc(1, "r")),
			service(1, "HTTP:h:1/", ids()), service(2, "TCP:h:2", ids(), deps("HTTP:h:1/")),
			job(4, state.StateWaitingForServices, "TCP:h:2", "TCP:h:3"), job(5, state.StateWaitingForServices, "CUSTOM:x"),
		}, Pings: map[uint64]Ping{3: alive(0)}}
	}
	a, b := Decide(mk()), Decide(mk())
	if fmt.Sprint(ops(a.Commands)) != fmt.Sprint(ops(b.Commands)) || fmt.Sprint(a.Wanted) != fmt.Sprint(b.Wanted) {
		t.Fatalf("not deterministic:\n%v %v\n%v %v", ops(a.Commands), a.Wanted, ops(b.Commands), b.Wanted)
	}
}

func BenchmarkDecide(b *testing.B) {
	var work []*state.Work
	for i := range 200 {
		ep := fmt.Sprintf("TCP:h:%d", i)
		work = append(work, service(uint64(i+1), ep, started, ids(0, 1, 2), proc(0, "R"), proc(1, "R"), proc(2, "r")))
		for j := range 10 {
			work = append(work, job(uint64(10000+i*10+j), state.StateRunning, ep))
		}
	}
	pings := map[uint64]Ping{}
	for i := range 200 {
		pings[uint64(i+1)] = alive(0)
	}
	b.ResetTimer()
	for range b.N {
		Decide(Input{Now: t0, Work: work, Pings: pings})
	}
}

// TestPingerUmask: the pinger runs with the service's umask, as its
// instances do.
func TestPingerUmask(t *testing.T) {
	w := service(1, "CUSTOM:x", started, proc(0, "R"), func(w *state.Work) {
		w.Umask = "0077"
		w.Service.Spec.PingExecutable = "/bin/ping-it"
	})
	out := Decide(Input{Now: t0, Work: []*state.Work{w}})
	if len(out.Pingers) != 1 || out.Pingers[0].Umask != "0077" {
		t.Fatalf("pingers %+v, want one with umask 0077", out.Pingers)
	}
	if req := PingRequest(out.Pingers[0], wire.PingState{}); req.Umask != "0077" {
		t.Fatalf("ping request umask %q, want 0077", req.Umask)
	}
}
