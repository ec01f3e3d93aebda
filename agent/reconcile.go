package agent

import (
	"context"
	"time"

	"github.com/ducc-project/ducc/feed"
	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
	"golang.org/x/sync/errgroup"
)

// acceptDesired queues a desired state; only the newest is kept, with
// the acknowledgements of those it replaces (the head acknowledges an
// ended process in the desired states it delivers until then, not in
// every later one: head/orch, delivered).
func (a *Agent) acceptDesired(ds wire.DesiredState) {
	for {
		select {
		case a.desire <- ds:
			return
		default:
			select {
			case old := <-a.desire:
				if old.Version > ds.Version {
					ds, old = old, ds
				}
				ds.Ack = mergeAcks(ds.Ack, old.Ack)
			default:
			}
		}
	}
}

// mergeAcks returns the ids of a and b, each once.
func mergeAcks(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, l := range [][]string{a, b} {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// reconcileLoop makes the node match the head's desired state.
func (a *Agent) reconcileLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ds := <-a.desire:
			a.reconcile(ctx, ds)
		}
	}
}

// reconcile starts what the head wants and is not running, stops what runs
// and is no longer wanted (or is marked to stop), and forgets ended
// processes the head acknowledged.
func (a *Agent) reconcile(ctx context.Context, ds wire.DesiredState) {
	if !a.ledger.apply(ds) {
		return // not newer than what is applied
	}
	if changed, err := a.inc.follow(ds.Incarnation); err != nil {
		a.log.Warn("cannot keep the cluster incarnation in the data dir", "err", err)
	} else if changed {
		a.log.Info("following cluster incarnation", "incarnation", ds.Incarnation)
	}
	want := make(map[string]bool, len(ds.Procs))
	for _, p := range ds.Procs {
		want[p.ID] = true
	}

	// Forgetting removes a directory and a cgroup per process: the
	// acknowledged ones go in parallel, all before the list below.
	var par errgroup.Group
	par.SetLimit(maxParallelLaunches)
	for _, id := range ds.Ack {
		par.Go(func() error {
			if err := a.procs.Forget(id); err != nil {
				a.log.Warn("cannot forget acknowledged process", "proc", id, "err", err)
			}
			return nil
		})
	}
	_ = par.Wait() // each logs its own failure
	// Leftovers of another incarnation are not in have: not stopped as
	// unwanted, not taken for the process of the same id (whose start
	// then fails: the head's next work ids are above theirs).
	ours, left := a.leftovers(a.procs.List())
	a.tendLeftovers(ctx, left)
	have := map[string]proc.Status{}
	for _, st := range ours {
		have[st.ID] = st
	}
	for _, spec := range ds.Procs {
		st, running := have[spec.ID]
		if !spec.Stop && !(running && ended(st)) {
			a.gpus.track(spec) // also a process re-adopted after a restart
		}
		switch {
		case spec.Stop && running && !ended(st):
			a.stop(ctx, spec.ID, time.Duration(spec.GraceMS)*time.Millisecond, spec.StopReason)
		case spec.Stop && !running && !a.ledger.reported(spec.ID):
			a.stoppedBeforeStart(spec)
		case !spec.Stop && !running:
			par.Go(func() error { a.start(ctx, spec); return nil })
		case !spec.Stop && running && st.State == proc.Running && spec.Kind == wire.ProcJob:
			a.streams.StartFeeder(ctx, spec, st.StartedAt) // a re-adopted job process
		case !spec.Stop && running && st.State == proc.Running && spec.Kind == wire.ProcDriver:
			a.streams.StartPump(ctx, spec, st.StartedAt) // a re-adopted driver process
		}
	}
	for id, st := range have {
		if !want[id] && !ended(st) {
			a.stop(ctx, id, 15*time.Second, "not wanted by the head")
		}
	}
	_ = par.Wait() // the next desired state sees these started
}

// maxParallelLaunches bounds the starts (and the forgets) of one desired
// state in flight at once. One at a time, the reconcile loop was the
// serial step of a short job (docs/performance.md, "Where a short job's
// time goes"): each start waited for its directory, cgroup and spec.json,
// then for the shim server's launch, before the next began. In parallel,
// the agent's side of one launch overlaps the server's side of another.
const maxParallelLaunches = 8

func ended(st proc.Status) bool {
	return st.State == proc.Exited || st.State == proc.LaunchFailed || st.State == proc.Lost
}

// start launches one process and reports that it runs.
func (a *Agent) start(ctx context.Context, spec wire.ProcSpec) {
	if !a.starting.begin(spec.ID) {
		return
	}
	defer a.starting.end(spec.ID)
	// The minors of the process's GPUs are what proc's device fencing
	// lets it open; a GPU this node does not have fails the launch.
	minors, err := a.gpus.gpuMinors(spec)
	if err != nil {
		a.launchFailed(spec, err)
		return
	}
	ps := proc.Spec{
		ID: spec.ID, WorkID: spec.WorkID, Kind: string(spec.Kind), Node: a.cfg.Node, Incarnation: a.inc.current(),
		User: spec.User, UID: spec.UID, GID: spec.GID, Groups: spec.Groups,
		Path: spec.Path, Args: spec.Args, Env: a.gpus.gpuEnv(spec.Env, spec.User, spec.GPUs), Dir: spec.Dir,
		LogDir: spec.LogDir, MemoryLimit: spec.MemoryLimit,
	}
	ps.GPUFence = a.gpus.fence(minors)
	if spec.Umask != "" {
		// The submitter's umask; the head checked it (four octal digits).
		if ps.Umask = parseUmask(spec.Umask); ps.Umask == nil {
			a.log.Warn("bad umask from the head; using 0022", "proc", spec.ID, "umask", spec.Umask)
		}
	}
	var pump *feed.Pump
	if spec.Kind == wire.ProcDriver {
		ps.Stdin = true // the agent pumps its items over FIFOs
		// Registered first: a driver that fails at once is reported with
		// the end of its log, after its pump saw its output.
		if pump = a.streams.RegisterPump(spec.ID, spec.UID); pump == nil {
			return
		}
	}
	if spec.Kind == wire.ProcJob {
		ps.Stdin = true // the agent feeds items over FIFOs
		if spec.Protocol == wire.ProtocolExec {
			if w, err := proc.ExecWorkerCommand(); err == nil {
				ps.Path, ps.Args = w[0], append(append(w[1:], "--", spec.Path), spec.Args...)
			}
		}
	}
	st, err := a.procs.Start(ctx, ps)
	if pump != nil && (err != nil || st.State != proc.Running) {
		pump.Cancel() // no pump will run
	}
	if err != nil {
		// The process manager could not even try (e.g. the data dir is
		// unwritable): report a launch failure so the work does not hang.
		a.launchFailed(spec, err)
		return
	}
	if st.State == proc.Running {
		a.obs.agent.ProcStarted()
		args := []any{"proc", spec.ID, "pid", st.PID, "user", spec.User, "memory_limit", spec.MemoryLimit}
		if len(spec.GPUs) > 0 {
			args = append(args, "gpus", gpuDevicesLine(spec), "gpu_minors", minors)
		}
		a.log.Info("process started", args...)
		if spec.Kind == wire.ProcJob {
			a.streams.StartFeeder(ctx, spec, st.StartedAt)
		}
		if pump != nil {
			pump.Start(ctx, spec, st.StartedAt)
		}
		a.reports.add(toWire(st, a.cfg.Node))
	}
	// Launch failures arrive through OnExit.
}

// launchFailed reports a process the agent could not even try to start
// (the process manager failed, or it names a GPU this node lacks), so
// that the work does not hang.
func (a *Agent) launchFailed(spec wire.ProcSpec, err error) {
	a.log.Error("cannot start process", "proc", spec.ID, "err", err)
	a.gpus.ended(spec.ID)
	ps := wire.ProcStatus{ID: spec.ID, WorkID: spec.WorkID, State: wire.ProcLaunchFailed, ExitCode: -1,
		Reason: err.Error(), EndedAt: time.Now().UnixMilli(), Node: a.cfg.Node}
	a.ledger.ended(ps)
	a.reports.add(ps)
}

// stoppedBeforeStart reports a process that the head wants stopped and
// that this node never started: placed and stopped between two desired
// states (its work canceled, or its space taken back, just as it was
// placed). Nothing runs; without a report the head would wait for its end
// forever.
func (a *Agent) stoppedBeforeStart(spec wire.ProcSpec) {
	a.log.Info("process stopped before it started", "proc", spec.ID, "why", spec.StopReason)
	a.gpus.ended(spec.ID)
	ps := wire.ProcStatus{ID: spec.ID, WorkID: spec.WorkID, State: wire.ProcExited, ExitCode: -1,
		Reason: "stopped before it started: " + spec.StopReason, EndedAt: time.Now().UnixMilli(), Node: a.cfg.Node}
	a.ledger.ended(ps)
	a.reports.add(ps)
}

// stop stops a process in the background (SIGTERM, SIGKILL after grace);
// the reconcile loop must not wait for the grace period.
func (a *Agent) stop(ctx context.Context, id string, grace time.Duration, why string) {
	if !a.stopping.begin(id) {
		return
	}
	a.log.Info("stopping process", "proc", id, "grace", grace, "why", why)
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		defer a.stopping.end(id)
		if err := a.procs.Stop(ctx, id, grace); err != nil && ctx.Err() == nil {
			a.log.Warn("cannot stop process", "proc", id, "err", err)
		}
	}()
}
