package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/cgroup"
	"golang.org/x/sys/unix"
)

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// MinimalEnv is the environment a process whose Spec.Env is nil gets: a
// standard PATH, HOME=/, and USER and LOGNAME when user is known. A caller
// that adds to it spells it out with this.
func MinimalEnv(user string) []string {
	env := []string{"PATH=" + defaultPath, "HOME=/"}
	if user != "" {
		env = append(env, "USER="+user, "LOGNAME="+user)
	}
	return env
}

// oneshotFD is the first of the three fds (the child's stdin, stdout and
// stderr) that Manager.Run passes to the shim.
const oneshotFD = 4

// RunShim is the entry point of `ducc shim <procdir>`; it returns the exit
// code for os.Exit. It expects the handshake pipe on fd 3 (the agent passes
// it) and logs its own diagnostics on stderr.
func RunShim(args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "shim")
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: ducc shim <process directory> (started by the ducc agent, not by hand)")
		return 2
	}
	// The pipes the agent passed (fd 3 and, for Manager.Run, fds 4-6)
	// must not leak into the child beyond what start gives it.
	for fd := 3; fd < oneshotFD+3; fd++ {
		syscall.CloseOnExec(fd)
	}
	syscall.Umask(baseUmask) // the files it creates get explicit modes (umask.go)
	hs := os.NewFile(3, "handshake")
	s := &shim{dir: args[0], log: log, hs: hs}
	if err := s.run(); err != nil {
		log.Error("shim failed", "dir", s.dir, "err", err)
		return 1
	}
	return 0
}

// shim is one process under a shim: the whole state of a per-process
// shim (RunShim), or one child of a shim server (RunShimServer).
type shim struct {
	dir  string
	log  *slog.Logger
	hs   *os.File // the handshake pipe of a per-process shim; nil in a server
	spec shimSpec
	st   Status

	// forkMu is the server's lock held across the fork (nil in a
	// per-process shim): see server.forkMu. umask is the server's lock
	// that keeps its file creations out of its forks (nil in a
	// per-process shim).
	forkMu *sync.RWMutex
	umask  *umaskLock

	// Set by launch once the child runs.
	pid       int
	group     cgroup.Group
	oomBefore uint64
	// logFile is the shim's copy of the child's log (nil: none), kept
	// open until the child ended to say there what the memory cap did
	// (oomLogLine).
	logFile *os.File
}

// host is the shim process that is the parent of a child: itself for a
// per-process shim, the server for a server's children. child.json names
// it so that a restarted agent can tell whether it still runs.
type host struct {
	pid    int
	start  uint64 // /proc/<pid>/stat starttime
	server string // the server's socket name; "" for a per-process shim
}

// self is this process as a host (a server adds its socket's name).
func self() host {
	h := host{pid: os.Getpid()}
	h.start, _ = startTime(h.pid)
	return h
}

// cgroupsFunc gives the cgroup manager a spec's processes are placed with.
type cgroupsFunc func(*shimSpec) (*cgroup.Manager, error)

// newCgroups makes the cgroup manager a spec names (a per-process shim
// makes one; a server keeps one per configuration, server.cgroupsFor).
func newCgroups(sp *shimSpec, log *slog.Logger) (*cgroup.Manager, error) {
	if !sp.CgroupEnabled {
		return cgroup.NewDisabled(slog.New(slog.DiscardHandler)), nil
	}
	return cgroup.NewWithOptions(cgroup.Options{Root: sp.CgroupRoot, Mode: sp.CgroupMode, Mountpoint: sp.CgroupMount, Logger: log})
}

// handshake sends the one line to the agent and closes the pipe.
func (s *shim) handshake(h handshake) {
	if s.hs == nil {
		return
	}
	b, _ := json.Marshal(h)
	if _, err := s.hs.Write(append(b, '\n')); err != nil {
		s.log.Warn("handshake", "err", err)
	}
	s.hs.Close()
	s.hs = nil
}

// launchFailed records a launch failure in status.json and returns the
// handshake that reports it.
func (s *shim) launchFailed(reason string) (handshake, error) {
	now := time.Now()
	s.st.State = LaunchFailed
	s.st.ExitCode = -1
	s.st.Reason = reason
	s.st.StartedAt, s.st.EndedAt = now, now
	return handshake{Error: reason}, s.writeJSON(statusFile, s.st, true)
}

// writeJSON writes v to name in the process directory (files.go's
// writeJSON), out of the server's forks: its mode is exact.
func (s *shim) writeJSON(name string, v any, sync bool) error {
	return s.umask.create(func() error { return writeJSON(s.dir, name, v, sync) })
}

func (s *shim) run() error {
	// Catch stop signals before anything else so that an early SIGTERM is
	// not lost (it is forwarded once the child runs).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1)
	// Caught, not ignored: an ignored signal stays ignored in the child.
	signal.Notify(make(chan os.Signal, 1), unix.SIGPIPE)
	if err := defaultIgnoredSignals(); err != nil {
		s.log.Warn("signals the child may inherit ignored", "err", err)
	}

	h, err := s.launch(func(sp *shimSpec) (*cgroup.Manager, error) { return newCgroups(sp, s.log) }, self())
	s.handshake(h)
	if err != nil || h.Error != "" {
		return err
	}

	// Wait, forwarding stop signals to the child's process group.
	waited := make(chan *exit, 1)
	go func() { waited <- wait(s.pid, s.log) }() // ends when the child does
	var ps *exit
	for ps == nil {
		select {
		case sig := <-sigs:
			s.signal(sig.(syscall.Signal))
		case ps = <-waited:
		}
	}
	return s.ended(ps)
}

// launch starts the child of s.dir's spec and returns the handshake for
// the agent: the child's pid, or a launch failure (recorded in
// status.json). An error means that no status could be recorded (an
// unreadable spec, a failed write): the agent then finds the process lost.
func (s *shim) launch(cgroups cgroupsFunc, parent host) (handshake, error) {
	if err := readJSON(filepath.Join(s.dir, specFile), &s.spec); err != nil {
		return handshake{Error: err.Error()}, err
	}
	sp := &s.spec.Spec
	s.st = Status{ID: sp.ID, State: Starting, ShimPID: parent.pid, MemoryLimit: sp.MemoryLimit}
	s.log = s.log.With("id", sp.ID)
	if s.spec.Oneshot && s.forkMu != nil {
		// Its standard streams are fds the agent passes to its own shim.
		return s.launchFailed("a one-shot run needs a shim of its own, not the shim server")
	}

	cmd, err := s.prepare()
	if err != nil {
		return s.launchFailed(err.Error())
	}
	if cmd.logFile != nil {
		defer func() {
			if s.logFile == nil {
				cmd.logFile.Close() // not started: nothing more to say there
			}
		}()
	}

	// Loading and fencing may create cgroup directories (0755): out of
	// the server's forks.
	var cg *cgroup.Manager
	err = s.umask.create(func() error {
		var err error
		cg, err = cgroups(&s.spec)
		if err == nil {
			name := s.spec.CgroupName
			if !s.spec.CgroupEnabled {
				name = sp.ID // a disabled manager's group of that name does nothing
			}
			s.group, err = cg.Load(name)
		}
		if err == nil && sp.GPUFence != nil {
			// Before the child exists; on v1 this Group value also puts the
			// child in its devices group (cgroup.Group.FenceDevices).
			if err = s.group.FenceDevices(sp.GPUFence.deviceFence()); err != nil {
				err = fmt.Errorf("GPU fence: %w", err)
			}
		}
		return err
	})
	if err != nil {
		cmd.removeLog()
		return s.launchFailed("cgroup: " + err.Error())
	}
	s.oomBefore, _ = s.group.OOMKills()

	pid, err := s.start(cmd, cg, s.group)
	if err != nil {
		cmd.removeLog()
		return s.launchFailed(err.Error())
	}
	s.pid = pid
	s.st.State, s.st.PID, s.st.StartedAt = Running, pid, time.Now()
	s.logFile = cmd.logFile // the child has its own; ended writes through this one

	// Rename the log to carry the child pid (<WorkID>-<Kind>-<Node>-<pid>.log).
	final := ""
	if cmd.logPath != "" {
		final = filepath.Join(filepath.Dir(cmd.logPath), sp.logName(pid))
		if err := cmd.logOp(func() error { return os.Rename(cmd.logPath, final) }); err != nil {
			s.log.Warn("rename log", "err", err)
			final = cmd.logPath
		}
	}
	s.st.LogPath = final
	ci := childInfo{PID: pid, ShimPID: parent.pid, ShimStart: parent.start, Server: parent.server, StartedAt: s.st.StartedAt, LogPath: final}
	if err := s.writeJSON(childFile, ci, false); err != nil {
		s.log.Error("write child.json", "err", err)
	}
	return handshake{PID: pid, StartedAt: s.st.StartedAt, LogPath: final}, nil
}

// signal handles a stop signal for the child: SIGUSR1 kills its process
// group and everything in its cgroup, any other is forwarded to its
// process group. The child must not have been reaped (its pid, and so its
// process group, cannot have been reused).
func (s *shim) signal(sig syscall.Signal) {
	s.st.Stopped = true
	if sig == unix.SIGUSR1 {
		s.log.Info("killing process group and cgroup", "pid", s.pid)
		_ = unix.Kill(-s.pid, unix.SIGKILL)
		if err := s.group.Kill(); err != nil {
			s.log.Warn("kill cgroup", "err", err)
		}
		return
	}
	s.log.Info("forwarding signal", "signal", unix.SignalName(sig), "pid", s.pid)
	if err := unix.Kill(-s.pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		s.log.Warn("forward signal", "err", err)
	}
}

// ended records how the reaped child ended in status.json, after killing
// what it left in its cgroup and process group.
func (s *shim) ended(ps *exit) error {
	s.st.EndedAt = time.Now()

	// Anything left behind (daemonized grandchildren, the rest of the
	// process group) goes with the process.
	if left, err := s.group.Procs(); err == nil && len(left) > 0 {
		s.log.Info("killing processes left in the cgroup", "pids", left)
		if err := s.group.Kill(); err != nil {
			s.log.Warn("kill leftovers", "err", err)
		}
	}
	_ = unix.Kill(-s.pid, unix.SIGKILL) // leftovers of the process group (no cgroup)

	s.st.State = Exited
	s.st.MaxRSS, s.st.CPUSeconds = exitUsage(ps, s.group)
	if ps.status.Signaled() {
		s.st.ExitCode = -1
		s.st.Signal = unix.SignalName(ps.status.Signal())
	} else {
		s.st.ExitCode = ps.status.ExitStatus()
	}
	if oomAfter, err := s.group.OOMKills(); err == nil && oomAfter > s.oomBefore {
		s.st.OOMKilled, s.st.OOMKills = oomVerdict(&s.st, oomAfter-s.oomBefore, s.group.OOMExact())
	}
	s.st.Reason = formatReason(&s.st)
	if s.logFile != nil {
		// Like DUCC and Slurm, the log says when the memory cap killed
		// the process or one of its tree: else the log of a process
		// killed at its cap just stops.
		if line := oomLogLine(&s.st); line != "" {
			if _, err := s.logFile.WriteString(line); err != nil {
				s.log.Warn("cannot write the memory cap's kill to the log", "err", err)
			}
		}
		s.logFile.Close()
		s.logFile = nil
	}
	// Not synced to disk: the exit is durable once the head has recorded
	// it (Raft); this file carries it across a restart of the agent, which
	// keeps the page cache. A power loss ends the node's processes anyway
	// and at worst turns an exit not yet reported into a lost process (an
	// unreadable status is one). The two fsyncs were 1.3-2.6 ms on every
	// process's end.
	if err := s.writeJSON(statusFile, s.st, false); err != nil {
		return err
	}
	s.log.Info("process ended", "pid", s.pid, "reason", s.st.Reason)
	return nil
}

// oomVerdict decides, from the rise of the group's OOM kill counter while
// the process lived, whether the process itself ended because of the memory
// cap (killed, or failed because a child it waited for was killed) and how
// many processes of its tree the OOM killer killed. With an exact counter
// every kill counts, also those of children the process survived (it may
// exit 0); without one (v1 kernels before 4.13: the counter is only
// "memory.failcnt > 0", which reaching the limit sets without any kill)
// only a SIGKILL death of the process counts, as one kill. A process that
// was asked to stop ended because of that, not of the cap: its kills are
// still counted.
func oomVerdict(st *Status, rise uint64, exact bool) (killed bool, kills uint64) {
	if !exact {
		if !st.Stopped && (st.Signal == "SIGKILL" || st.ExitCode == 128+int(unix.SIGKILL)) {
			return true, 1
		}
		return false, 0
	}
	return st.ExitCode != 0 && !st.Stopped, rise
}

// exitUsage is the accounting of an ended process: its peak memory and
// its CPU time. The peak is the cgroup's high-water mark (what the memory
// cap limits: one file read); without one, the largest resident set of
// the process or of a child it waited for (getrusage), when that is larger
// than the shim's own: the child shared the shim's memory from the fork to
// its exec, and the kernel counts that too. CPU time is that of the
// process and the children it waited for.
func exitUsage(ps *exit, group cgroup.Group) (maxRSS int64, cpuSeconds float64) {
	ru := ps.usage
	if ru != nil {
		cpuSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if peak, err := group.PeakMemory(); err == nil && peak > 0 {
		return int64(peak), cpuSeconds
	}
	var self syscall.Rusage
	if ru != nil && syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil && ru.Maxrss > self.Maxrss {
		maxRSS = ru.Maxrss * 1024 // KiB on Linux
	}
	return maxRSS, cpuSeconds
}

type preparedCmd struct {
	path    string
	argv    []string
	env     []string
	dir     string
	cred    *syscall.Credential
	who     string // the user, for errors
	logFile *os.File
	logPath string
	userLog bool // the log is in the user's log directory: touch it as the user only
	umask   int
}

// logOp runs fn with the user's filesystem identity when the log is the
// user's, as root when it is in the process directory.
func (c *preparedCmd) logOp(fn func() error) error {
	if !c.userLog {
		return fn()
	}
	return asUser(c.cred, fn)
}

// removeLog removes the log file of a process that did not start.
func (c *preparedCmd) removeLog() {
	if c.logPath != "" {
		_ = c.logOp(func() error { return os.Remove(c.logPath) })
	}
}

// prepare resolves everything that can fail before forking; its errors are
// launch failures and read as such. Everything it looks up or creates on a
// path of the spec (the program, the working directory, the log directory
// and file) it does as the user (asUser), so that the kernel checks each
// path as it would for the user's own process.
func (s *shim) prepare() (*preparedCmd, error) {
	sp := &s.spec.Spec
	c := &preparedCmd{dir: sp.Dir, umask: 0o022}
	if c.dir == "" {
		c.dir = "/"
	}
	if sp.Umask != nil {
		c.umask = *sp.Umask & 0o777
	}
	// What the shim makes for the user (log directories, the log, the
	// worker FIFOs) follows the user's umask too, like the process's own
	// files: each is created with its mode less c.umask, explicitly (the
	// process umask stays baseUmask, umask.go).

	// Identity.
	cred, err := credential(sp)
	if err != nil {
		return nil, err
	}
	c.cred = cred
	c.who = userName(sp.User, cred)

	// Environment.
	c.env = sp.Env
	if c.env == nil {
		c.env = MinimalEnv(sp.User)
	}

	err = asUser(c.cred, func() error {
		// Program.
		path, err := lookPath(sp.Path, c.env)
		if err != nil {
			return err
		}
		c.path = path
		c.argv = append([]string{sp.Path}, sp.Args...)

		// Working directory (a directory the user may not enter still
		// fails at exec time with "permission denied").
		fi, err := os.Stat(c.dir)
		switch {
		case (err != nil || !fi.IsDir()) && sp.DirIfExists:
			c.dir = "/"
		case err != nil:
			return fmt.Errorf("working directory %s: %w", c.dir, unwrapPath(err))
		case !fi.IsDir():
			return fmt.Errorf("working directory %s: not a directory", c.dir)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	if s.spec.Oneshot {
		return c, nil // stdout and stderr go to the agent (Manager.Run)
	}
	if err := s.createLog(c); err != nil {
		return nil, err
	}
	return c, nil
}

// credential is the identity a process of sp runs as: nil when the shim is
// not root (it runs the process as itself, and refuses another uid).
func credential(sp *Spec) (*syscall.Credential, error) {
	uid, gid, groups := sp.UID, sp.GID, sp.Groups
	if sp.User != "" && sp.User != "root" && uid == 0 && gid == 0 {
		var err error
		if uid, gid, groups, err = LookupUser(sp.User); err != nil {
			return nil, err
		}
	}
	if os.Getuid() != 0 {
		if int(uid) != os.Getuid() && !(uid == 0 && sp.User == "") {
			return nil, fmt.Errorf("cannot run as user %q (uid %d): the agent does not run as root", sp.User, uid)
		}
		return nil, nil
	}
	cred := &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}
	if groups == nil {
		cred.Groups = []uint32{}
	}
	return cred, nil
}

// createLog creates the log directory and a fresh log file in it, as the
// user and with the process's umask, as the user's own process would
// (explicit modes, out of the server's forks: umask.go): a
// log directory in a place the user may not write, or a path the user
// pointed (by a symlink) at a directory of root's, fails with a reason and
// creates nothing there. Only the default log directory, the process
// directory (root's, 0700, out of the user's reach), is written as root,
// and the file then given to the user.
func (s *shim) createLog(c *preparedCmd) error {
	return s.umask.create(func() error { return s.createLogLocked(c) })
}

// createLogLocked is createLog's work, with the umask lock held.
func (s *shim) createLogLocked(c *preparedCmd) error {
	sp := &s.spec.Spec
	// 0644 at most, whatever the umask: a log is never writable by others.
	mode := os.FileMode(0o644 &^ c.umask)
	// Until the child's pid names it: the shim's pid and the process id
	// (a shim server launches processes of one work at once).
	name := fmt.Sprintf("%d-%s-%s-starting-%d-%s.log", sp.WorkID, sp.Kind, sp.Node, os.Getpid(), sp.ID)
	if sp.LogDir == "" {
		c.logPath = filepath.Join(s.dir, name)
		f, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
		if err != nil {
			return fmt.Errorf("log file: %w", err)
		}
		if c.cred != nil {
			if err := f.Chown(int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				f.Close()
				os.Remove(c.logPath)
				return fmt.Errorf("log file: %w", err)
			}
		}
		c.logFile = f
		return nil
	}
	c.userLog = true
	if err := mkdirAsUser(sp.LogDir, os.FileMode(0o755&^c.umask), c.cred, c.who); err != nil {
		return err
	}
	c.logPath = filepath.Join(sp.LogDir, name)
	return asUser(c.cred, func() error {
		f, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
		if err != nil {
			return fmt.Errorf("cannot create log file %s as %s: %w", c.logPath, c.who, unwrapPath(err))
		}
		c.logFile = f
		return nil
	})
}

// start forks the child inside the group. The shim itself stays where it
// is: on cgroup v2 the child is cloned straight into the group, on v1 it is
// forked from a thread of the shim that alone stepped into the group for
// the fork (cgroup.Manager.StartIn), so the shim's own memory is never
// charged to the process, and the OOM killer never picks the shim.
func (s *shim) start(c *preparedCmd, cg *cgroup.Manager, group cgroup.Group) (int, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	files := []*os.File{devnull, c.logFile, c.logFile}
	if s.spec.Oneshot {
		// Manager.Run passes the child's stdin, stdout and stderr as fds
		// 4, 5 and 6; the shim closes its copies once the child runs, so
		// that the agent sees end of file when the child is gone.
		for i := range files {
			files[i] = os.NewFile(uintptr(oneshotFD+i), "oneshot")
			defer files[i].Close()
		}
	} else if s.spec.Stdin {
		var in, out *os.File
		err := s.umask.create(func() (err error) {
			in, out, err = openPipes(s.dir, os.FileMode(0o600&^c.umask))
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("worker pipes: %w", err)
		}
		defer in.Close()
		defer out.Close()
		files[0], files[1] = in, out
	}
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	// syscall.ForkExec, not os.StartProcess: the latter's first call in a
	// process forks a throwaway child to learn whether clone can return a
	// pidfd (~0.3 ms of CPU, on every shim). The shim waits with wait4.
	var pid int
	var startErr error
	if s.forkMu != nil {
		s.forkMu.RLock()
		defer s.forkMu.RUnlock()
	}
	err = cg.StartIn(group, func(cgroupFD int) error {
		sys := &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
		if cgroupFD >= 0 {
			sys.UseCgroupFD, sys.CgroupFD = true, cgroupFD
		}
		// The child's umask is the parent's at the fork: set for the
		// fork alone (umask.go).
		s.umask.fork(c.umask, func() {
			pid, startErr = syscall.ForkExec(c.path, c.argv, &syscall.ProcAttr{
				Dir:   c.dir,
				Env:   c.env,
				Files: fds,
				Sys:   sys,
			})
		})
		return startErr
	})
	runtime.KeepAlive(files)
	if startErr != nil {
		return 0, launchError(c, startErr)
	}
	if err != nil {
		return 0, err
	}
	return pid, nil
}

// exit is how a child ended: its wait status and its resource usage
// (nil when wait4 failed).
type exit struct {
	status syscall.WaitStatus
	usage  *syscall.Rusage
}

// wait reaps the child pid. A failed wait4 (never expected: the child is
// the shim's own) reads as an exit with code 0 and no usage, and is logged.
func wait(pid int, log *slog.Logger) *exit {
	var e exit
	var ru syscall.Rusage
	for {
		_, err := syscall.Wait4(pid, &e.status, 0, &ru)
		if err == nil {
			e.usage = &ru
			return &e
		}
		if !errors.Is(err, syscall.EINTR) {
			log.Error("wait", "pid", pid, "err", err)
			return &e
		}
	}
}

// launchError turns a fork/exec error into a reason a user understands.
func launchError(c *preparedCmd, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOEXEC) || errors.Is(err, unix.ENOTDIR) {
		if c.dir != "/" {
			return fmt.Errorf("exec: %s (in %s): %w", c.path, c.dir, err)
		}
		return fmt.Errorf("exec: %s: %w", c.path, err)
	}
	return fmt.Errorf("exec: %s: %w", c.path, err)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lookPath finds a program with no slash in the PATH of env.
func lookPath(prog string, env []string) (string, error) {
	if strings.Contains(prog, "/") {
		return prog, nil
	}
	pathVar := defaultPath
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, prog)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", prog)
}

// Names of the worker FIFOs in a process directory.
const (
	stdinFIFO  = "stdin"
	stdoutFIFO = "stdout"
)

// openPipes creates the worker FIFOs with mode (under the process umask)
// and opens both read-write, so that neither end ever sees EOF or EPIPE
// when the agent goes away.
func openPipes(dir string, mode os.FileMode) (in, out *os.File, err error) {
	for _, name := range []string{stdinFIFO, stdoutFIFO} {
		p := filepath.Join(dir, name)
		if err := unix.Mkfifo(p, uint32(mode.Perm())); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, nil, fmt.Errorf("mkfifo %s: %w", p, err)
		}
	}
	in, err = os.OpenFile(filepath.Join(dir, stdinFIFO), os.O_RDWR, 0)
	if err != nil {
		return nil, nil, err
	}
	out, err = os.OpenFile(filepath.Join(dir, stdoutFIFO), os.O_RDWR, 0)
	if err != nil {
		in.Close()
		return nil, nil, err
	}
	return in, out, nil
}
