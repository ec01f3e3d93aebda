package cgroup

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// NoSwap as [Resources.SwapLimit] means "no swap beyond the memory limit".
const NoSwap int64 = -1

// Mode names returned by [Manager.Mode].
const (
	ModeV1       = "v1"
	ModeHybrid   = "hybrid" // v1 controllers, cgroup2 mounted at /sys/fs/cgroup/unified
	ModeV2       = "v2"
	ModeDisabled = "disabled"
)

var (
	// ErrNotWritable is wrapped by [New] when the cgroup filesystem cannot be
	// written (typically: the agent does not run as root).
	ErrNotWritable = errors.New("cgroups are not writable")
	// ErrUnavailable is wrapped by [New] when the host has no usable cgroup
	// hierarchy with a memory controller.
	ErrUnavailable = errors.New("no usable cgroup memory controller")
	// ErrDisabled is returned by [Group.Stats] in disabled mode.
	ErrDisabled = errors.New("cgroups disabled: no statistics")
	// ErrNoCgroupFD is returned by [Group.OpenFD] when the group cannot be
	// used with clone-into-cgroup (cgroup v1, or disabled mode).
	ErrNoCgroupFD = errors.New("clone into cgroup needs cgroup v2")
	// ErrNotExist is wrapped by [Manager.Load] when the group does not exist.
	ErrNotExist = os.ErrNotExist
)

// Resources are the limits applied to a group.
type Resources struct {
	// MemoryLimit in bytes; 0 means no limit.
	MemoryLimit int64
	// SwapLimit: NoSwap (-1) caps swap so the group cannot use swap beyond its
	// memory limit (v1 memsw.limit_in_bytes = MemoryLimit, v2 memory.swap.max =
	// 0); 0 leaves the host default; > 0 allows that many bytes of swap in
	// addition to MemoryLimit. Ignored without a MemoryLimit, and skipped on
	// hosts that do not account swap.
	SwapLimit int64
	// CPUWeight in cgroup v2 units (1..10000, default 100); 0 leaves the
	// default. On v1 it is converted to cpu.shares (weight*1024/100).
	CPUWeight uint64
}

// Stats are a snapshot of a group's usage.
type Stats struct {
	MemoryUsage    uint64 // bytes charged to the group, page cache included
	MemoryMaxUsage uint64 // high-water mark (v2: memory.peak, 0 if the kernel lacks it)
	MemoryLimit    uint64 // 0 = no limit
	RSS            uint64 // anonymous memory (v1 total_rss, v2 anon)
	SwapUsage      uint64
	CPUUsage       time.Duration // user+system CPU time of everything in the group
	OOMKills       uint64
	Pids           uint64 // processes and threads currently in the group (0 if unknown)
}

// Group is one cgroup under the manager's root.
type Group interface {
	// Name is the name given to Create or Load.
	Name() string
	// Path is a human-readable location, for logs and errors.
	Path() string
	// AddProc moves a process (all its threads) into the group.
	AddProc(pid int) error
	// Procs lists the processes in the group and its descendants.
	Procs() ([]int, error)
	// OOMKills is the number of processes the kernel OOM killer killed in the
	// group because of its memory limit (see OOMExact): any process in it,
	// not only the one started there first.
	OOMKills() (uint64, error)
	// OOMExact reports whether OOMKills is an exact kernel counter (true on
	// v2 and on v1 kernels with the oom_kill line in memory.oom_control), or
	// the v1 fallback (1 if memory.failcnt > 0), which needs corroboration.
	OOMExact() bool
	// Stats returns current usage.
	Stats() (Stats, error)
	// PeakMemory is the group's memory high-water mark in bytes, page
	// cache included (v2 memory.peak, v1 memory.max_usage_in_bytes): one
	// file read, for the accounting of an ended process. 0 when the kernel
	// does not keep one.
	PeakMemory() (uint64, error)
	// Kill sends SIGKILL to everything in the group (v2 cgroup.kill when the
	// kernel has it, else freeze + kill + thaw, repeated until the group is
	// empty) and waits up to a few seconds for the group to be empty.
	Kill() error
	// Delete removes the group; it fails if processes are still inside.
	Delete() error
	// Update changes the limits.
	Update(Resources) error
	// FenceDevices denies the group's processes the opening (read, write,
	// mknod) of the character devices f.Major:0..f.Minors-1 except
	// f.Allowed; every other device stays as it was. Call it before a
	// process starts in the group. v1: the devices controller (the group
	// gets a directory in the devices hierarchy, one deny rule per denied
	// minor; it fails with ErrUnavailable where that controller is not
	// mounted), and StartIn and AddProc of this Group value (not of one
	// from Load) put processes there too. v2: a BPF_PROG_TYPE_CGROUP_DEVICE
	// program attached to the group with BPF_F_ALLOW_MULTI (so ancestors'
	// device programs still apply); a second call attaches a second
	// program, and an access must pass both. Needs root. Disabled mode:
	// nothing is fenced.
	FenceDevices(f DeviceFence) error
	// OpenFD opens the group's directory for clone-into-cgroup
	// (SysProcAttr.UseCgroupFD). The caller closes the fd. It returns
	// ErrNoCgroupFD on v1 and in disabled mode.
	OpenFD() (int, error)
}

// Options configure [NewWithOptions].
type Options struct {
	// Root is the root group, relative to the hierarchy root ("ducc",
	// "ducc-test-1234"). Nested paths ("system.slice/ducc") are allowed.
	Root   string
	Logger *slog.Logger
	// Mode forces "v1" or "v2" instead of detecting it (tests; "" detects).
	Mode string
	// Mountpoint overrides the cgroup mount point: the v1 parent of the
	// controller directories (default /sys/fs/cgroup) or the v2 mount
	// (default /sys/fs/cgroup, /sys/fs/cgroup/unified on hybrid hosts).
	Mountpoint string
}

// Manager creates and loads groups under one root group.
type Manager struct {
	root    string
	mode    string
	mount   string
	log     *slog.Logger
	backend backend
}

type backend interface {
	create(name string, r Resources) (Group, error)
	load(name string) (Group, error)
	startIn(g Group, start func(cgroupFD int) error) error
	removeRoot() error
}

const v1Mount = "/sys/fs/cgroup"

// New detects the host's cgroup mode and prepares the root group. It fails
// with an error wrapping ErrNotWritable when the caller may not write cgroups
// (use NewDisabled for a non-root development agent), or ErrUnavailable when
// the host has no memory controller.
func New(root string, logger *slog.Logger) (*Manager, error) {
	return NewWithOptions(Options{Root: root, Logger: logger})
}

// NewWithOptions is New with overrides, for tests and unusual hosts.
func NewWithOptions(o Options) (*Manager, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "cgroup")
	root, err := cleanRoot(o.Root)
	if err != nil {
		return nil, err
	}
	m := &Manager{root: root, log: logger}
	mode := o.Mode
	if mode == "" {
		switch hostMode() {
		case ModeV2:
			mode = ModeV2
		case ModeV1:
			mode = ModeV1
		case ModeHybrid:
			mode = ModeHybrid
			if !exists(filepath.Join(v1Mount, "memory")) && hasController(filepath.Join(v1Mount, "unified"), "memory") {
				mode = ModeV2
				if o.Mountpoint == "" {
					o.Mountpoint = filepath.Join(v1Mount, "unified")
				}
			}
		default:
			return nil, fmt.Errorf("cgroup: %w: no cgroup filesystem mounted at %s", ErrUnavailable, v1Mount)
		}
	}
	m.mode = mode
	switch mode {
	case ModeV1, ModeHybrid:
		mp := o.Mountpoint
		if mp == "" {
			mp = v1Mount
		}
		m.mount = mp
		m.backend, err = newV1(mp, root, logger)
	case ModeV2:
		mp := o.Mountpoint
		if mp == "" {
			mp = v1Mount
		}
		m.mount = mp
		m.backend, err = newV2(mp, root, logger)
	default:
		return nil, fmt.Errorf("cgroup: unknown mode %q (want v1 or v2)", mode)
	}
	if err != nil {
		return nil, err
	}
	logger.Debug("cgroups ready", "mode", mode, "root", root)
	return m, nil
}

// hostMode tells how the host mounts cgroups: ModeV2 when /sys/fs/cgroup
// is a cgroup2 filesystem, ModeHybrid when it holds v1 hierarchies and a
// cgroup2 mount at unified/, ModeV1 when it holds only v1 hierarchies, ""
// when there is none.
func hostMode() string {
	var st unix.Statfs_t
	if err := unix.Statfs(v1Mount, &st); err != nil {
		return ""
	}
	switch st.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		return ModeV2
	case unix.TMPFS_MAGIC:
		if err := unix.Statfs(filepath.Join(v1Mount, "unified"), &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return ModeHybrid
		}
		return ModeV1
	}
	return ""
}

// NewDisabled returns a manager whose groups are no-ops: memory caps are not
// enforced and no statistics are available. It logs a warning saying so.
func NewDisabled(logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "cgroup")
	logger.Warn("cgroups disabled: memory caps and GPU fences are NOT enforced and per-process statistics come from /proc (run the agent as root to enable them)")
	return &Manager{mode: ModeDisabled, log: logger, backend: disabledBackend{}}
}

// Mode returns "v1", "hybrid", "v2" or "disabled".
func (m *Manager) Mode() string { return m.mode }

// Enabled reports whether groups are real (not disabled mode).
func (m *Manager) Enabled() bool { return m.mode != ModeDisabled }

// Mountpoint is the cgroup mount in use ("" in disabled mode): for v1 the
// parent of the controller directories, for v2 the unified mount. With Mode
// and Root it lets another process (the shim) open the same manager through
// NewWithOptions.
func (m *Manager) Mountpoint() string { return m.mount }

// Root returns the root group ("" in disabled mode).
func (m *Manager) Root() string { return m.root }

// Create creates (or reuses) the group name under the root and applies r.
func (m *Manager) Create(name string, r Resources) (Group, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	g, err := m.backend.create(name, r)
	if err != nil {
		return nil, fmt.Errorf("cgroup: create %s/%s: %w", m.root, name, err)
	}
	return g, nil
}

// Load opens an existing group. A missing group yields an error wrapping
// ErrNotExist (os.ErrNotExist).
func (m *Manager) Load(name string) (Group, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	g, err := m.backend.load(name)
	if err != nil {
		return nil, fmt.Errorf("cgroup: load %s/%s: %w", m.root, name, err)
	}
	return g, nil
}

// StartIn calls start so that the processes it forks begin inside g, with
// no process migration on the way: it is how the shim starts its child in
// the child's group while the shim itself stays where it is. start must
// fork on the calling goroutine (os.StartProcess and exec.Cmd.Start do:
// Go forks from the calling thread) and hand nothing to other goroutines.
//
//   - v2: start gets an fd of g's directory for clone-into-cgroup
//     (syscall.SysProcAttr UseCgroupFD and CgroupFD); StartIn closes it.
//   - v1: start gets -1 and runs on an OS thread of its own that StartIn
//     has moved, alone, into g in every controller (writing "0" to each
//     controller's tasks file: the kernel moves a thread that moves itself
//     without the global lock that a whole-process move through
//     cgroup.procs takes, and that waits for an RCU grace period, several
//     milliseconds). A child inherits the cgroups of the thread that forks
//     it. The thread is never the process's main thread (the v1 memory
//     controller charges the process's memory to the main thread's group),
//     and after start it moves back to the cgroups it came from (through
//     tasks files the Manager opened at its first StartIn and keeps); if it
//     cannot, it is not reused: the Go runtime ends it. A Manager's v1
//     StartIn calls run at once, each on its own thread, which moves only
//     itself (the kernel serializes the moves, not the forks).
//   - disabled: start gets -1 and runs as is.
//
// StartIn returns start's error as is, or an error of its own (wrapping the
// cause) when g cannot be entered, in which case start was not called.
func (m *Manager) StartIn(g Group, start func(cgroupFD int) error) error {
	return m.backend.startIn(g, start)
}

// RemoveRoot deletes the root group; it fails while groups remain under it.
// A root whose last group has just gone may stay busy for a moment (v1 takes
// a group offline in the background); that is retried, as for a group.
// Agents normally keep their root; tests remove theirs.
func (m *Manager) RemoveRoot() error {
	if err := m.backend.removeRoot(); err != nil {
		return fmt.Errorf("cgroup: remove root %s: %w", m.root, err)
	}
	return nil
}

func cleanRoot(root string) (string, error) {
	r := strings.Trim(root, "/")
	if r == "" {
		return "", errors.New("cgroup: empty root group name")
	}
	for _, p := range strings.Split(r, "/") {
		if p == "" || p == "." || p == ".." {
			return "", fmt.Errorf("cgroup: invalid root group %q", root)
		}
	}
	return r, nil
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00\n") {
		return fmt.Errorf("cgroup: invalid group name %q", name)
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func hasController(dir, c string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(b)) {
		if f == c {
			return true
		}
	}
	return false
}

// permissionError turns EACCES/EPERM/EROFS into a friendly ErrNotWritable.
func permissionError(path string, err error) error {
	if errors.Is(err, os.ErrPermission) || errors.Is(err, errROFS) {
		return fmt.Errorf("cgroup: %w: cannot create %s (running as uid %d): run the agent as root, or run it with cgroups disabled (memory caps will not be enforced): %v",
			ErrNotWritable, path, os.Getuid(), err)
	}
	return fmt.Errorf("cgroup: create %s: %w", path, err)
}

// readProcs lists the pids in dir/cgroup.procs and, when recursive, in the
// cgroup.procs of every sub-group below dir. It reads one directory listing
// per group (the entries' types come with it: no stat per control file). A
// missing dir yields an error wrapping os.ErrNotExist.
func readProcs(dir string, recursive bool) ([]int, error) {
	var out []int
	raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s/cgroup.procs: %w", dir, err)
		}
		out = append(out, pid)
	}
	if !recursive {
		return out, nil
	}
	subs, err := subGroups(dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range subs {
		pids, err := readProcs(sub, true)
		if err != nil && !errors.Is(err, os.ErrNotExist) { // a sub-group may go meanwhile
			return nil, err
		}
		out = append(out, pids...)
	}
	return out, nil
}

// subGroups returns the paths of the groups directly below dir.
func subGroups(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range ents {
		if de.IsDir() {
			out = append(out, filepath.Join(dir, de.Name()))
		}
	}
	return out, nil
}

// removeGroupDir removes one cgroup directory with rmdir(2), sub-groups
// first. The kernel takes the control files with the directory, so nothing
// is unlinked one by one (os.RemoveAll would try, and fail, on every file).
// A missing directory is not an error. The kernel refuses while processes
// are inside: that is an error at once. A group whose last process has just
// ended can stay busy for a moment; that is retried a few times.
func removeGroupDir(dir string) error { return removeDir(dir, true) }

// removeRootDir removes a root group's directory as removeGroupDir does,
// except that a sub-group (a process's group, kept for the next agent) is
// an error at once instead of being removed. A root whose last group has
// just gone can stay busy for a moment, as a group can.
func removeRootDir(dir string) error { return removeDir(dir, false) }

func removeDir(dir string, subGroupsToo bool) error {
	delay := 2 * time.Millisecond
	for try := 0; ; try++ {
		err := rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || try == 6 {
			return &os.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		pids, perr := readProcs(dir, false)
		if perr != nil {
			if errors.Is(perr, os.ErrNotExist) {
				return nil
			}
			return perr
		}
		if len(pids) > 0 {
			return fmt.Errorf("rmdir %s: %d process(es) still inside: %v", dir, len(pids), pids)
		}
		subs, serr := subGroups(dir)
		if serr != nil {
			if errors.Is(serr, os.ErrNotExist) {
				return nil
			}
			return serr
		}
		if len(subs) > 0 && !subGroupsToo {
			return &os.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		for _, sub := range subs {
			if err := removeGroupDir(sub); err != nil {
				return err
			}
		}
		if len(subs) == 0 {
			time.Sleep(delay)
			delay *= 2
		}
	}
}

// waitEmpty polls procs until it returns no pid or the timeout expires.
func waitEmpty(g Group, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		pids, err := g.Procs()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %d process(es) still present after kill: %v", g.Path(), len(pids), pids)
		}
		time.Sleep(delay)
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}
