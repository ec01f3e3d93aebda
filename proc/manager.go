package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/cgroup"
	"golang.org/x/sys/unix"
)

// Manager starts, watches, stops and re-adopts processes.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	procsDir string
	cg       *cgroup.Manager
	devnull  *os.File

	mu     sync.Mutex
	procs  map[string]*entry
	runSeq uint64 // numbers Run's processes
	closed bool
	wg     sync.WaitGroup // watchers and OnExit goroutines

	// forgotten holds the ids this Manager forgot last (at most
	// forgetMemory, oldest first in forgottenOrder), so that a repeated
	// Forget costs no lookup on cgroupfs and disk; guarded by mu.
	forgotten      map[string]struct{}
	forgottenOrder []string

	// The shim servers (Config.ShimServerCommand): current is the one
	// Start launches through (started by the first Start; nil until then
	// and after it exits), servers all those connected, by name (current
	// and those of a previous agent whose processes were adopted);
	// guarded by mu. serverMu makes one Start at a time start a server.
	serverMu sync.Mutex
	current  *shimServer
	servers  map[string]*shimServer

	// ends holds the processes whose end a shim server reported, waiting
	// for finish on at most maxFinishers goroutines (finishLater), so that
	// the server's reader goes on to the next answer to Start; finishers
	// counts those goroutines. Guarded by mu.
	ends      []reportedEnd
	finishers int
}

// maxFinishers bounds the goroutines that finish the ends the shim
// servers report (status.json, OnExit).
const maxFinishers = 4

// reportedEnd is a process whose end a shim server reported.
type reportedEnd struct {
	id string
	e  *entry
}

type entry struct {
	st        Status        // guarded by Manager.mu
	pidfd     *os.File      // per-process shim's pidfd, registered with the netpoller; nil if none
	srv       *shimServer   // the shim server of the process; nil if none
	finishing bool          // finish has begun (guarded by Manager.mu)
	done      chan struct{} // closed once st is final
	escalated bool          // Stop had to kill after the grace period
	stopped   bool          // Stop was called (the shim may not have seen the signal before the cgroup kill)
	group     cgroup.Group  // the process's cgroup, kept from Start or adoption; nil: load it by name
	inc       string        // Spec.Incarnation, reported in Status
}

// isDone reports whether st is final (done is closed).
func (e *entry) isDone() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// status is the entry's Status with what the spec adds; Manager.mu held.
func (e *entry) status() Status {
	st := e.st
	st.Incarnation = e.inc
	return st
}

// NewManager prepares DataDir/procs and removes what runs (Manager.Run) of
// a previous agent left. It starts no goroutine; call Adopt to pick up
// processes left by a previous agent.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("proc: no data directory")
	}
	if len(cfg.ShimCommand) == 0 {
		return nil, errors.New("proc: no shim command")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	cg := cfg.Cgroups
	if cg == nil {
		cg = cgroup.NewDisabled(logger)
	}
	logger = logger.With("component", "proc")
	dir := filepath.Join(cfg.DataDir, "procs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	m := &Manager{cfg: cfg, log: logger, procsDir: dir, cg: cg, devnull: devnull, procs: map[string]*entry{}, servers: map[string]*shimServer{}}
	m.cleanRuns()
	return m, nil
}

// Start launches spec through the shim and returns once the shim has
// reported the child's pid (State Running) or a launch failure (State
// LaunchFailed, error nil: a launch failure is an outcome, reported through
// OnExit as well). An error means the process could not be attempted (bad
// spec, id in use, cgroup or shim failure).
func (m *Manager) Start(ctx context.Context, spec Spec) (Status, error) {
	if err := spec.validate(); err != nil {
		return Status{}, err
	}
	e := &entry{st: Status{ID: spec.ID, State: Starting, MemoryLimit: spec.MemoryLimit}, inc: spec.Incarnation, done: make(chan struct{})}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Status{}, ErrClosed
	}
	if _, ok := m.procs[spec.ID]; ok {
		m.mu.Unlock()
		return Status{}, fmt.Errorf("proc: process %s already exists", spec.ID)
	}
	m.procs[spec.ID] = e
	m.mu.Unlock()

	st, err := m.start(ctx, spec, e)
	if err != nil {
		m.mu.Lock()
		if e.pidfd == nil && e.srv == nil { // never launched: forget it
			delete(m.procs, spec.ID)
		}
		m.mu.Unlock()
		return Status{}, err
	}
	return st, nil
}

func (m *Manager) start(ctx context.Context, spec Spec, e *entry) (Status, error) {
	dir := filepath.Join(m.procsDir, spec.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return Status{}, fmt.Errorf("proc: process %s already exists in %s (Forget it first)", spec.ID, m.procsDir)
		}
		return Status{}, fmt.Errorf("proc: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	group, err := m.cg.Create(spec.ID, cgroup.Resources{MemoryLimit: spec.MemoryLimit, SwapLimit: cgroup.NoSwap})
	if err != nil {
		cleanup()
		return Status{}, fmt.Errorf("proc: start %s: %w", spec.ID, err)
	}
	ss := shimSpec{Spec: spec, CgroupEnabled: m.cg.Enabled(), CgroupRoot: m.cg.Root(), CgroupMode: m.cg.Mode(), CgroupMount: m.cg.Mountpoint(), CgroupName: group.Name()}
	if err := writeJSON(dir, specFile, ss, false); err != nil {
		_ = group.Delete()
		cleanup()
		return Status{}, fmt.Errorf("proc: start %s: %w", spec.ID, err)
	}
	if len(m.cfg.ShimServerCommand) > 0 {
		m.mu.Lock()
		e.group = group
		m.mu.Unlock()
		st, err := m.startServed(ctx, spec, e)
		if err != nil && e.srv == nil { // never sent: undo
			_ = group.Delete()
			cleanup()
		}
		return st, err
	}
	shimOut, err := os.OpenFile(filepath.Join(dir, shimLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		_ = group.Delete()
		cleanup()
		return Status{}, fmt.Errorf("proc: start %s: %w", spec.ID, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		shimOut.Close()
		_ = group.Delete()
		cleanup()
		return Status{}, fmt.Errorf("proc: start %s: %w", spec.ID, err)
	}
	defer r.Close()
	pidfd := -1
	argv := append(slices.Clone(m.cfg.ShimCommand), dir)
	p, err := os.StartProcess(argv[0], argv, &os.ProcAttr{
		Dir:   "/",
		Env:   m.shimEnv(),
		Files: []*os.File{m.devnull, shimOut, shimOut, w},
		Sys:   &syscall.SysProcAttr{Setsid: true, PidFD: &pidfd},
	})
	w.Close()
	shimOut.Close()
	if err != nil {
		_ = group.Delete()
		cleanup()
		return Status{}, fmt.Errorf("proc: start %s: launching the shim %q: %w", spec.ID, argv[0], err)
	}
	shimPID := p.Pid
	_ = p.Release() // we reap through our own pidfd
	if pidfd < 0 {
		// No CLONE_PIDFD (kernel < 5.2): fall back to pidfd_open.
		if pidfd, err = unix.PidfdOpen(shimPID, 0); err != nil {
			return Status{}, fmt.Errorf("proc: start %s: pidfd for shim %d: %w (ducc needs Linux >= 5.4)", spec.ID, shimPID, err)
		}
	}
	f, err := pidfdFile(pidfd)
	if err != nil {
		return Status{}, fmt.Errorf("proc: start %s: %w", spec.ID, err)
	}
	m.mu.Lock()
	e.pidfd = f
	e.group = group
	e.st.ShimPID = shimPID
	if m.closed {
		// Closed meanwhile: leave the shim running for a future Adopt.
		m.mu.Unlock()
		f.Close()
		return Status{}, ErrClosed
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go m.watch(spec.ID, e)

	h, err := readHandshake(ctx, r)
	if err != nil {
		tail := ""
		if b, rerr := os.ReadFile(filepath.Join(dir, shimLog)); rerr == nil && len(b) > 0 {
			tail = ": " + strings.TrimSpace(string(b[max(0, len(b)-500):]))
		}
		return Status{}, fmt.Errorf("proc: start %s: shim %d: %w%s", spec.ID, shimPID, err, tail)
	}
	return m.started(e, h), nil
}

// started records what the shim answered to a launch: the child's pid or
// a launch failure (unless the end was already recorded).
func (m *Manager) started(e *entry, h handshake) Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h.Error != "" {
		if !e.st.State.Ended() {
			e.st.State = LaunchFailed
			e.st.Reason = h.Error
			e.st.ExitCode = -1
		}
		return e.st
	}
	if e.st.State == Starting {
		e.st.State = Running
		e.st.PID = h.PID
		e.st.StartedAt = h.StartedAt
		e.st.LogPath = h.LogPath
	}
	return e.st
}

func readHandshake(ctx context.Context, r *os.File) (handshake, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = r.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = r.SetReadDeadline(time.Now()) })
	defer stop()
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return handshake{}, ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			return handshake{}, errors.New("exited before reporting the process start")
		}
		return handshake{}, fmt.Errorf("handshake: %w", err)
	}
	var h handshake
	if err := json.Unmarshal(line, &h); err != nil {
		return handshake{}, fmt.Errorf("bad handshake %q: %w", line, err)
	}
	return h, nil
}

// pidfdFile wraps a pidfd in a non-blocking *os.File so that waiting for it
// goes through the netpoller (no OS thread per process) and Close unblocks it.
func pidfdFile(fd int) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "pidfd"), nil
}

// watch waits for the shim to end, then finishes the entry and calls OnExit.
// It returns early, without OnExit, when Close closes the pidfd.
func (m *Manager) watch(id string, e *entry) {
	defer m.wg.Done()
	rc, err := e.pidfd.SyscallConn()
	if err != nil {
		m.log.Error("watch", "id", id, "err", err)
		return
	}
	err = rc.Read(func(fd uintptr) bool {
		n, perr := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return perr == nil && n > 0
	})
	if err != nil {
		return // closed by Close
	}
	_ = rc.Control(func(fd uintptr) {
		var info unix.Siginfo
		// Reap the shim if it is our child; ECHILD for adopted shims.
		_ = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG, nil)
	})
	e.pidfd.Close()
	m.finish(id, e)
}

// finish loads status.json (or declares the process lost), updates the entry
// and calls OnExit.
func (m *Manager) finish(id string, e *entry) {
	m.mu.Lock()
	again := e.finishing || e.isDone() // a server's process's end may be seen twice
	e.finishing = true
	m.mu.Unlock()
	if again {
		return
	}
	dir := filepath.Join(m.procsDir, id)
	var st Status
	err := readJSON(filepath.Join(dir, statusFile), &st)
	if err != nil {
		st = m.lost(id, e, err)
	}
	m.mu.Lock()
	if e.stopped {
		st.Stopped = true
	}
	if e.escalated && st.Signal == "SIGKILL" && !st.OOMKilled {
		st.Reason = "killed by SIGKILL: did not stop within the grace period after SIGTERM" + survivedKills(&st)
	}
	e.st = st
	close(e.done)
	m.mu.Unlock()
	m.log.Info("process ended", "id", id, "pid", st.PID, "state", st.State, "exit_code", st.ExitCode, "reason", st.Reason)
	if m.cfg.OnExit != nil {
		m.cfg.OnExit(st)
	}
}

// lost handles a shim that ended without status.json: kill what is left in
// the cgroup and record the loss so that later restarts see it as ended.
func (m *Manager) lost(id string, e *entry, why error) Status {
	m.mu.Lock()
	st := e.st
	m.mu.Unlock()
	if errors.Is(why, os.ErrNotExist) {
		m.log.Warn("shim died without recording a status", "id", id, "shim_pid", st.ShimPID)
	} else {
		m.log.Warn("unreadable status", "id", id, "err", why)
	}
	if g, err := m.group(id, e); err == nil {
		if pids, _ := g.Procs(); len(pids) > 0 {
			m.log.Warn("killing survivors of a lost shim", "id", id, "pids", pids)
			if err := g.Kill(); err != nil {
				m.log.Error("kill survivors", "id", id, "err", err)
			}
		}
	}
	if st.PID > 0 && !m.cg.Enabled() {
		_ = unix.Kill(-st.PID, unix.SIGKILL)
	}
	st.State = Lost
	st.ExitCode = -1
	st.EndedAt = time.Now()
	st.Reason = "lost: shim died"
	if err := writeJSON(filepath.Join(m.procsDir, id), statusFile, st, true); err != nil {
		m.log.Error("record lost process", "id", id, "err", err)
	}
	return st
}

// Adopt scans DataDir/procs for processes of a previous agent: ended ones
// are reported through OnExit (from a Manager goroutine); live shims are
// watched; shims that died without a status are reported as lost (and what
// is left of their cgroup is killed). It returns the status of every process
// it picked up.
func (m *Manager) Adopt(ctx context.Context) ([]Status, error) {
	ents, err := os.ReadDir(m.procsDir)
	if err != nil {
		return nil, fmt.Errorf("proc: adopt: %w", err)
	}
	var out []Status
	var ended, served []string
	for _, de := range ents {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		id := de.Name()
		if !de.IsDir() || ValidID(id) != nil {
			continue
		}
		m.mu.Lock()
		_, known := m.procs[id]
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return out, ErrClosed
		}
		if known {
			continue
		}
		st, e, ok := m.adoptOne(id)
		if !ok {
			continue
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			if e.pidfd != nil {
				e.pidfd.Close()
			}
			return out, ErrClosed
		}
		m.procs[id] = e
		switch {
		case e.pidfd != nil:
			m.wg.Add(1)
			go m.watch(id, e)
		case e.srv != nil:
			served = append(served, id)
		default:
			ended = append(ended, id)
		}
		m.mu.Unlock()
		out = append(out, st)
	}
	m.mu.Lock()
	if m.closed {
		ended, served = nil, nil
	}
	if len(ended) > 0 || len(served) > 0 {
		m.wg.Add(1)
	}
	m.mu.Unlock()
	if len(ended) > 0 || len(served) > 0 {
		go func() {
			defer m.wg.Done()
			// A process of a shim server may have ended before the
			// connection, or its server may be gone: its end was not
			// reported to this Manager.
			for _, id := range served {
				m.mu.Lock()
				e := m.procs[id]
				dead := e != nil && e.srv.dead
				m.mu.Unlock()
				if e != nil && (dead || exists(filepath.Join(m.procsDir, id, statusFile))) {
					m.finish(id, e)
				}
			}
			for _, id := range ended {
				m.mu.Lock()
				e := m.procs[id]
				m.mu.Unlock()
				if e == nil {
					continue
				}
				m.mu.Lock()
				st := e.st
				m.mu.Unlock()
				if m.cfg.OnExit != nil {
					m.cfg.OnExit(st)
				}
			}
		}()
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (m *Manager) adoptOne(id string) (Status, *entry, bool) {
	dir := filepath.Join(m.procsDir, id)
	var spec shimSpec
	if err := readJSON(filepath.Join(dir, specFile), &spec); err != nil {
		m.log.Warn("adopt: skipping directory without a readable spec", "id", id, "err", err)
		return Status{}, nil, false
	}
	e := &entry{st: Status{ID: id, State: Starting, MemoryLimit: spec.MemoryLimit}, inc: spec.Incarnation, done: make(chan struct{})}
	var st Status
	if err := readJSON(filepath.Join(dir, statusFile), &st); err == nil {
		e.st = st
		close(e.done)
		return st, e, true
	}
	// A shim launched moments before the previous agent died may not have
	// written child.json yet: give a young one a moment.
	if fi, err := os.Stat(filepath.Join(dir, specFile)); err == nil && time.Since(fi.ModTime()) < 30*time.Second {
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if exists(filepath.Join(dir, childFile)) || exists(filepath.Join(dir, statusFile)) {
				break
			}
		}
		if err := readJSON(filepath.Join(dir, statusFile), &st); err == nil {
			e.st = st
			close(e.done)
			return st, e, true
		}
	}
	var ci childInfo
	if err := readJSON(filepath.Join(dir, childFile), &ci); err == nil && ci.Server != "" {
		e.st = Status{ID: id, State: Running, PID: ci.PID, ShimPID: ci.ShimPID, StartedAt: ci.StartedAt, MemoryLimit: spec.MemoryLimit, LogPath: ci.LogPath}
		srv, err := m.connect(ci)
		if err == nil {
			e.srv = srv
			m.log.Info("adopted process", "id", id, "pid", ci.PID, "shim_server_pid", ci.ShimPID)
			return e.st, e, true
		}
		m.log.Warn("adopt", "id", id, "err", err)
		if err := readJSON(filepath.Join(dir, statusFile), &st); err == nil {
			e.st = st
			close(e.done)
			return st, e, true
		}
	} else if err == nil {
		e.st = Status{ID: id, State: Running, PID: ci.PID, ShimPID: ci.ShimPID, StartedAt: ci.StartedAt, MemoryLimit: spec.MemoryLimit, LogPath: ci.LogPath}
		if fd, err := unix.PidfdOpen(ci.ShimPID, unix.PIDFD_NONBLOCK); err == nil {
			// Same process? Check the start time after opening the pidfd.
			if t, err := startTime(ci.ShimPID); err == nil && t == ci.ShimStart {
				f, err := pidfdFile(fd)
				if err == nil {
					e.pidfd = f
					m.log.Info("adopted process", "id", id, "pid", ci.PID, "shim_pid", ci.ShimPID)
					return e.st, e, true
				}
			} else {
				unix.Close(fd)
			}
		}
		// The shim may have written status.json just before exiting.
		if err := readJSON(filepath.Join(dir, statusFile), &st); err == nil {
			e.st = st
			close(e.done)
			return st, e, true
		}
	}
	st = m.lost(id, e, os.ErrNotExist)
	e.st = st
	close(e.done)
	return st, e, true
}

// Stop asks the process to stop: SIGTERM to its process group (through the
// shim, which forwards it), then after grace SIGKILL to the process group and
// everything in its cgroup. It blocks until the process has ended or ctx is
// done; run it in a goroutine for a non-blocking stop. Stopping an ended
// process is a no-op. Stop never kills the shim, which records the status.
func (m *Manager) Stop(ctx context.Context, id string, grace time.Duration) error {
	m.mu.Lock()
	e, ok := m.procs[id]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("proc: stop %s: %w", id, ErrUnknown)
	}
	select {
	case <-e.done:
		return nil
	default:
	}
	m.mu.Lock()
	e.stopped = true
	m.mu.Unlock()
	if grace > 0 {
		m.signalShim(id, e, unix.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-e.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	m.mu.Lock()
	e.escalated = grace > 0
	e.stopped = true
	m.mu.Unlock()
	m.log.Info("killing process", "id", id, "grace", grace)
	m.signalShim(id, e, unix.SIGUSR1)
	if g, err := m.group(id, e); err == nil {
		if err := g.Kill(); err != nil {
			m.log.Warn("stop: kill cgroup", "id", id, "err", err)
		}
	}
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("proc: stop %s: still running 30s after SIGKILL", id)
	}
}

// group returns the cgroup of process id: the handle its entry kept (e may
// be nil), else, for a process known only from disk, the group loaded by
// name (an error wrapping cgroup.ErrNotExist when there is none).
func (m *Manager) group(id string, e *entry) (cgroup.Group, error) {
	if e != nil {
		m.mu.Lock()
		g := e.group
		m.mu.Unlock()
		if g != nil {
			return g, nil
		}
	}
	g, err := m.cg.Load(id)
	if err != nil {
		return nil, err
	}
	if e != nil {
		m.mu.Lock()
		e.group = g
		m.mu.Unlock()
	}
	return g, nil
}

// signalShim signals the shim of process id: its shim server, which
// signals the child unless it has ended, or a per-process shim through its
// pidfd (immune to pid reuse). SIGUSR1 means: kill the process group and
// the cgroup.
func (m *Manager) signalShim(id string, e *entry, sig unix.Signal) {
	m.mu.Lock()
	f, srv := e.pidfd, e.srv
	m.mu.Unlock()
	if srv != nil {
		name := unix.SignalName(sig)
		if sig == unix.SIGUSR1 {
			name = signalKill
		}
		if err := srv.send(serverMsg{Op: opSignal, ID: id, Signal: name}); err != nil {
			m.log.Warn("signal through the shim server", "id", id, "signal", name, "err", err)
		}
		return
	}
	if f == nil {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if err := unix.PidfdSendSignal(int(fd), sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			m.log.Warn("signal shim", "signal", unix.SignalName(sig), "err", err)
		}
	})
}

// Status returns what is known about a process.
func (m *Manager) Status(id string) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.procs[id]
	if !ok {
		return Status{}, false
	}
	return e.status(), true
}

// List returns every known process, sorted by id.
func (m *Manager) List() []Status {
	m.mu.Lock()
	out := make([]Status, 0, len(m.procs))
	for _, e := range m.procs {
		out = append(out, e.status())
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Stats returns the resident memory and CPU time of a process and its
// descendants (from its cgroup; from /proc for the main process only when
// cgroups are disabled).
func (m *Manager) Stats(id string) (rss uint64, cpu time.Duration, err error) {
	st, ok := m.Status(id)
	if !ok {
		return 0, 0, fmt.Errorf("proc: stats %s: %w", id, ErrUnknown)
	}
	if m.cg.Enabled() {
		m.mu.Lock()
		e := m.procs[id]
		m.mu.Unlock()
		g, err := m.group(id, e)
		if err != nil {
			return 0, 0, fmt.Errorf("proc: stats %s: %w", id, err)
		}
		s, err := g.Stats()
		if err != nil {
			return 0, 0, fmt.Errorf("proc: stats %s: %w", id, err)
		}
		return s.RSS, s.CPUUsage, nil
	}
	if st.State != Running || st.PID <= 0 {
		return 0, 0, nil
	}
	rss, cpu, err = procUsage(st.PID)
	if err != nil {
		return 0, 0, fmt.Errorf("proc: stats %s: %w", id, err)
	}
	return rss, cpu, nil
}

// Pipes returns the paths of a process's worker FIFOs (Spec.Stdin): the
// agent writes the process's stdin to in and reads its stdout from out.
func (m *Manager) Pipes(id string) (in, out string) {
	dir := filepath.Join(m.procsDir, id)
	return filepath.Join(dir, stdinFIFO), filepath.Join(dir, stdoutFIFO)
}

// AppendLog opens the log of process id for appending (the agent writes a
// job process's non-protocol output there). It opens the file as the
// process's user, never through a symlink, and accepts only a regular file
// with one link owned by that user: a log the user replaced by a symlink
// or a hard link to a file of root's is refused, and root's file is left
// untouched.
func (m *Manager) AppendLog(id string) (*os.File, error) {
	st, ok := m.Status(id)
	if !ok {
		return nil, fmt.Errorf("proc: log of %s: %w", id, ErrUnknown)
	}
	if st.LogPath == "" {
		return nil, fmt.Errorf("proc: log of %s: the process has no log", id)
	}
	dir := filepath.Join(m.procsDir, id)
	var ss shimSpec
	if err := readJSON(filepath.Join(dir, specFile), &ss); err != nil {
		return nil, fmt.Errorf("proc: log of %s: %w", id, err)
	}
	cred, err := credential(&ss.Spec)
	if err != nil {
		return nil, fmt.Errorf("proc: log of %s: %w", id, err)
	}
	uid := uint32(os.Getuid())
	if cred != nil {
		uid = cred.Uid
	}
	var f *os.File
	open := func() error {
		var err error
		f, err = os.OpenFile(st.LogPath, userWriteFlags|os.O_APPEND, 0)
		return err
	}
	if filepath.Dir(st.LogPath) == dir {
		err = open() // the process directory is root's and out of the user's reach
	} else {
		err = asUser(cred, open)
	}
	if err != nil {
		return nil, fmt.Errorf("proc: cannot open the log of %s as %s: %w", id, userName(ss.User, cred), err)
	}
	if err := checkUserFile(f, uid); err != nil {
		f.Close()
		return nil, fmt.Errorf("proc: refusing the log of %s, %s: %w", id, st.LogPath, err)
	}
	return f, nil
}

// forgetMemory is how many forgotten ids a Manager remembers: the head
// repeats its acknowledgement of an ended process in every desired state
// until the agent's next heartbeat no longer reports it, hundreds of times
// a second under short jobs.
const forgetMemory = 4096

// Forget removes an ended process: its directory and its cgroup. Call it
// once the head has acknowledged the exit. Forgetting a process again is a
// no-op (for the last forgetMemory ids, without a system call).
func (m *Manager) Forget(id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	m.mu.Lock()
	e, ok := m.procs[id]
	_, done := m.forgotten[id]
	m.mu.Unlock()
	if !ok && done {
		return nil
	}
	if ok {
		select {
		case <-e.done:
		default:
			return fmt.Errorf("proc: forget %s: %w", id, ErrRunning)
		}
	}
	if g, err := m.group(id, e); err == nil {
		// The shim killed what the process left when it ended, so the
		// group is empty and goes at once; if not (something entered it
		// since, or the shim died first), kill what is inside and delete
		// it then.
		if err := g.Delete(); err != nil {
			if err := g.Kill(); err != nil {
				m.log.Warn("forget: kill leftovers", "id", id, "err", err)
			}
			if err := g.Delete(); err != nil {
				return fmt.Errorf("proc: forget %s: %w", id, err)
			}
		}
	}
	if err := removeProcDir(filepath.Join(m.procsDir, id)); err != nil {
		return fmt.Errorf("proc: forget %s: %w", id, err)
	}
	m.mu.Lock()
	delete(m.procs, id)
	m.rememberForgotten(id)
	m.mu.Unlock()
	return nil
}

// removeProcDir removes a process's directory: the files a process
// leaves, by name, then the directory, which is four system calls where
// os.RemoveAll reads the directory and fails three calls on the way (the
// agent forgets every process it ran). Anything else in it (a per-process
// shim's log, a temporary file a crash left) falls back to os.RemoveAll.
func removeProcDir(dir string) error {
	for _, name := range []string{specFile, childFile, statusFile} {
		if err := unix.Unlink(filepath.Join(dir, name)); err != nil && !errors.Is(err, unix.ENOENT) {
			return os.RemoveAll(dir)
		}
	}
	switch err := unix.Rmdir(dir); {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	default:
		return os.RemoveAll(dir)
	}
}

// rememberForgotten adds id to the forgotten ids, dropping the oldest
// beyond forgetMemory; m.mu is held.
func (m *Manager) rememberForgotten(id string) {
	if _, ok := m.forgotten[id]; ok {
		return
	}
	if m.forgotten == nil {
		m.forgotten = make(map[string]struct{}, forgetMemory)
	}
	if len(m.forgottenOrder) >= forgetMemory {
		delete(m.forgotten, m.forgottenOrder[0])
		m.forgottenOrder = m.forgottenOrder[1:]
	}
	m.forgotten[id] = struct{}{}
	m.forgottenOrder = append(m.forgottenOrder, id)
}

// Close stops the watchers and waits for them (and for running OnExit
// calls). It never kills a process: a new Manager can Adopt them.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	for _, e := range m.procs {
		if e.pidfd != nil {
			e.pidfd.Close()
		}
	}
	var own []*shimServer // started by this Manager, with no process left
	for _, srv := range m.servers {
		srv.conn.Close() // it exits once its processes have ended
		if srv.proc != nil {
			if len(m.unfinished(srv)) > 0 {
				_ = srv.proc.Release()
			} else {
				own = append(own, srv)
			}
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
	for _, srv := range own {
		_, _ = srv.proc.Wait() // no client, no process: it exits now
	}
	m.devnull.Close()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// shimEnv is the environment of a shim: the agent's, GOMAXPROCS=1 and
// Config.ShimEnv. A shim waits and copies; with one P its runtime starts
// fewer threads and GC workers (a shim's start measured 2.3 -> 1.6 ms of
// CPU with `perf stat`). The process the shim starts gets the spec's
// environment, not this one.
func (m *Manager) shimEnv() []string {
	return append(append(os.Environ(), "GOMAXPROCS=1"), m.cfg.ShimEnv...)
}

// serverEnv is the environment of a shim server on a machine of cpus
// cores: a shim's, with the server's own GOMAXPROCS (serverProcs). A
// GOMAXPROCS in the agent's environment comes first and wins.
func (m *Manager) serverEnv(cpus int) []string {
	return append(append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", serverProcs(cpus))), m.cfg.ShimEnv...)
}

// serverProcs is how many Ps a shim server runs its Go code on, on a
// machine of cpus cores. Its launches and the records of ends run on
// goroutines (up to maxLaunches and maxFinishes at once), but on one P
// only one of them runs Go code at a time, and a goroutine in a system
// call keeps the P until sysmon takes it back: that is the serial step
// that caps a node's launch rate once it has cores to spare. On a small
// machine a second P cost CPU per launch and gained nothing
// (docs/performance.md, "The shim server launches in parallel": 2 cores,
// 1.80-1.96 against 1.62-1.82 ms), so one P up to 7 cores, then a P per 4
// cores up to maxLaunches.
func serverProcs(cpus int) int {
	if cpus < 8 {
		return 1
	}
	return min(cpus/4, maxLaunches)
}
