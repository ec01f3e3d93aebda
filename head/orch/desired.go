package orch

import (
	"context"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// desired computes the desired state of one node from the durable state.
// It costs what the node has (its processes that have not ended, its
// ended processes still reported), not what was ever submitted.
func (o *Orchestrator) desired(node string) wire.DesiredState {
	ds := wire.DesiredState{Node: node}
	// Lock order: o.mu is never taken while holding the state's lock.
	o.mu.Lock()
	var ended []wire.ProcStatus
	for id := range o.endedOn[node] {
		ended = append(ended, o.reported[id])
	}
	o.mu.Unlock()
	o.cfg.FSM.View(func(v *state.View) {
		ds.Incarnation = v.Incarnation()
		for w, p := range v.NodeProcs(node) {
			if w.Kind == wire.WorkReservation {
				continue // reservations hold a node; nothing runs for them
			}
			ds.Procs = append(ds.Procs, procSpec(w, p, o.cfg.Grace))
		}
		for _, st := range ended {
			if w := v.Work(st.WorkID); w != nil {
				for _, p := range w.Procs {
					if p.ID == st.ID && p.Ended() {
						ds.Ack = append(ds.Ack, st.ID)
					}
				}
			}
		}
	})
	sort.Strings(ds.Ack)
	return ds
}

// noteReported records the status last applied for a process, and files
// the ended ones under their node for desired's acknowledgements. o.mu is
// held.
func (o *Orchestrator) noteReported(st wire.ProcStatus) {
	prev, seen := o.reported[st.ID]
	if seen && prev.Node != st.Node {
		o.forgetEnded(prev.Node, st.ID)
	}
	o.reported[st.ID] = st
	if st.Ended() && st.EndedAt != 0 && !(seen && prev.Ended()) {
		o.endedQ = append(o.endedQ, endedRef{id: st.ID, at: st.EndedAt})
	}
	if !st.Ended() {
		o.forgetEnded(st.Node, st.ID)
		return
	}
	ids := o.endedOn[st.Node]
	if ids == nil {
		ids = map[string]struct{}{}
		o.endedOn[st.Node] = ids
	}
	ids[st.ID] = struct{}{}
}

// forgetReported forgets a process's reports. o.mu is held.
func (o *Orchestrator) forgetReported(id string) {
	if st, ok := o.reported[id]; ok {
		o.forgetEnded(st.Node, id)
	}
	delete(o.reported, id)
	delete(o.live, id)
}

// isEndedOn reports whether an ended process waits for its
// acknowledgement to node. o.mu is held.
func (o *Orchestrator) isEndedOn(node, id string) bool {
	_, ok := o.endedOn[node][id]
	return ok
}

func (o *Orchestrator) forgetEnded(node, id string) {
	if ids := o.endedOn[node]; ids != nil {
		delete(ids, id)
		if len(ids) == 0 {
			delete(o.endedOn, node)
		}
	}
}

func procSpec(w *state.Work, p *state.Proc, grace time.Duration) wire.ProcSpec {
	logDir := w.LogDir
	if logDir == "" {
		logDir = filepath.Join(w.Home, "ducc", "logs")
	}
	ps := wire.ProcSpec{
		ID: p.ID, WorkID: w.ID, Kind: w.Kind.Proc(),
		User: w.User, UID: w.UID, GID: w.GID, Groups: w.Groups,
		Path: w.Path, Args: w.Args, Env: w.Env, Dir: w.Dir, Umask: w.Umask,
		LogDir:      filepath.Join(logDir, strconv.FormatUint(w.ID, 10)),
		MemoryLimit: p.MemoryLimit,
		Stop:        p.Stop, StopReason: p.StopReason,
		GraceMS: grace.Milliseconds(),
		GPUs:    p.GPUs, GPUSlice: p.GPUSlice,
	}
	if w.Job != nil {
		ps.Protocol, ps.Pipelines = w.Job.Spec.WorkerProtocol, w.Job.Spec.Pipelines
	}
	if p.IsDriver() {
		// The job's driver process (docs/jobs.md): the job's environment,
		// directory and logs, its own command.
		ps.Kind, ps.Path, ps.Args, ps.Protocol, ps.Pipelines = wire.ProcDriver, w.Job.Spec.DriverExecutable, w.Job.Spec.DriverArgs, "", 0
	}
	if w.Kind == wire.WorkService {
		// Stable instance ids (docs/services.md): in the environment and in place
		// of ${DUCC_SERVICE_INSTANCE} in the arguments.
		inst := strconv.Itoa(p.Instance)
		ps.Env = append(append([]string(nil), w.Env...), "DUCC_SERVICE_INSTANCE="+inst, "DUCC_SERVICE_ID="+strconv.FormatUint(w.ID, 10))
		ps.Args = make([]string, len(w.Args))
		for i, a := range w.Args {
			ps.Args[i] = strings.ReplaceAll(a, "${DUCC_SERVICE_INSTANCE}", inst)
		}
	}
	return ps
}

func fingerprint(ds wire.DesiredState) string {
	var b strings.Builder
	for _, p := range ds.Procs {
		b.WriteString(p.ID)
		if p.Stop {
			b.WriteString("!")
		}
		b.WriteString(",")
	}
	b.WriteString("|")
	b.WriteString(strings.Join(ds.Ack, ","))
	return b.String()
}

// pushAll pushes every up node whose desired state changed. It needs the
// names only: no copy and no sort of every node (with 5,000 nodes that was
// a tenth of a busy head's CPU).
func (o *Orchestrator) pushAll(ctx context.Context) {
	o.mu.Lock()
	up := make([]string, 0, len(o.nodes))
	for name, n := range o.nodes {
		if n.State == NodeUp {
			up = append(up, name)
		}
	}
	o.mu.Unlock()
	for _, name := range up {
		o.pushNode(name, false)
	}
}

// pushNode computes a node's desired state and hands it to the node's
// pusher when it changed (or when force is set). A node's pushes are
// computed and numbered one at a time (pushLock): a state computed from
// an older view of the durable state never gets a newer version than one
// computed after it, which the agent would apply last (stopping what the
// newer one started).
func (o *Orchestrator) pushNode(node string, force bool) {
	l := o.pushLock(node)
	l.Lock()
	defer l.Unlock()
	ds := o.desired(node)
	fp := fingerprint(ds)
	var idx uint64
	o.cfg.FSM.View(func(v *state.View) { idx = v.Index() })
	o.mu.Lock()
	n := o.nodes[node]
	// Before Run starts, the first cycle pushes every node; after it
	// returned, nothing may be pushed by this term any more.
	if o.runCtx == nil || o.stopped || n == nil || n.State != NodeUp || (!force && o.sent[node] == fp) {
		o.mu.Unlock()
		return
	}
	if o.version == 0 {
		o.version = idx << 20
	}
	o.version++
	ds.Version = o.version
	o.sent[node] = fp
	o.sentVer[node] = sentVersion{version: ds.Version, at: o.cfg.Now()}
	ch := o.pushers[node]
	if ch == nil {
		ch = make(chan wire.DesiredState, 1)
		o.pushers[node] = ch
		peer := n.Peer
		o.wg.Add(1)
		go o.pusher(o.runCtx, node, peer, ch)
	}
	o.mu.Unlock()
	// Keep only the newest desired state queued.
	for {
		select {
		case ch <- ds:
			return
		default:
			select {
			case <-ch:
			default:
			}
		}
	}
}

// pushLock is node's lock of pushNode.
func (o *Orchestrator) pushLock(node string) *sync.Mutex {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.pushLocks[node]
	if l == nil {
		l = &sync.Mutex{}
		o.pushLocks[node] = l
	}
	return l
}

// delivered drops the acknowledgements of a desired state the node
// received from those the next ones carry: an agent applies every
// acknowledgement it received (acceptDesired keeps them when a newer
// state replaces a queued one). Under short jobs an ended process was
// acknowledged in every push until the node's next heartbeat no longer
// reported it: hundreds of ids in each of hundreds of pushes a second.
// A report of the process that still comes after this (sent before the
// node applied the state, or by a node that lost it in a restart) files
// it again (Report), and the next push acknowledges it once more.
func (o *Orchestrator) delivered(node string, ds wire.DesiredState) {
	acks := ds.Ack
	ds.Ack = nil
	rest := fingerprint(ds)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range acks {
		o.forgetEnded(node, id)
	}
	if o.sentVer[node].version == ds.Version {
		// Nothing newer was computed since: what the node now holds
		// is the state without the acknowledgements, so the next cycle
		// pushes only if something else changes.
		o.sent[node] = rest
	}
}

// pusher delivers desired states to one node, newest first, until ctx ends.
func (o *Orchestrator) pusher(ctx context.Context, node, peer string, ch chan wire.DesiredState) {
	defer o.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case ds := <-ch:
			o.mu.Lock()
			if n := o.nodes[node]; n != nil {
				peer = n.Peer
			}
			o.mu.Unlock()
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := o.cfg.Push.PushDesired(pctx, node, peer, ds)
			cancel()
			if err == nil && len(ds.Ack) > 0 {
				o.delivered(node, ds)
			}
			if err != nil && ctx.Err() == nil {
				o.log.Warn("cannot push desired state", "node", node, "version", ds.Version, "err", err)
				o.mu.Lock()
				delete(o.sent, node) // resend on the next cycle
				o.mu.Unlock()
			}
		}
	}
}
