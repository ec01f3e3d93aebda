package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/cgroup"
)

// DefaultMaxOutput is how much of a run's stdout and of its stderr
// Manager.Run keeps when RunSpec.MaxOutput is 0.
const DefaultMaxOutput = 64 << 10

// runsDir holds the directories of Manager.Run processes under DataDir.
const runsDir = "runs"

// killWait is how long Run waits for the shim to record the end of a
// killed run before it kills the shim too.
const killWait = 5 * time.Second

// RunSpec describes a short-lived program for Manager.Run: it gets Stdin on
// its standard input, its output is captured, and it is killed (with its
// process group and everything in its cgroup) at the timeout.
type RunSpec struct {
	// Name says what the run is for ("ping-17"); it names the run's
	// directory and cgroup (with a sequence number) and must be a valid
	// process id (see ValidID).
	Name string

	// Target user, as for Spec.
	User   string
	UID    uint32
	GID    uint32
	Groups []uint32

	// Path, Args, Env and Dir as for Spec.
	Path string
	Args []string
	Env  []string
	Dir  string
	// DirIfExists: run in / when the user cannot reach Dir (as for Spec).
	DirIfExists bool
	// Umask as for Spec: nil means 0o022.
	Umask *int

	// Stdin is written to the program's standard input, which is then
	// closed.
	Stdin []byte
	// MemoryLimit in bytes for the run's cgroup (0 = none); swap is capped
	// too.
	MemoryLimit int64
	// Timeout bounds the whole run, start included; it must be positive.
	Timeout time.Duration
	// MaxOutput is how many bytes of stdout and of stderr are kept (the
	// last ones); 0 means DefaultMaxOutput.
	MaxOutput int
	// GPUFence as for Spec.
	GPUFence *GPUFence
}

// RunResult is the outcome of a run that started.
type RunResult struct {
	// Stdout and Stderr are the last MaxOutput bytes the program (and its
	// children) wrote; Truncated says some were dropped.
	Stdout, Stderr []byte
	Truncated      bool
	// TimedOut: the run was killed at its timeout.
	TimedOut bool
	// ExitCode is -1 when the program was killed by a signal.
	ExitCode  int
	Signal    string
	OOMKilled bool
	// OOMKills: processes of the program's tree the OOM killer killed
	// (Status.OOMKills).
	OOMKills uint64
	// Reason is for humans: "exited with code 3", "killed by SIGKILL",
	// "exceeded its memory limit of 64 MiB".
	Reason   string
	Duration time.Duration
}

// LaunchError is returned by Run when the program could not be started
// (no such file, unknown user, missing working directory).
type LaunchError struct{ Reason string }

func (e *LaunchError) Error() string { return e.Reason }

// Run runs a short-lived program through the shim, like Start, but waits
// for it: in its own cgroup with a memory cap, as the user, with rs.Stdin on
// its standard input and its standard output and error captured (bounded).
// At the timeout, or when ctx ends, the process group and everything in the
// cgroup are killed. Nothing of the run is left afterwards: no directory,
// no cgroup, no OnExit call, nothing for Adopt.
//
// The error is a *LaunchError when the program could not be started, and
// another error when the run could not be attempted; a program that ran and
// failed, or timed out, is a RunResult.
func (m *Manager) Run(ctx context.Context, rs RunSpec) (RunResult, error) {
	if err := ValidID(rs.Name); err != nil {
		return RunResult{}, err
	}
	if rs.Timeout <= 0 {
		return RunResult{}, fmt.Errorf("proc: run %s: no timeout", rs.Name)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return RunResult{}, ErrClosed
	}
	m.runSeq++
	id := fmt.Sprintf("run-%s-%d", rs.Name, m.runSeq)
	m.mu.Unlock()
	spec := Spec{ID: id, Kind: "RUN", User: rs.User, UID: rs.UID, GID: rs.GID, Groups: rs.Groups,
		Path: rs.Path, Args: rs.Args, Env: rs.Env, Dir: rs.Dir, DirIfExists: rs.DirIfExists, MemoryLimit: rs.MemoryLimit,
		Umask: rs.Umask, GPUFence: rs.GPUFence}
	if err := spec.validate(); err != nil {
		return RunResult{}, err
	}
	if rs.MaxOutput <= 0 {
		rs.MaxOutput = DefaultMaxOutput
	}
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(rs.Timeout))
	defer cancel()

	dir := filepath.Join(m.cfg.DataDir, runsDir, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return RunResult{}, fmt.Errorf("proc: run %s: %w", id, err)
	}
	defer os.RemoveAll(dir)
	group, err := m.cg.Create(id, cgroup.Resources{MemoryLimit: rs.MemoryLimit, SwapLimit: cgroup.NoSwap})
	if err != nil {
		return RunResult{}, fmt.Errorf("proc: run %s: %w", id, err)
	}
	defer func() {
		if err := group.Kill(); err != nil {
			m.log.Warn("run: kill leftovers", "id", id, "err", err)
		}
		if err := group.Delete(); err != nil {
			m.log.Warn("run: delete cgroup", "id", id, "err", err)
		}
	}()
	ss := shimSpec{Spec: spec, Oneshot: true, CgroupEnabled: m.cg.Enabled(), CgroupRoot: m.cg.Root(), CgroupMode: m.cg.Mode(), CgroupMount: m.cg.Mountpoint(), CgroupName: group.Name()}
	if err := writeJSON(dir, specFile, ss, false); err != nil {
		return RunResult{}, fmt.Errorf("proc: run %s: %w", id, err)
	}

	r := &run{dir: dir, m: m, max: rs.MaxOutput}
	defer r.closeAll()
	p, err := r.launch()
	if err != nil {
		return RunResult{}, fmt.Errorf("proc: run %s: %w", id, err)
	}
	exited := make(chan struct{})
	go func() { // ends when the shim does; Run waits for it below
		defer close(exited)
		_, _ = p.Wait()
	}()
	killed, timedOut := false, false
	kill := func() {
		killed, timedOut = true, errors.Is(ctx.Err(), context.DeadlineExceeded)
		_ = p.Signal(syscall.SIGUSR1) // the shim kills the process group and the cgroup
		if err := group.Kill(); err != nil {
			m.log.Warn("run: kill", "id", id, "err", err)
		}
		t := time.NewTimer(killWait)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			m.log.Warn("run: shim did not end after the kill; killing it", "id", id, "pid", p.Pid)
			_ = p.Kill()
			<-exited
		}
	}

	h, err := readHandshake(ctx, r.hs)
	switch {
	case err != nil && ctx.Err() != nil:
		kill()
		if !timedOut {
			return RunResult{}, fmt.Errorf("proc: run %s: %w", id, ctx.Err())
		}
		return RunResult{TimedOut: true, ExitCode: -1, Reason: "did not start within " + rs.Timeout.String(), Duration: time.Since(start)}, nil
	case err != nil:
		kill()
		return RunResult{}, fmt.Errorf("proc: run %s: shim %d: %w%s", id, p.Pid, err, shimLogTail(dir))
	case h.Error != "":
		<-exited
		return RunResult{}, &LaunchError{Reason: h.Error}
	}

	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // the program's stdin
		defer wg.Done()
		_, _ = r.stdin.Write(rs.Stdin)
		r.stdin.Close()
	}()
	go func() { defer wg.Done(); _, _ = io.Copy(r.stdout, r.outR) }()
	go func() { defer wg.Done(); _, _ = io.Copy(r.stderr, r.errR) }()
	select {
	case <-exited:
	case <-ctx.Done():
		kill()
	}
	// Everything in the cgroup (or, without cgroups, in the process group)
	// is gone; a process that escaped both may still hold the pipes.
	now := time.Now()
	_ = r.stdin.SetWriteDeadline(now)
	_ = r.outR.SetReadDeadline(now.Add(100 * time.Millisecond))
	_ = r.errR.SetReadDeadline(now.Add(100 * time.Millisecond))
	wg.Wait()

	if killed && !timedOut {
		return RunResult{}, fmt.Errorf("proc: run %s: %w", id, ctx.Err())
	}
	res := RunResult{TimedOut: timedOut, Duration: time.Since(start)}
	res.Stdout, res.Stderr = r.stdout.bytes(), r.stderr.bytes()
	res.Truncated = r.stdout.dropped || r.stderr.dropped
	var st Status
	if err := readJSON(filepath.Join(dir, statusFile), &st); err != nil {
		res.ExitCode, res.Reason = -1, "the shim ended without recording the exit"+shimLogTail(dir)
		return res, nil
	}
	res.ExitCode, res.Signal, res.OOMKilled, res.OOMKills, res.Reason = st.ExitCode, st.Signal, st.OOMKilled, st.OOMKills, st.Reason
	return res, nil
}

// run holds the pipes of one Manager.Run.
type run struct {
	dir string
	m   *Manager
	max int

	hs             *os.File // handshake, read end
	stdin          *os.File // the program's stdin, write end
	outR, errR     *os.File // its stdout and stderr, read ends
	stdout, stderr *tailBuffer
	files          []*os.File // everything to close at the end
}

// launch starts the shim with the handshake pipe on fd 3 and the program's
// stdin, stdout and stderr on fds 4, 5 and 6.
func (r *run) launch() (*os.Process, error) {
	r.stdout, r.stderr = &tailBuffer{max: r.max}, &tailBuffer{max: r.max}
	pipe := func() (rd, wr *os.File, err error) {
		rd, wr, err = os.Pipe()
		if err == nil {
			r.files = append(r.files, rd, wr)
		}
		return rd, wr, err
	}
	var hsW, inR, outW, errW *os.File
	var err error
	if r.hs, hsW, err = pipe(); err != nil {
		return nil, err
	}
	if inR, r.stdin, err = pipe(); err != nil {
		return nil, err
	}
	if r.outR, outW, err = pipe(); err != nil {
		return nil, err
	}
	if r.errR, errW, err = pipe(); err != nil {
		return nil, err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	shimOut, err := os.OpenFile(filepath.Join(r.dir, shimLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	defer shimOut.Close()
	argv := append(slices.Clone(r.m.cfg.ShimCommand), r.dir)
	p, err := os.StartProcess(argv[0], argv, &os.ProcAttr{
		Dir:   "/",
		Env:   r.m.shimEnv(),
		Files: []*os.File{devnull, shimOut, shimOut, hsW, inR, outW, errW},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	// The shim has its copies; ours of the child's ends must go, or the
	// read ends never see end of file.
	for _, f := range []*os.File{hsW, inR, outW, errW} {
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("launching the shim %q: %w", argv[0], err)
	}
	return p, nil
}

func (r *run) closeAll() {
	for _, f := range r.files {
		f.Close()
	}
}

// shimLogTail returns ": <the end of shim.log>" or "".
func shimLogTail(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, shimLog))
	if err != nil || len(b) == 0 {
		return ""
	}
	return ": " + strings.TrimSpace(string(b[max(0, len(b)-500):]))
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
		b.dropped = true
	}
	return len(p), nil
}

func (b *tailBuffer) bytes() []byte {
	if len(b.buf) > b.max {
		b.dropped = true
		return b.buf[len(b.buf)-b.max:]
	}
	return b.buf
}

// cleanRuns removes what runs of a previous agent left (a run normally
// removes its directory and cgroup itself): their processes are killed.
func (m *Manager) cleanRuns() {
	dir := filepath.Join(m.cfg.DataDir, runsDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			m.log.Warn("cannot list old runs", "dir", dir, "err", err)
		}
		return
	}
	for _, de := range ents {
		if g, err := m.cg.Load(de.Name()); err == nil {
			_ = g.Kill()
			if err := g.Delete(); err != nil {
				m.log.Warn("cannot remove the cgroup of an old run", "id", de.Name(), "err", err)
			}
		}
		if err := os.RemoveAll(filepath.Join(dir, de.Name())); err != nil {
			m.log.Warn("cannot remove an old run", "id", de.Name(), "err", err)
		}
	}
}
