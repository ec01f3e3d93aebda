package sm

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// Ping is the newest result of a service's pinger (soft state).
type Ping struct {
	Seq     uint64 // grows with every ping of the service's current pinger
	At      time.Time
	Alive   bool
	Healthy bool
	Info    string
	Missed  int // consecutive pings that failed or timed out
	// Answer carries a custom pinger's requests (additions, deletions,
	// autostart, last_use); nil for the built-in pingers.
	Answer *wire.PingAnswer
}

// Soft is the Service Manager's memory between decisions; it is not
// durable: a new head starts with a zero Soft.
type Soft struct {
	// Idle is when a reference-started service lost its last reference.
	Idle map[uint64]time.Time
	// Applied is the ping whose answer was obeyed, per service.
	Applied map[uint64]uint64
}

// Input is everything one decision looks at.
type Input struct {
	Now time.Time
	// Work is the active work (copies, sorted by id): services, and
	// anything that names services in Deps.
	Work  []*state.Work
	Pings map[uint64]Ping
	Soft  Soft
}

// Status is a service as users see it.
type Status struct {
	State     string
	Reason    string
	Available bool
	Refs      []uint64
	Running   int
}

// Pinger says that a service's pinger should run, and how.
type Pinger struct {
	Service  uint64
	Endpoint string
	User     string
	UID, GID uint32
	Groups   []uint32
	Home     string
	Exec     string // custom pinger; "" = built-in for HTTP:/TCP:
	Args     []string
	Env      []string
	Dir      string
	Interval time.Duration
	Timeout  time.Duration
	// Umask is the service's umask (four octal digits; "" means 0022):
	// the pinger runs with it, as the instances do.
	Umask string
	// Java is set for a Java pinger (service_ping_class, or ducc's
	// UIMA-AS pinger): Args are then its service_ping_arguments.
	Java *JavaPing
}

// JavaPing is a Java pinger as registered: the Manager turns it into a
// JVM running ducc's pinger host (JavaRequest).
type JavaPing struct {
	// Class is service_ping_class: a class, or a registered pinger's
	// name; spec.UIMAASPingClass for a UIMA-AS: endpoint without one.
	Class     string
	Classpath string
	JVMArgs   []string
	DoLog     bool
	// FailureMax and FailureWindowMin are the service's failure limit
	// and window, which DUCC hands its pingers in init.
	FailureMax, FailureWindowMin int
}

// Key identifies the pinger's configuration: a pinger whose Key changed is
// restarted.
func (p Pinger) Key() string {
	k := fmt.Sprintf("%s|%s|%q|%q|%s|%s|%s|%d", p.Endpoint, p.Exec, p.Args, p.Env, p.Dir, p.Interval, p.Timeout, p.UID)
	if j := p.Java; j != nil {
		k += fmt.Sprintf("|java:%s|%s|%q|%t|%d|%d", j.Class, j.Classpath, j.JVMArgs, j.DoLog, j.FailureMax, j.FailureWindowMin)
	}
	return k
}

// Output is one decision.
type Output struct {
	// Commands to apply through Raft, in order.
	Commands []state.Command
	// Status of every active service.
	Status map[uint64]Status
	// Wanted lists, per service, the instance ids the scheduler should
	// hold: those that run and at most one new one (instances start one
	// at a time).
	Wanted map[uint64][]int
	// Waiting says why work in WaitingForServices waits.
	Waiting map[uint64]string
	// Pingers that should run, by service id.
	Pingers []Pinger
	Soft    Soft
}

type svc struct {
	w    *state.Work
	s    *state.Service
	refs []uint64
}

// Decide is the Service Manager's policy: a pure function of its input.
// Its steps, in order: obey the custom pingers' answers, follow the
// references (starting services that are referenced), stop services whose
// linger ran out, decide each service's instances and status, hold back
// services whose own dependencies are not available, and release or fail
// work that waits for services.
func Decide(in Input) Output {
	d := newDecision(in)
	d.obeyPingAnswers()
	d.followReferences()
	d.lingerAfterLastReference()
	d.decideServices()
	d.waitForOwnDependencies()
	d.decideWaitingWork()
	return d.out
}

// decision is the state of one Decide: its input, the output it builds,
// and the active services (by id, and by endpoint).
type decision struct {
	in    Input
	out   Output
	now   int64 // in.Now in Unix milliseconds, the time of its commands
	svcs  []*svc
	byEP  map[string]*svc
	avail map[string]bool // per endpoint, once decideServices ran
}

// newDecision starts a decision with an empty output and the services
// that are neither ended nor being canceled, by id.
func newDecision(in Input) *decision {
	d := &decision{in: in, now: in.Now.UnixMilli(), byEP: map[string]*svc{}, avail: map[string]bool{},
		out: Output{Status: map[uint64]Status{}, Wanted: map[uint64][]int{}, Waiting: map[uint64]string{},
			Soft: Soft{Idle: map[uint64]time.Time{}, Applied: map[uint64]uint64{}}}}
	for _, w := range in.Work {
		if w.Service != nil && !w.Ended() && !w.Canceling {
			v := &svc{w: w, s: w.Service}
			d.byEP[w.Service.Spec.Endpoint] = v
			d.svcs = append(d.svcs, v)
		}
	}
	sort.Slice(d.svcs, func(i, j int) bool { return d.svcs[i].w.ID < d.svcs[j].w.ID })
	return d
}

// change records a change of v's service as a command.
func (d *decision) change(v *svc, ch state.ServiceChange) {
	d.out.Commands = append(d.out.Commands, state.Command{Type: state.CmdSvcChange, Time: d.now, WorkID: v.w.ID, Service: &ch})
}

// obeyPingAnswers obeys each custom pinger's newest answer once: the ping
// applied is kept in Soft.Applied, and an answer no newer is ignored.
func (d *decision) obeyPingAnswers() {
	for _, v := range d.svcs {
		id := v.w.ID
		p, ok := d.in.Pings[id]
		d.out.Soft.Applied[id] = d.in.Soft.Applied[id]
		if !ok || p.Answer == nil || p.Seq <= d.in.Soft.Applied[id] {
			continue
		}
		d.out.Soft.Applied[id] = p.Seq
		d.obeyAnswer(v, p.Answer)
	}
}

// obeyAnswer applies one pinger answer to v: instances added (up to the
// maximum) and deleted while the service runs, autostart set, last use
// moved forward.
func (d *decision) obeyAnswer(v *svc, a *wire.PingAnswer) {
	s := v.s
	running := s.Started && !s.Disabled && !s.PingOnly()
	if n := min(a.Additions, s.Spec.MaxInstances-len(s.IDs)); running && n > 0 {
		d.change(v, state.ServiceChange{Op: state.SvcOpAdd, N: int64(n)})
		addIDs(s, n)
	}
	var del []int
	for _, i := range a.Deletions {
		if slices.Contains(s.IDs, i) && !slices.Contains(del, i) {
			del = append(del, i)
		}
	}
	if running && len(del) > 0 {
		slices.Sort(del)
		d.change(v, state.ServiceChange{Op: state.SvcOpDelete, IDs: del})
		s.IDs = slices.DeleteFunc(s.IDs, func(i int) bool { return slices.Contains(del, i) })
	}
	if a.Autostart != nil && *a.Autostart != s.Autostart {
		d.change(v, state.ServiceChange{Op: state.SvcOpAutostart, Bool: *a.Autostart})
		s.Autostart = *a.Autostart
		if s.Autostart && !s.Disabled {
			s.Started, s.ByRefs = true, false
		}
	}
	if a.LastUse > s.LastUse {
		d.change(v, state.ServiceChange{Op: state.SvcOpLastUse, N: a.LastUse})
		s.LastUse = a.LastUse
	}
}

// followReferences finds each service's references (active work naming
// it, and started services naming it) and starts, by reference, the
// services that are referenced but not started, until nothing changes:
// reference starts propagate down chains.
func (d *decision) followReferences() {
	for changed := true; changed; {
		d.collectReferences()
		changed = false
		for _, v := range d.svcs {
			s := v.s
			if len(v.refs) > 0 && !s.Started && !s.Disabled {
				d.change(v, state.ServiceChange{Op: state.SvcOpRefStart})
				s.Started, s.ByRefs = true, true
				if len(s.IDs) == 0 && !s.PingOnly() {
					addIDs(s, max(s.Spec.Instances, 1))
				}
				changed = true
			}
		}
	}
}

// collectReferences sets each service's references: the ids of the work,
// active and not a service that is stopped or disabled, naming it in its
// dependencies.
func (d *decision) collectReferences() {
	for _, v := range d.svcs {
		v.refs = nil
	}
	for _, w := range d.in.Work {
		if w.Ended() || w.Canceling || len(w.Deps) == 0 {
			continue
		}
		if w.Service != nil && (!w.Service.Started || w.Service.Disabled) {
			continue
		}
		for _, dep := range w.Deps {
			if v := d.byEP[dep]; v != nil && v.w.ID != w.ID && !slices.Contains(v.refs, w.ID) {
				v.refs = append(v.refs, w.ID)
			}
		}
	}
}

// lingerAfterLastReference stops a service started by reference once it
// has had no reference for its linger time; the time it became idle is
// kept in Soft.Idle meanwhile.
func (d *decision) lingerAfterLastReference() {
	in := d.in
	for _, v := range d.svcs {
		s, id := v.s, v.w.ID
		if !s.Started || !s.ByRefs || s.Autostart || len(v.refs) > 0 {
			continue
		}
		since, ok := in.Soft.Idle[id]
		if !ok {
			since = in.Now
		}
		if in.Now.Sub(since) >= time.Duration(s.Spec.LingerMS)*time.Millisecond {
			d.change(v, state.ServiceChange{Op: state.SvcOpRefStop})
			s.Started = false
			continue
		}
		d.out.Soft.Idle[id] = since
	}
}

// decideServices decides each service's instances, readiness, pinger and
// status (decideService), and records which endpoints are available.
func (d *decision) decideServices() {
	for _, v := range d.svcs {
		st := decideService(d.in, v, d.now, &d.out)
		d.out.Status[v.w.ID] = st
		d.avail[v.s.Spec.Endpoint] = st.Available
	}
}

// waitForOwnDependencies holds back a started service whose own
// dependencies are not all available: while none of its instances is
// live, none is wanted and it is not available, with the reason.
func (d *decision) waitForOwnDependencies() {
	for _, v := range d.svcs {
		if len(v.w.Deps) == 0 || !v.s.Started || v.s.Disabled {
			continue
		}
		why := depsWait(v.w.Deps, d.byEP, d.avail, d.out.Status)
		if why == "" {
			continue
		}
		live := 0
		for _, p := range v.w.Live() {
			if !p.Stop {
				live++
			}
		}
		if live == 0 {
			d.out.Wanted[v.w.ID] = nil
			st := d.out.Status[v.w.ID]
			st.State, st.Reason = wire.SvcStateNotAvailable, why
			d.out.Status[v.w.ID] = st
		}
	}
}

// decideWaitingWork decides the work waiting for services: it fails work
// that names a service not registered, keeps the reason of work whose
// services are not all available, and releases the rest.
func (d *decision) decideWaitingWork() {
	for _, w := range d.in.Work {
		if w.Service != nil || w.State != state.StateWaitingForServices || w.Ended() || w.Canceling {
			continue
		}
		var unknown []string
		for _, dep := range w.Deps {
			if d.byEP[dep] == nil {
				unknown = append(unknown, dep)
			}
		}
		if len(unknown) > 0 {
			d.out.Commands = append(d.out.Commands, state.Command{Type: state.CmdFinish, Time: d.now, WorkID: w.ID,
				Completion: state.CompletionServicesUnavail, Reason: "service not registered: " + strings.Join(unknown, ", ")})
			continue
		}
		if why := depsWait(w.Deps, d.byEP, d.avail, d.out.Status); why != "" {
			d.out.Waiting[w.ID] = why
			continue
		}
		d.out.Commands = append(d.out.Commands, state.Command{Type: state.CmdDepsMet, Time: d.now, WorkID: w.ID})
	}
}

// depsWait says why the dependencies are not all available, or "".
func depsWait(deps []string, byEP map[string]*svc, avail map[string]bool, status map[uint64]Status) string {
	var parts []string
	for _, d := range deps {
		v := byEP[d]
		switch {
		case v == nil:
			parts = append(parts, d+" (not registered)")
		case !avail[d]:
			st := status[v.w.ID]
			p := fmt.Sprintf("%s (service %d %s", d, v.w.ID, st.State)
			if st.Reason != "" {
				p += ": " + st.Reason
			}
			parts = append(parts, p+")")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "waiting for services: " + strings.Join(parts, "; ")
}

func addIDs(s *state.Service, n int) {
	for i := 0; n > 0 && len(s.IDs) < max(s.Spec.MaxInstances, 1); i++ {
		if !slices.Contains(s.IDs, i) {
			s.IDs = append(s.IDs, i)
			n--
		}
	}
	slices.Sort(s.IDs)
}

// decideService decides one service's instances and status.
func decideService(in Input, v *svc, now int64, out *Output) Status {
	w, s, id := v.w, v.s, v.w.ID
	ping, pinged := in.Pings[id]
	st := Status{Refs: v.refs}

	// Which instance ids should exist.
	var want []int
	switch {
	case s.PingOnly() || !s.Started:
	case s.Disabled:
		for _, p := range w.Live() {
			if !p.Stop && slices.Contains(s.IDs, p.Instance) {
				want = append(want, p.Instance)
			}
		}
	default:
		want = slices.Clone(s.IDs)
	}

	// Stop what is not wanted; mark instances ready once the pinger
	// answered alive after they started.
	live := map[int]*state.Proc{}
	allReady, anyReady := true, false
	for _, p := range w.Live() {
		if p.Stop {
			continue
		}
		if !slices.Contains(want, p.Instance) {
			reason := "service stopped"
			switch {
			case s.Started && !s.Disabled:
				reason = fmt.Sprintf("instance %d removed", p.Instance)
			case s.Disabled && s.Why != "":
				reason = "service disabled: " + s.Why
			}
			out.Commands = append(out.Commands, state.Command{Type: state.CmdStopProc, Time: now, WorkID: id, ProcID: p.ID, Reason: reason})
			continue
		}
		live[p.Instance] = p
		if p.State == wire.ProcRunning {
			st.Running++
			if p.ReadyAt == 0 && pinged && ping.Alive && ping.At.UnixMilli() >= p.StartedAt {
				out.Commands = append(out.Commands, state.Command{Type: state.CmdSvcChange, Time: now, WorkID: id, ProcID: p.ID,
					Service: &state.ServiceChange{Op: state.SvcOpReady}})
				p.ReadyAt = now
			}
		}
		if p.State != wire.ProcRunning || p.ReadyAt == 0 {
			allReady = false
		} else {
			anyReady = true
		}
	}
	held := make([]int, 0, len(want))
	started := false
	for _, i := range want {
		if live[i] != nil {
			held = append(held, i)
			continue
		}
		if !started && allReady && !s.Disabled {
			held = append(held, i)
			started = true
		}
	}
	slices.Sort(held)
	out.Wanted[id] = held

	// Pinger: ping-only services while enabled, others while an instance runs.
	if (s.PingOnly() && !s.Disabled) || st.Running > 0 {
		out.Pingers = append(out.Pingers, pingerOf(w))
	}

	// Status.
	st.Available = pinged && ping.Alive && (s.PingOnly() || anyReady)
	pingWhy := func() string {
		r := ping.Info
		if ping.Missed > 0 {
			r = strings.TrimSpace(fmt.Sprintf("%s (%d pings missed)", r, ping.Missed))
		}
		return r
	}
	switch {
	case s.Disabled:
		st.State, st.Reason = wire.SvcStateDisabled, s.Why
	case !s.PingOnly() && len(want) == 0 && len(w.Live()) > 0:
		st.State = wire.SvcStateStopping
	case !s.PingOnly() && len(want) == 0:
		st.State = wire.SvcStateStopped
	case !s.PingOnly() && st.Running == 0:
		st.State = wire.SvcStateStarting
	case !pinged:
		st.State, st.Reason = wire.SvcStateInitializing, "waiting for the pinger's first answer"
	case !s.PingOnly() && !anyReady:
		st.State, st.Reason = wire.SvcStateInitializing, pingWhy()
		if st.Reason == "" {
			st.Reason = "waiting for the pinger to answer alive"
		}
	case ping.Alive && ping.Healthy:
		st.State, st.Reason = wire.SvcStateAvailable, ping.Info
	case ping.Alive:
		st.State, st.Reason = wire.SvcStateAlert, ping.Info
	default:
		st.State, st.Reason = wire.SvcStateWaiting, pingWhy()
	}
	return st
}

func pingerOf(w *state.Work) Pinger {
	sp := w.Service.Spec
	p := Pinger{Service: w.ID, Endpoint: sp.Endpoint, User: w.User, UID: w.UID, GID: w.GID,
		Groups: w.Groups, Home: w.Home, Exec: sp.PingExecutable, Args: sp.PingArgs, Dir: sp.WorkingDirectory,
		Env: sp.Environment, Umask: w.Umask,
		Interval: time.Duration(sp.PingIntervalMS) * time.Millisecond,
		Timeout:  time.Duration(sp.PingTimeoutMS) * time.Millisecond}
	if p.Interval <= 0 {
		p.Interval = spec.DefaultPingInterval
	}
	if spec.JavaPinger(sp) {
		p.Java = &JavaPing{Class: sp.PingClass, Classpath: sp.PingClasspath, JVMArgs: sp.PingJVMArgs, DoLog: sp.PingDoLog,
			FailureMax: sp.FailuresLimit, FailureWindowMin: int(sp.FailuresWindowMS / 60_000)}
		if p.Java.Class == "" {
			p.Java.Class = spec.UIMAASPingClass
		}
	}
	if p.Timeout <= 0 {
		p.Timeout = spec.DefaultPingTimeout
		if p.Java != nil {
			p.Timeout = spec.DefaultJavaPingTimeout
		}
	}
	return p
}

// PingState builds what a custom pinger reads before a ping.
func PingState(w *state.Work, refs []uint64) wire.PingState {
	s := w.Service
	ps := wire.PingState{Service: w.ID, Endpoint: s.Spec.Endpoint, Instances: slices.Clone(s.IDs),
		References: refs, Autostart: s.Autostart, RunFailures: len(s.Failures), MaxInstances: s.Spec.MaxInstances}
	if ps.Instances == nil {
		ps.Instances = []int{}
	}
	ps.Active, ps.StartedAt = []int{}, []int64{}
	if ps.References == nil {
		ps.References = []uint64{}
	}
	for _, p := range w.Live() {
		if p.State == wire.ProcRunning && !p.Stop {
			ps.Active = append(ps.Active, p.Instance)
			ps.StartedAt = append(ps.StartedAt, p.StartedAt)
		}
	}
	return ps
}
