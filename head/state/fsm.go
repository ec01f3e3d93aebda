package state

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/wire"
)

// snapshotLimit bounds a snapshot read back from disk.
const snapshotLimit = 1 << 30

// FSM is the Raft state machine. It is safe for concurrent use: Raft
// applies from one goroutine while the head's handlers read.
type FSM struct {
	mu      sync.RWMutex
	nextID  uint64
	work    map[uint64]*Work
	changed chan struct{}
	// scheduling is closed at the next applied change a scheduling cycle
	// acts on; reschedule records such a change while a batch is applied.
	scheduling chan struct{}
	reschedule bool
	index      uint64
	// totals counts applied events for metrics (totals.go).
	totals Totals
	// sched is the scheduler configuration applied by `ducc admin
	// reconfigure` (YAML), nil until then; nodeAdmin holds vary-off and
	// quiesce states.
	sched     []byte
	nodeAdmin map[string]NodeAdminState
	// incarnation is the cluster's incarnation id (CmdIncarnation).
	incarnation string
	// idx indexes live work and processes for the hot paths.
	idx index
	// hist holds finished work in end order, purged jobs' items and the
	// accounting records (history.go).
	hist history
}

// New returns an empty state. Ids start at 1.
func New() *FSM {
	return &FSM{nextID: 1, work: make(map[uint64]*Work), changed: make(chan struct{}), scheduling: make(chan struct{}),
		nodeAdmin: map[string]NodeAdminState{}, idx: newIndex(), hist: newHistory()}
}

// Apply implements raft.FSM.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	cmds, err := decodeBatch(l.Data)
	if err != nil {
		return []Result{{Err: fmt.Errorf("decode log entry %d: %w", l.Index, err)}}
	}
	f.mu.Lock()
	res := make([]Result, len(cmds))
	for i := range cmds {
		res[i] = f.apply(&cmds[i])
		if w, procs := f.touched(&cmds[i], res[i]); w != nil {
			f.idx.reindex(w, procs)
			f.hist.noteEnded(w)
		}
		if res[i].Err == nil && schedules(&cmds[i]) {
			f.reschedule = true
		}
	}
	f.index = l.Index
	close(f.changed)
	f.changed = make(chan struct{})
	if f.reschedule {
		f.reschedule = false
		close(f.scheduling)
		f.scheduling = make(chan struct{})
	}
	f.mu.Unlock()
	return res
}

// Changed returns a channel that is closed at the next applied change.
func (f *FSM) Changed() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.changed
}

// SchedulingChanged returns a channel that is closed at the next applied
// change that a scheduling cycle acts on: work submitted, canceled or
// ended, a process ended, a job's last items received, a service
// registered or changed, dependencies met, the scheduler reconfigured, a
// node varied off or on. The orchestrator takes the channel before it reads
// the state for a cycle, so no such change is missed. The scheduler's own
// decisions (assignments, stops) and job progress (outcomes, readiness,
// re-queues) do not close it: the next periodic cycle sees them.
func (f *FSM) SchedulingChanged() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.scheduling
}

// schedules reports whether c, applied without error, is a change that
// SchedulingChanged announces. A work that ends on any other command is
// announced too (finish sets reschedule).
func schedules(c *Command) bool {
	switch c.Type {
	case CmdSubmit, CmdCancel, CmdFinish, CmdConfig, CmdNodeAdmin, CmdSvcRegister, CmdSvcChange, CmdDepsMet:
		return true
	case CmdItems:
		return c.Last // the job's demand is known: it may get processes
	case CmdProc:
		return c.Proc != nil && c.Proc.Ended() // its memory is free again
	}
	return false
}

// View calls fn with read access to the state. fn must not keep pointers.
func (f *FSM) View(fn func(v *View)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(&View{f: f})
}

// View is read access to the state during FSM.View.
type View struct{ f *FSM }

// Work returns one piece of work or nil.
func (v *View) Work(id uint64) *Work { return v.f.work[id] }

// SchedulerConfig is the YAML applied by `ducc admin reconfigure`, or nil.
func (v *View) SchedulerConfig() []byte { return v.f.sched }

// NodeAdmin returns the admin state of every node that has one.
func (v *View) NodeAdmin() map[string]NodeAdminState {
	out := make(map[string]NodeAdminState, len(v.f.nodeAdmin))
	for k, s := range v.f.nodeAdmin {
		out[k] = s
	}
	return out
}

// Incarnation is the cluster's incarnation id, "" until the first head
// named it.
func (v *View) Incarnation() string { return v.f.incarnation }

// NextID is the id the next submission will get.
func (v *View) NextID() uint64 { return v.f.nextID }

// Index is the Raft index of the last applied entry.
func (v *View) Index() uint64 { return v.f.index }

// All returns all work sorted by id, finished work included: it copies
// and sorts everything the state holds, so it is for listing history
// (`ducc jobs --all`), never for a hot path (use LiveWork, NodeProcs).
func (v *View) All() []*Work {
	out := make([]*Work, 0, len(v.f.work))
	for _, w := range v.f.work {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Active returns work that has not completed, sorted by id. It costs the
// live work only (see LiveWork).
func (v *View) Active() []*Work { return slices.Clone([]*Work(v.f.idx.live)) }

func (f *FSM) apply(c *Command) Result {
	switch c.Type {
	case CmdSubmit:
		return f.submit(c)
	case CmdAssign:
		return f.assign(c)
	case CmdProc:
		return f.procUpdate(c)
	case CmdCancel:
		return f.cancel(c)
	case CmdFinish:
		w := f.work[c.WorkID]
		if w == nil {
			return Result{Err: fmt.Errorf("no work %d", c.WorkID)}
		}
		f.finish(w, c.Time, c.Completion, c.Reason, w.ExitCode)
		return Result{ID: w.ID}
	case CmdConfig:
		f.sched = append([]byte(nil), c.Config...)
		return Result{}
	case CmdNodeAdmin:
		if c.NodeState == NodeNormal {
			delete(f.nodeAdmin, c.Node)
		} else {
			f.nodeAdmin[c.Node] = c.NodeState
		}
		return Result{}
	case CmdIncarnation:
		if f.incarnation == "" {
			f.incarnation = c.Incarnation
		}
		return Result{}
	case CmdIDFloor:
		f.nextID = max(f.nextID, c.IDFloor)
		return Result{}
	case CmdSvcRegister:
		return f.svcRegister(c)
	case CmdSvcChange:
		return f.svcChange(c)
	case CmdDepsMet:
		return f.depsMet(c)
	case CmdPurge:
		return f.purge(c)
	case CmdItems:
		return f.items(c)
	case CmdDriverItems:
		return f.driverItems(c)
	case CmdOutcomes:
		return f.outcomes(c)
	case CmdReady:
		return f.ready(c)
	case CmdRequeued:
		if _, j, err := f.job(c); err == nil {
			j.Preempted += int(c.Requeued)
			f.totals.ItemsPreempted += uint64(max(c.Requeued, 0))
		}
		return Result{ID: c.WorkID}
	case CmdStopProc:
		w := f.work[c.WorkID]
		if w == nil {
			return Result{Err: fmt.Errorf("no work %d", c.WorkID)}
		}
		for _, p := range w.Procs {
			if p.ID == c.ProcID && !p.Ended() && !p.Stop {
				p.Stop, p.StopReason, p.StopCounts = true, c.Reason, c.Counts
				if p.State == wire.ProcRunning || p.State == wire.ProcStarting {
					p.State = wire.ProcStopping
				}
			}
		}
		return Result{ID: w.ID}
	default:
		return Result{Err: fmt.Errorf("unknown command type %d", c.Type)}
	}
}

func (f *FSM) submit(c *Command) Result {
	if c.Work == nil {
		return Result{Err: fmt.Errorf("submit without work")}
	}
	w := *c.Work
	w.ID = f.nextID
	f.nextID++
	w.SubmittedAt = c.Time
	if w.State == "" {
		w.State = StateWaitingForResources
	}
	w.Procs = nil
	f.work[w.ID] = &w
	if w.Job != nil {
		w.State = StateReceived
		items := w.Job.Items
		w.Job.Items = make([]Item, 0, len(items))
		w.Job.Items = append(w.Job.Items, items...)
		switch {
		case w.Job.HasDriver():
			// Its driver process sends the items (CmdDriverItems).
			w.Job.Items = w.Job.Items[:0]
			w.State = StateWaitingForDriver
			if len(w.Deps) > 0 {
				w.State = StateWaitingForServices
			}
		case c.Last:
			f.commit(&w, c.Time)
		}
	}
	if c.Completion != "" {
		// Refused at once (e.g. an unknown service endpoint), but kept so
		// that users see why.
		f.finish(&w, c.Time, c.Completion, c.Reason, 1)
		return Result{ID: w.ID}
	}
	if c.Assign != nil && c.WorkID == w.ID && w.Job == nil && w.Service == nil {
		// Placed at submission (orch.Orchestrator.Submit): its first
		// process is assigned in the same entry, but only if the work got
		// the id it was planned under; otherwise another submission came
		// first and the next scheduling cycle places it as any other.
		if r := f.assign(&Command{Type: CmdAssign, Time: c.Time, WorkID: w.ID, Assign: c.Assign}); r.Err == nil {
			return r
		}
	}
	return Result{ID: w.ID}
}

func (f *FSM) assign(c *Command) Result {
	w := f.work[c.WorkID]
	if w == nil || c.Assign == nil {
		return Result{Err: fmt.Errorf("assign: no work %d", c.WorkID)}
	}
	if w.Ended() || w.Canceling {
		return Result{Err: fmt.Errorf("assign: work %d is %s", w.ID, w.State)}
	}
	if w.Kind == wire.WorkService {
		for _, p := range w.Live() {
			if p.Instance == c.Assign.Instance {
				return Result{Err: fmt.Errorf("assign: service %d instance %d already runs as %s", w.ID, p.Instance, p.ID)}
			}
		}
	}
	if c.Assign.Kind == wire.ProcDriver {
		if w.Job == nil || !w.Job.HasDriver() || w.Driver() != nil {
			return Result{Err: fmt.Errorf("assign: work %d wants no driver process", w.ID)}
		}
	}
	n := w.NextProc + 1
	w.NextProc = n
	p := &Proc{
		ID:          fmt.Sprintf("%d.%d", w.ID, n),
		Node:        c.Assign.Node,
		Shares:      c.Assign.Shares,
		MemoryLimit: c.Assign.MemoryLimit,
		State:       wire.ProcStarting,
		AssignedAt:  c.Time,
		Instance:    c.Assign.Instance,
		Kind:        c.Assign.Kind,

		GPUs:            c.Assign.GPUs,
		GPUSlice:        c.Assign.GPUSlice,
		GPUDeviceMemory: c.Assign.GPUDeviceMemory,
	}
	w.Procs = append(w.Procs, p)
	if p.IsDriver() {
		return Result{ID: w.ID, ProcID: p.ID} // the job stays WaitingForDriver
	}
	if w.State == StateWaitingForResources || w.State == StateReceived {
		w.State = StateAssigned
	}
	if w.Kind == wire.WorkReservation {
		// A reservation holds the machine; nothing is started on it.
		p.State, p.StartedAt = wire.ProcRunning, c.Time
		w.State, w.StartedAt = StateRunning, c.Time
	}
	return Result{ID: w.ID, ProcID: p.ID}
}

func (f *FSM) procUpdate(c *Command) Result {
	st := c.Proc
	if st == nil {
		return Result{Err: fmt.Errorf("proc update without status")}
	}
	w := f.work[st.WorkID]
	if w == nil {
		return Result{Err: fmt.Errorf("proc update: no work %d", st.WorkID)}
	}
	var p *Proc
	for _, q := range w.Procs {
		if q.ID == st.ID {
			p = q
		}
	}
	if p == nil {
		return Result{Err: fmt.Errorf("proc update: no process %s", st.ID)}
	}
	if p.Ended() {
		return Result{ID: w.ID, ProcID: p.ID}
	}
	if st.PID != 0 {
		p.PID = st.PID
	}
	if st.LogPath != "" {
		p.LogPath = st.LogPath
	}
	if st.StartedAt != 0 {
		p.StartedAt = st.StartedAt
	}
	switch {
	case st.Ended():
		p.State = st.State
		p.EndedAt = st.EndedAt
		if p.EndedAt == 0 {
			p.EndedAt = c.Time
		}
		p.ExitCode, p.Signal, p.OOMKilled, p.Reason = st.ExitCode, st.Signal, st.OOMKilled, st.Reason
		p.OOMKills = st.OOMKills
		p.MaxRSS, p.CPUSeconds = st.MaxRSS, st.CPUSeconds
		p.GPUMemoryPeak = st.GPUMemoryPeak
		if st.GPUSliceExceeded {
			// Stopped by its agent over its GPU memory slice: the work's
			// exit code says so (wire.CodeGPUSlice), Reason how much.
			p.ExitCode = wire.CodeGPUSlice
		}
		if p.StopCounts && p.StopReason != "" {
			// Killed by the head for a reason that counts: say that reason.
			p.Reason = p.StopReason + " (" + st.Reason + ")"
		}
	case st.State == wire.ProcRunning && p.State == wire.ProcStarting:
		p.State = wire.ProcRunning
	}
	f.workAfterProc(w, p, c.Time)
	return Result{ID: w.ID, ProcID: p.ID}
}

// workAfterProc moves a managed reservation or reservation along after one
// of its processes changed. Jobs and services are driven by their own
// drivers.
func (f *FSM) workAfterProc(w *Work, p *Proc, now int64) {
	if w.Job != nil {
		f.jobAfterProc(w, p, now)
		return
	}
	if w.Service != nil {
		f.serviceAfterProc(w, p, now)
		if p.Ended() && w.Canceling && len(w.Live()) == 0 {
			f.finish(w, now, cancelCompletion(w), cancelReason(w), 0)
		}
		return
	}
	if w.Kind != wire.WorkManaged {
		return
	}
	switch {
	case p.Ended():
		if len(w.Live()) > 0 {
			return
		}
		switch {
		case w.Canceling:
			f.finish(w, now, cancelCompletion(w), cancelReason(w), p.ExitCode)
		case p.State == wire.ProcLaunchFailed:
			f.finish(w, now, CompletionLaunchFailure, p.Reason, p.ExitCode)
		case p.State == wire.ProcLost:
			f.finish(w, now, CompletionProcessFailure, p.Reason, p.ExitCode)
		default:
			f.finish(w, now, CompletionProgramExit, p.Reason, p.ExitCode)
		}
	case p.State == wire.ProcRunning:
		if w.State == StateAssigned || w.State == StateWaitingForResources {
			w.State = StateRunning
			w.StartedAt = p.StartedAt
			if w.StartedAt == 0 {
				w.StartedAt = now
			}
		}
	}
}

// cancelCompletion says who canceled: the owner, or someone else (an
// administrator).
func cancelCompletion(w *Work) Completion {
	if w.CancelBy != "" && w.CancelBy != w.User {
		return CompletionCanceledByAdmin
	}
	return CompletionCanceledByUser
}

func cancelReason(w *Work) string {
	if w.CancelBy == "" {
		return "canceled"
	}
	return "canceled by " + w.CancelBy
}

func (f *FSM) cancel(c *Command) Result {
	w := f.work[c.WorkID]
	if w == nil {
		return Result{Err: fmt.Errorf("no work %d", c.WorkID)}
	}
	if w.Ended() {
		return Result{ID: w.ID}
	}
	w.Canceling, w.CancelBy = true, c.By
	if w.Kind == wire.WorkReservation {
		for _, p := range w.Live() {
			p.State, p.EndedAt, p.Reason = wire.ProcExited, c.Time, "released"
		}
	}
	live := w.Live()
	for _, p := range live {
		p.Stop, p.StopReason = true, "canceled by "+c.By
		if p.State == wire.ProcRunning || p.State == wire.ProcStarting {
			p.State = wire.ProcStopping
		}
	}
	if len(live) == 0 {
		f.finish(w, c.Time, cancelCompletion(w), cancelReason(w), w.ExitCode)
	}
	return Result{ID: w.ID}
}

func (f *FSM) finish(w *Work, now int64, completion Completion, reason string, exit int) {
	if w.Ended() {
		return
	}
	f.reschedule = true // its processes are stopped, its memory freed
	f.totals.completed(w, completion)
	w.State = StateCompleted
	w.Completion = completion
	w.Reason = reason
	w.ExitCode = exit
	w.EndedAt = now
	for _, p := range w.Procs {
		if !p.Ended() && !p.Stop {
			p.Stop, p.StopReason = true, "work completed"
			if p.State == wire.ProcRunning || p.State == wire.ProcStarting {
				p.State = wire.ProcStopping
			}
		}
	}
}

// snapHeader starts a snapshot. Then come Count frames of Work, each job
// followed by its items in frames of at most snapChunk: itemCols since
// version 2, []Item in version 1 (still read).
type snapHeader struct {
	Version   int                       `cbor:"1,keyasint"`
	NextID    uint64                    `cbor:"2,keyasint"`
	Count     int                       `cbor:"3,keyasint"`
	Scheduler []byte                    `cbor:"4,keyasint,omitempty"`
	NodeAdmin map[string]NodeAdminState `cbor:"5,keyasint,omitempty"`
	// History says that the history part (history.write) follows the
	// work.
	History bool `cbor:"20,keyasint,omitempty"`
	// Incarnation is FSM.incarnation.
	Incarnation string `cbor:"10,keyasint,omitempty"`
	// Index is the Raft index of the last entry the snapshot holds
	// (version 2).
	Index uint64 `cbor:"6,keyasint,omitempty"`
}

const (
	snapVersion = 2
	snapChunk   = 50_000
)

// Snapshot implements raft.FSM. Under the read lock it encodes the work
// and copies the items into column chunks, which share nothing with the
// state; Persist encodes the chunks while applies go on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var buf bytes.Buffer
	ids := make([]uint64, 0, len(f.work))
	for id := range f.work {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	h := snapHeader{Version: snapVersion, NextID: f.nextID, Count: len(ids), Scheduler: f.sched, NodeAdmin: f.nodeAdmin, Index: f.index,
		History: true, Incarnation: f.incarnation}
	if err := wire.WriteMsg(&buf, h); err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	s := &snapshot{}
	for _, id := range ids {
		w := *f.work[id]
		var items []Item
		if w.Job != nil {
			j := *w.Job
			items, j.Items, j.NItems = j.Items, nil, len(j.Items)
			w.Job = &j
		}
		if err := wire.WriteMsg(&buf, &w); err != nil {
			return nil, fmt.Errorf("encode snapshot of work %d: %w", id, err)
		}
		if len(items) > 0 {
			s.parts = append(s.parts, snapPart{encoded: bytes.Clone(buf.Bytes())})
			buf.Reset()
			for _, c := range splitCols(items) {
				s.parts = append(s.parts, snapPart{cols: c, work: id})
			}
		}
	}
	if err := f.hist.write(&buf); err != nil {
		return nil, err
	}
	if buf.Len() > 0 {
		s.parts = append(s.parts, snapPart{encoded: buf.Bytes()})
	}
	return s, nil
}

// Restore implements raft.FSM.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := bufio.NewReaderSize(io.LimitReader(rc, snapshotLimit), 1<<20)
	var h snapHeader
	if err := wire.ReadMsg(r, &h, wire.MaxMessageSize); err != nil {
		return fmt.Errorf("decode snapshot header: %w", err)
	}
	if h.Version != 1 && h.Version != snapVersion {
		return fmt.Errorf("snapshot version %d is not supported by this ducc", h.Version)
	}
	work := make(map[uint64]*Work, h.Count)
	for range h.Count {
		var w Work
		if err := wire.ReadMsg(r, &w, wire.MaxMessageSize); err != nil {
			return fmt.Errorf("decode snapshot work: %w", err)
		}
		if w.Job != nil {
			w.Job.Items = make([]Item, 0, w.Job.NItems)
			for len(w.Job.Items) < w.Job.NItems {
				if err := readItems(r, h.Version, w.Job); err != nil {
					return fmt.Errorf("decode snapshot items of work %d: %w", w.ID, err)
				}
			}
			if len(w.Job.Items) != w.Job.NItems {
				return fmt.Errorf("decode snapshot items of work %d: %d items, want %d", w.ID, len(w.Job.Items), w.Job.NItems)
			}
			w.Job.NItems = 0
		}
		work[w.ID] = &w
	}
	hist := newHistory()
	if h.History {
		var err error
		if hist, err = readHistory(r); err != nil {
			return err
		}
	}
	hist.finished = finishedOf(work)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID = h.NextID
	f.index = h.Index
	f.work = work
	f.idx = buildIndex(work)
	f.hist = hist
	f.sched = h.Scheduler
	f.nodeAdmin = h.NodeAdmin
	f.incarnation = h.Incarnation
	if f.nodeAdmin == nil {
		f.nodeAdmin = map[string]NodeAdminState{}
	}
	close(f.changed)
	f.changed = make(chan struct{})
	close(f.scheduling)
	f.scheduling = make(chan struct{})
	return nil
}

// readItems reads one chunk of a job's items.
func readItems(r io.Reader, version int, j *Job) error {
	if version == 1 {
		var chunk []Item
		if err := wire.ReadMsg(r, &chunk, wire.MaxMessageSize*4); err != nil {
			return err
		}
		if len(chunk) == 0 {
			return fmt.Errorf("empty chunk")
		}
		j.Items = append(j.Items, chunk...)
		return nil
	}
	var c itemCols
	if err := wire.ReadMsg(r, &c, wire.MaxMessageSize*4); err != nil {
		return err
	}
	items, err := c.appendTo(j.Items)
	if err != nil {
		return err
	}
	j.Items = items
	return nil
}

// snapshot is a snapshot ready to be written: frames already encoded and
// item chunks still to encode.
type snapshot struct{ parts []snapPart }

type snapPart struct {
	encoded []byte
	cols    *itemCols
	work    uint64
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriterSize(sink, 1<<20)
	err := func() error {
		for _, p := range s.parts {
			if p.cols == nil {
				if _, err := w.Write(p.encoded); err != nil {
					return err
				}
				continue
			}
			if err := wire.WriteMsg(w, p.cols); err != nil {
				return fmt.Errorf("items of work %d: %w", p.work, err)
			}
		}
		return w.Flush()
	}()
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
