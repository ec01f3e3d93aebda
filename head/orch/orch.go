package orch

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/wire"
)

// Pusher delivers a desired state to a node. It may block for a network
// round trip; the orchestrator calls it from one goroutine per node.
type Pusher interface {
	PushDesired(ctx context.Context, node, peer string, ds wire.DesiredState) error
}

// Config configures an Orchestrator.
type Config struct {
	FSM    *state.FSM
	Apply  state.Applier
	Push   Pusher
	Now    func() time.Time
	Logger *slog.Logger
	// Scheduler is the scheduler configuration until SetScheduler; nil
	// means rm.DefaultConfig.
	Scheduler *rm.Config
	// Demand returns the items a job driver holds queued for a job and the
	// number of its processes holding items (ok false: it does not know
	// the job). The scheduler asks for no more processes than that work
	// needs. Nil: the job's remaining item count alone.
	Demand func(workID uint64) (queued, holding int, ok bool)
	// Wanted returns the instance ids the Service Manager wants held for a
	// service (nil: none).
	Wanted func(serviceID uint64) []int
	// Cycle is the longest time between scheduling cycles.
	Cycle time.Duration
	// MinInterval is the shortest time between scheduling cycles.
	MinInterval time.Duration
	// NodeTimeout declares a node down after this long without heartbeats
	// at the base Heartbeat interval; it stretches with the interval
	// (HeartbeatInterval, NodeTimeoutNow).
	NodeTimeout time.Duration
	// FailoverGrace is the time every node has, from the start of this
	// term, to send the new head a heartbeat: no node is declared down
	// before it has passed (NodeTimeout if zero). See checkNodes.
	FailoverGrace time.Duration
	// Heartbeat is the agents' configured heartbeat interval (1 s if
	// zero).
	Heartbeat time.Duration
	// MaxHeartbeatsPerSecond bounds the heartbeats the head asks for: with
	// more nodes than that per Heartbeat, the interval it announces grows
	// to nodes / MaxHeartbeatsPerSecond. Zero: the interval never grows.
	MaxHeartbeatsPerSecond int
	// Grace is the time between SIGTERM and SIGKILL when stopping.
	Grace time.Duration
	// ProcEnded is told when the end of a job's process has been recorded
	// (the job driver re-queues its items then).
	ProcEnded func(ctx context.Context, workID uint64, procID string)
	// Metrics records cycle time, preemptions and queue wait (nil-safe).
	Metrics Metrics
	// Tick runs at every cycle (the job driver's time limits).
	Tick func(ctx context.Context, now time.Time)
	// SubmitPlaceBudget is the longest the last scheduling pass may have
	// taken for Submit to place new work at once (a submission then waits
	// for one more such pass). Zero: 2 ms; negative: Submit never places.
	SubmitPlaceBudget time.Duration
}

// sentVersion is the version of the desired state last pushed to a node.
type sentVersion struct {
	version uint64
	at      time.Time
}

// resendAfter is how long a push may take before a heartbeat that does not
// show it triggers a resend.
const resendAfter = time.Second

// Node is the head's volatile view of one node.
type Node struct {
	Name     string
	Peer     string
	State    string               // Up, Down, Unknown
	Admin    state.NodeAdminState // state.NodeNormal, NodeVariedOff, NodeQuiescing
	LastSeen time.Time
	HB       wire.Heartbeat
	// Inventory: this head has had a full heartbeat from the node, so HB
	// holds its inventory. Until then the node stays Unknown.
	Inventory bool
	// gpus is HB.GPUs as the scheduler sees them, made when a full
	// heartbeat brings them (not every cycle).
	gpus []rm.GPU
}

// Node states.
const (
	NodeUp   = "Up"
	NodeDown = "Down"
	// NodeUnknown is a node that runs processes according to the durable
	// state but has not yet sent this head a heartbeat (the head just took
	// over). Its processes stand and it gets no new work; without a
	// heartbeat within node_timeout it is declared down like any other.
	NodeUnknown = "Unknown"
)

// Orchestrator runs scheduling and desired state for one leadership term.
type Orchestrator struct {
	cfg Config
	log *slog.Logger

	trigger chan struct{}

	// placeMu is held from reading the state for a plan to applying it,
	// by the cycle and by Submit when it places work: one plan at a time
	// is made and committed, so no plan is made from a state that lacks
	// another's assignments.
	placeMu   sync.Mutex
	carry     rm.Carry      // the scheduler's memory; under placeMu
	rmSched   rm.Scheduler  // keeps the scheduler's working memory between passes; under placeMu
	lastSched time.Duration // what the last scheduling pass took; under placeMu
	// submitting counts the Submit calls under way.
	submitting atomic.Int32

	mu       sync.Mutex
	sched    *rm.Config
	classes  []rm.ClassUsage // per-class usage of the last cycle
	nodes    map[string]*Node
	mems     memIndex           // schedulable memory of nodes, for the submit check
	gpuKinds gpuIndex           // the kinds of GPUs of nodes, for the submit check
	pending  map[uint64]Waiting // work id → why it waits or is held
	version  uint64
	sent     map[string]string      // node → fingerprint of last desired pushed
	sentVer  map[string]sentVersion // node → version of the last desired pushed
	pushers  map[string]chan wire.DesiredState
	// pushLocks holds a lock per node, held by pushNode from computing
	// the node's desired state to queueing it: cycles, reports,
	// heartbeats and Submit push from their own goroutines. Taken
	// without mu held; the map itself is under mu.
	pushLocks map[string]*sync.Mutex
	runCtx    context.Context            // Run's context: pushers live as long as the term, not the call that first pushed
	stopped   bool                       // Run has returned: no new pushers
	reported  map[string]wire.ProcStatus // proc id → last status applied
	endedQ    []endedRef                 // the ended ones in reported, first ended first (prune)
	live      map[string]wire.ProcStatus // proc id → newest status an agent reported
	stretch   stretch                    // the announced heartbeat interval
	wg        sync.WaitGroup

	// termStart is when Run began, the start of the failover grace (under mu).
	termStart time.Time
	// endedOn files the ended processes in reported under their node, so
	// that a node's desired state acknowledges them without a scan.
	endedOn map[string]map[string]struct{}
}

// New returns an orchestrator; call Run to start it.
func New(cfg Config) *Orchestrator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Cycle == 0 {
		cfg.Cycle = time.Second
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 10 * time.Second
	}
	if cfg.FailoverGrace < cfg.NodeTimeout {
		cfg.FailoverGrace = cfg.NodeTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Grace == 0 {
		cfg.Grace = 15 * time.Second
	}
	if cfg.Scheduler == nil {
		cfg.Scheduler = rm.DefaultConfig()
	}
	if cfg.Demand == nil {
		cfg.Demand = func(uint64) (int, int, bool) { return 0, 0, false }
	}
	if cfg.SubmitPlaceBudget == 0 {
		cfg.SubmitPlaceBudget = 2 * time.Millisecond
	}
	return &Orchestrator{
		cfg:       cfg,
		sched:     cfg.Scheduler,
		log:       cfg.Logger.With("component", "orch"),
		trigger:   make(chan struct{}, 1),
		nodes:     make(map[string]*Node),
		pending:   make(map[uint64]Waiting),
		sent:      make(map[string]string),
		sentVer:   make(map[string]sentVersion),
		pushers:   make(map[string]chan wire.DesiredState),
		pushLocks: make(map[string]*sync.Mutex),
		reported:  make(map[string]wire.ProcStatus),
		endedOn:   make(map[string]map[string]struct{}),
		live:      make(map[string]wire.ProcStatus),
	}
}

// Trigger asks for a scheduling cycle soon. Changes to the durable state
// need no trigger (Run follows state.FSM.SchedulingChanged); Trigger is for
// volatile inputs the state does not hold, such as a pinger's answer.
func (o *Orchestrator) Trigger() {
	select {
	case o.trigger <- struct{}{}:
	default:
	}
}

// Run schedules until ctx ends, then waits for its pushers. It runs a cycle
// at once, then whenever the state applies a change a cycle acts on
// (state.FSM.SchedulingChanged), on Trigger, and at least every Cycle.
func (o *Orchestrator) Run(ctx context.Context) {
	o.mu.Lock()
	o.runCtx = ctx
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.stopped = true
		o.mu.Unlock()
		o.wg.Wait()
	}()
	o.seedNodes()
	backstop := time.NewTimer(tick.Until(time.Now(), o.cfg.Cycle))
	defer backstop.Stop()
	var last time.Time
	changed := o.cfg.FSM.SchedulingChanged()
	o.Trigger()
	for {
		select {
		case <-ctx.Done():
			return
		case <-backstop.C:
			backstop.Reset(tick.Until(time.Now(), o.cfg.Cycle))
		case <-o.trigger:
		case <-changed:
		}
		if wait := o.cfg.MinInterval - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		// Take the channel before the cycle reads the state: a change
		// applied from now on, during the cycle too, asks for the next one.
		changed = o.cfg.FSM.SchedulingChanged()
		last = time.Now()
		if err := o.cycle(ctx); err != nil && ctx.Err() == nil {
			o.log.Warn("scheduling cycle failed", "err", err)
		}
	}
}

// cycle runs one scheduling pass and pushes desired states.
func (o *Orchestrator) cycle(ctx context.Context) error {
	now := o.cfg.Now()
	o.checkNodes(ctx, now)
	if o.cfg.Tick != nil {
		o.cfg.Tick(ctx, now)
	}
	if err := o.plan(ctx, now); err != nil {
		return err
	}
	o.pushAll(ctx)
	o.prune(now)
	return nil
}

// plan runs the scheduler over the state and applies its plan, under
// placeMu.
func (o *Orchestrator) plan(ctx context.Context, now time.Time) error {
	o.placeMu.Lock()
	defer o.placeMu.Unlock()
	active, nodes, _ := o.snapshot()
	t0 := time.Now()
	in := o.input(now, nodes, active)
	asked := requested(in)
	plan := o.rmSched.Schedule(in)
	o.carry = plan.Carry
	cmds, pending := planCommands(plan, active, now.UnixMilli(), asked, gpuAsksOf(in))
	o.lastSched = time.Since(t0)
	o.observeCycle(o.lastSched, cmds, active, now)
	o.mu.Lock()
	o.pending, o.classes = pending, plan.Classes
	o.mu.Unlock()
	if len(cmds) > 0 {
		if _, err := o.cfg.Apply.Apply(ctx, cmds...); err != nil {
			return fmt.Errorf("apply plan: %w", err)
		}
	}
	return nil
}

// snapshot returns what the scheduler plans from: a copy of the active
// work, the nodes with their admin states, and the id the next
// submission gets.
func (o *Orchestrator) snapshot() (active []*state.Work, nodes []Node, nextID uint64) {
	var admin map[string]state.NodeAdminState
	o.cfg.FSM.View(func(v *state.View) {
		for _, w := range v.Active() {
			active = append(active, w.Copy()) // the scheduler sees a job's counters, not its items
		}
		admin = v.NodeAdmin()
		nextID = v.NextID()
	})
	nodes = o.Nodes()
	for i := range nodes {
		nodes[i].Admin = admin[nodes[i].Name]
	}
	return active, nodes, nextID
}

// endedRef is an ended process in prune's queue: its id and when it
// ended, as first reported.
type endedRef struct {
	id string
	at int64 // Unix milliseconds
}

// prune forgets reports of processes that ended long ago; agents stop
// repeating them once acknowledged. It takes them from the front of the
// queue of ended reports (noteReported files them in the order they come,
// which is about the order they ended), so a cycle costs what it prunes,
// not what ended in the last five minutes: a walk over every report it
// held was 55 % of a head's CPU after 10,000 short jobs.
func (o *Orchestrator) prune(now time.Time) {
	cutoff := now.Add(-5 * time.Minute).UnixMilli()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for n < len(o.endedQ) && o.endedQ[n].at < cutoff {
		ref := o.endedQ[n]
		n++
		st, ok := o.reported[ref.id]
		switch {
		case !ok || !st.Ended() || st.EndedAt == 0:
			// forgotten already
		case st.EndedAt >= cutoff:
			o.endedQ = append(o.endedQ, endedRef{id: ref.id, at: st.EndedAt}) // reported again, later
		default:
			o.forgetReported(ref.id)
		}
	}
	o.endedQ = o.endedQ[n:]
}

// Pending returns why a piece of work waits, or "".
func (o *Orchestrator) Pending(id uint64) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending[id].Reason
}

// Waiting says why work has fewer processes than it wants, or wants fewer
// than it could use, as of the last scheduling cycle.
type Waiting struct {
	Code   rm.WaitCode // classifies Reason
	Reason string      // why it has fewer processes than it wants ("" = it has them)
	Have   int         // its processes after the cycle's plan
	Want   int         // the processes it wants (0 = unknown)
	// HeldCode and Held say why a job wants fewer processes than its
	// items could use (Plan.Held; its Reason formats the words).
	HeldCode rm.WaitCode
	Held     rm.Held
}

// Waiting returns what the last scheduling cycle said about a piece of
// work, and false when it said nothing.
func (o *Orchestrator) Waiting(id uint64) (Waiting, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.pending[id]
	return w, ok
}

// Heartbeat records a node's heartbeat and folds its process states in.
// A delta heartbeat (wire.Heartbeat.Delta) is laid over the node's last
// full one; from a node this head has no full heartbeat of yet it only
// proves the node alive (the node stays Unknown, its processes stand)
// and folds its process changes in, until the full one comes (agents send
// one when they follow a new head, and every few heartbeats).
func (o *Orchestrator) Heartbeat(ctx context.Context, hb wire.Heartbeat, peer string) {
	o.mu.Lock()
	n := o.nodes[hb.Node]
	if n == nil {
		n = &Node{Name: hb.Node, State: NodeUnknown}
		o.nodes[hb.Node] = n
		o.mems.add(0)
	}
	if hb.Seq < n.HB.Seq && n.State == NodeUp && hb.Time <= n.HB.Time {
		o.mu.Unlock()
		return // stale, reordered
	}
	if hb.Delta && !n.Inventory {
		n.Peer, n.LastSeen = peer, o.cfg.Now()
		n.HB.Seq, n.HB.Time, n.HB.DesiredVersion = hb.Seq, hb.Time, hb.DesiredVersion
		if n.State == NodeDown {
			n.State = NodeUnknown
		}
		o.mu.Unlock()
		o.Report(ctx, hb.Node, hb.Procs)
		return
	}
	isNew := n.State != NodeUp || !n.Inventory || n.HB.MemSchedulable != hb.Over(n.HB).MemSchedulable
	if !hb.Delta && (!n.Inventory || !slices.Equal(n.HB.GPUs, hb.GPUs)) {
		if n.Inventory {
			o.gpuKinds.remove(n.gpus)
		}
		n.gpus, isNew = rmGPUs(hb.GPUs), true
		o.gpuKinds.add(n.Name, n.gpus)
	}
	o.mems.change(n.HB.MemSchedulable, hb.Over(n.HB).MemSchedulable)
	n.Peer, n.HB, n.LastSeen, n.State, n.Inventory = peer, hb.Over(n.HB), o.cfg.Now(), NodeUp, true
	// Resend only what this node missed: its own last push, once it had
	// time to arrive (the heartbeat may have crossed it).
	sv := o.sentVer[hb.Node]
	resend := o.sent[hb.Node] != "" && hb.DesiredVersion < sv.version && o.cfg.Now().Sub(sv.at) > resendAfter
	o.mu.Unlock()
	o.Report(ctx, hb.Node, hb.Procs)
	if isNew {
		o.Trigger()
	}
	if resend {
		o.pushNode(hb.Node, true)
	}
}

// Report folds process states from an agent into the durable state. Only
// changes that matter after failover are applied: a process started, or
// ended.
func (o *Orchestrator) Report(ctx context.Context, node string, procs []wire.ProcStatus) {
	var cmds []state.Command
	ts := o.cfg.Now().UnixMilli()
	o.mu.Lock()
	refiled := false
	for _, st := range procs {
		o.live[st.ID] = st
		prev, seen := o.reported[st.ID]
		if seen && prev.State == st.State && prev.PID == st.PID {
			if st.Ended() && prev.Node == node && !o.isEndedOn(node, st.ID) {
				// Still reported after its acknowledgement was
				// delivered (delivered): acknowledge it again.
				o.noteReported(prev)
				refiled = true
			}
			continue
		}
		st := st
		st.Node = node
		cmds = append(cmds, state.Command{Type: state.CmdProc, Time: ts, Proc: &st})
	}
	o.mu.Unlock()
	if len(cmds) == 0 {
		if refiled {
			o.pushNode(node, false)
		}
		return
	}
	// Only apply what differs from the durable state.
	var needed []state.Command
	o.cfg.FSM.View(func(v *state.View) {
		for _, c := range cmds {
			w := v.Work(c.Proc.WorkID)
			if w == nil {
				continue
			}
			for _, p := range w.Procs {
				if p.ID == c.Proc.ID && !p.Ended() && (c.Proc.Ended() || p.State == wire.ProcStarting && c.Proc.State == wire.ProcRunning) {
					needed = append(needed, c)
				}
			}
		}
	})
	if later, ok := o.cfg.Apply.(state.LaterApplier); ok && len(needed) > 0 && !slices.ContainsFunc(needed, endsProc) {
		// Only starts: written with the next entry (often the process's
		// own end), at the latest startLinger from now. Until then a
		// heartbeat may repeat them; applying a start twice changes nothing.
		acks := slices.ContainsFunc(cmds, endsProc) // ended before, reported again
		later.ApplyLater(needed, startLinger, func(_ []state.Result, err error) {
			if o.noted(node, cmds, err) && acks {
				o.pushNode(node, false)
			}
		})
		return
	}
	var err error
	if len(needed) > 0 {
		_, err = o.cfg.Apply.Apply(ctx, needed...)
	}
	if !o.noted(node, cmds, err) {
		return
	}
	for _, c := range needed {
		if c.Proc.Ended() {
			if o.cfg.ProcEnded != nil {
				o.cfg.ProcEnded(ctx, c.Proc.WorkID, c.Proc.ID)
			}
		}
	}
	// Acks for ended processes go out with the next desired state.
	o.pushNode(node, false)
}

// startLinger is how long a process's start, alone in a report, may wait
// for an entry to share (state.LaterApplier): a 5 ms process's start and
// end then cost one fsync, not two.
const startLinger = 20 * time.Millisecond

func endsProc(c state.Command) bool { return c.Proc.Ended() }

// noted files reported states once applied (err == nil) and says so; it
// logs why not.
func (o *Orchestrator) noted(node string, cmds []state.Command, err error) bool {
	if err != nil {
		o.log.Warn("cannot record process reports", "node", node, "err", err)
		return false
	}
	o.mu.Lock()
	for _, c := range cmds {
		o.noteReported(*c.Proc)
	}
	o.mu.Unlock()
	return true
}

// seedNodes starts the term's failover grace and records the nodes that
// run processes according to the durable state as Unknown until they send
// a heartbeat, so that a new head neither places their work again nor
// forgets to write it off if they never return. The other nodes appear
// with their first heartbeat: the head rebuilds its view of the nodes
// from heartbeats, which carry their inventory and processes.
func (o *Orchestrator) seedNodes() {
	now := o.cfg.Now()
	var names []string
	o.cfg.FSM.View(func(v *state.View) {
		for _, w := range v.Active() {
			for _, p := range w.Live() {
				names = append(names, p.Node)
			}
		}
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	o.termStart = now
	for _, name := range names {
		if name != "" && o.nodes[name] == nil {
			o.nodes[name] = &Node{Name: name, State: NodeUnknown, LastSeen: now}
			o.mems.add(0)
		}
	}
}

// downAt is when a node that sends no more heartbeats is declared down:
// NodeTimeout after its last heartbeat, and never within FailoverGrace of
// the term's start. A new head thus writes nothing off while the agents
// find it and its heartbeat intake catches up after an election, whether
// a node was Up under the old head or not (its heartbeat may have been
// delayed by the election itself). o.mu must be held.
func (o *Orchestrator) downAt(n *Node, timeout time.Duration) time.Time {
	at := n.LastSeen.Add(timeout)
	if grace := o.termStart.Add(o.cfg.FailoverGrace); at.Before(grace) {
		at = grace
	}
	return at
}

// overdue reports whether node n, up or unknown, is past downAt at now:
// the next checkNodes declares it down. o.mu must be held.
func (o *Orchestrator) overdue(n *Node, now time.Time, timeout time.Duration) bool {
	return (n.State == NodeUp || n.State == NodeUnknown) && now.After(o.downAt(n, timeout))
}

// checkNodes declares nodes without heartbeats down (downAt) and writes
// off the processes of every down node: a down node runs nothing the state
// counts on (the scheduler places nothing there, and its return makes it Up
// or Unknown first), so a write-off that could not be applied is tried
// again at the next cycle. The job driver re-queues the items of each
// process written off (ProcEnded); when the node comes back, its desired
// state no longer lists them and its agent stops them.
func (o *Orchestrator) checkNodes(ctx context.Context, now time.Time) {
	var dead, down []string
	o.mu.Lock()
	timeout := o.nodeTimeoutLocked(now)
	for name, n := range o.nodes {
		if o.overdue(n, now, timeout) {
			n.State = NodeDown
			dead = append(dead, name)
		}
		if n.State == NodeDown {
			down = append(down, name)
		}
	}
	o.mu.Unlock()
	if len(down) == 0 {
		return
	}
	sort.Strings(dead)
	sort.Strings(down)
	for _, d := range dead {
		o.log.Warn("node down", "node", d, "timeout", timeout)
	}
	ts := now.UnixMilli()
	var cmds []state.Command
	o.cfg.FSM.View(func(v *state.View) {
		for _, d := range down {
			for w, p := range v.NodeProcs(d) {
				if w.Kind == wire.WorkReservation || w.Ended() {
					continue
				}
				cmds = append(cmds, state.Command{Type: state.CmdProc, Time: ts, Proc: &wire.ProcStatus{
					ID: p.ID, WorkID: w.ID, State: wire.ProcLost, EndedAt: ts, ExitCode: -1,
					Reason: fmt.Sprintf("node %s stopped sending heartbeats for %s", d, timeout)}})
			}
		}
	})
	if len(cmds) > 0 {
		if _, err := o.cfg.Apply.Apply(ctx, cmds...); err != nil {
			o.log.Warn("cannot write off processes of dead nodes", "err", err)
			return
		}
		for _, c := range cmds {
			if o.cfg.ProcEnded != nil {
				o.cfg.ProcEnded(ctx, c.Proc.WorkID, c.Proc.ID)
			}
		}
	}
}

// Nodes returns the head's view of all nodes, sorted by name.
func (o *Orchestrator) Nodes() []Node {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Node, 0, len(o.nodes))
	for _, n := range o.nodes {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Live returns the newest status an agent reported for a process.
func (o *Orchestrator) Live(procID string) (wire.ProcStatus, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st, ok := o.live[procID]
	return st, ok
}

// Metrics is what the orchestrator reports; *web.HeadMetrics implements it
// and its methods accept a nil receiver.
type Metrics interface {
	ObserveCycle(d time.Duration)
	Preempted(n int)
	QueueWait(d time.Duration)
}

// observeCycle records a cycle's cost, its preemptions and the queue wait
// of work getting its first process.
func (o *Orchestrator) observeCycle(d time.Duration, cmds []state.Command, active []*state.Work, now time.Time) {
	m := o.cfg.Metrics
	if m == nil {
		return
	}
	m.ObserveCycle(d)
	stops := 0
	first := map[uint64]bool{}
	for _, c := range cmds {
		switch c.Type {
		case state.CmdStopProc:
			stops++
		case state.CmdAssign:
			first[c.WorkID] = true
		}
	}
	if stops > 0 {
		m.Preempted(stops)
	}
	for _, w := range active {
		if first[w.ID] && len(w.Procs) == 0 {
			m.QueueWait(now.Sub(time.UnixMilli(w.SubmittedAt)))
		}
	}
}
