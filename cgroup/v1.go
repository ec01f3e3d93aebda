package cgroup

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var errROFS = syscall.EROFS

// v1 controller names.
const (
	ctrlMemory  = "memory"
	ctrlCPU     = "cpu"
	ctrlCPUAcct = "cpuacct"
	ctrlFreezer = "freezer"
	ctrlPids    = "pids"
	ctrlDevices = "devices"
)

// v1 controllers ducc uses; memory is required, the others are used when
// mounted. cpuset, blkio... are left alone (cpuset would need cpus/mems
// copied down for every group); devices is used only by groups that are
// fenced (Group.FenceDevices), so that the others pay nothing for it.
var v1Controllers = []string{ctrlMemory, ctrlCPU, ctrlCPUAcct, ctrlFreezer, ctrlPids}

// unlimited is what v1 memory limit files take to mean no limit.
const unlimited = "-1"

type v1Backend struct {
	mount   string // parent of the controller directories
	root    string // root group, no leading slash
	log     *slog.Logger
	names   []string          // mounted controllers among v1Controllers
	hier    map[string]string // controller -> its hierarchy's directory (co-mounted controllers share one)
	dirs    []string          // the distinct hierarchies of names, memory's first
	dirCtrl []string          // for each of dirs, a controller mounted there
	memsw   bool              // host accounts swap (memory.memsw.*)
	oomLine bool              // memory.oom_control has an oom_kill line
	// devices is the devices hierarchy's directory ("" when not mounted);
	// devicesOwn: it is none of dirs, so that a fenced group has a
	// directory there of its own, made, entered and removed apart.
	devices    string
	devicesOwn bool

	// backMu guards back and devBack, and is held only to read, open or
	// drop them: starts run at once (startIn).
	backMu  sync.Mutex
	back    *ownTasks // tasks files of the process's own groups (ownTasks)
	devBack *ownTasks // the same in the devices hierarchy, opened at the first fenced start
}

func newV1(mount, root string, logger *slog.Logger) (*v1Backend, error) {
	memRoot := filepath.Join(mount, ctrlMemory)
	if !exists(filepath.Join(memRoot, "memory.limit_in_bytes")) {
		return nil, fmt.Errorf("cgroup: %w: %s has no memory.limit_in_bytes (is the v1 memory controller mounted?)", ErrUnavailable, memRoot)
	}
	b := &v1Backend{mount: mount, root: root, log: logger, hier: map[string]string{}}
	b.memsw = exists(filepath.Join(memRoot, "memory.memsw.limit_in_bytes"))
	if oc, err := os.ReadFile(filepath.Join(memRoot, "memory.oom_control")); err == nil {
		b.oomLine = strings.Contains(string(oc), "oom_kill ")
	}
	for _, n := range v1Controllers {
		d := filepath.Join(mount, n)
		if !exists(d) {
			continue
		}
		// "cpu" and "cpuacct" are often links to one "cpu,cpuacct"
		// hierarchy: a group is made, entered and removed there once.
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				d = real
			}
		}
		b.names = append(b.names, n)
		b.hier[n] = d
		if !slices.Contains(b.dirs, d) {
			b.dirs = append(b.dirs, d)
			b.dirCtrl = append(b.dirCtrl, n)
		}
	}
	if d := filepath.Join(mount, ctrlDevices); exists(filepath.Join(d, "devices.deny")) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		b.devices, b.devicesOwn = d, !slices.Contains(b.dirs, d)
		b.hier[ctrlDevices] = d
	}
	// Create the root group in every hierarchy (idempotent); the devices
	// hierarchy's at the first fence.
	for _, d := range b.dirs {
		p := filepath.Join(d, root)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, permissionError(p, err)
		}
	}
	if !b.oomLine {
		logger.Info("kernel has no oom_kill counter in memory.oom_control: OOM kills are inferred from memory.failcnt and SIGKILL")
	}
	if !b.memsw {
		logger.Info("host does not account swap (no memory.memsw.*): swap is not capped")
	}
	return b, nil
}

// create makes the group's directory in every hierarchy (memory's first)
// and applies r. A group that exists already is reused.
func (b *v1Backend) create(name string, r Resources) (Group, error) {
	g := &v1Group{b: b, name: name}
	fresh := true
	for _, d := range b.dirs {
		p := filepath.Join(d, b.root, name)
		if err := mkdir(p); errors.Is(err, unix.EEXIST) {
			fresh = false
		} else if err != nil {
			return nil, &os.PathError{Op: "mkdir", Path: p, Err: err}
		}
	}
	if err := g.apply(r, fresh); err != nil {
		return nil, err
	}
	return g, nil
}

// load only checks that the group exists.
func (b *v1Backend) load(name string) (Group, error) {
	if !exists(filepath.Join(b.hier[ctrlMemory], b.root, name)) {
		return nil, ErrNotExist
	}
	return &v1Group{b: b, name: name}, nil
}

// startIn runs start on a locked OS thread of its own that it has moved
// into vg in every hierarchy. Starts run at once, each on its own thread:
// a thread writing "0" to a tasks file moves itself and nothing else (the
// kernel takes "0" as the writing task, current, whichever fd it writes
// through), and the kernel serializes the moves themselves (cgroup_mutex).
// What the starts share, the open tasks files of the process's own groups,
// is only written to; backMu guards opening and dropping them.
//
// The thread enters memory first and leaves it last, so that Delete,
// which removes memory first, finds the group busy for as long as the
// thread is in it anywhere.
func (b *v1Backend) startIn(g Group, start func(cgroupFD int) error) error {
	vg, ok := g.(*v1Group)
	if !ok {
		return fmt.Errorf("cgroup: %s is not a v1 group", g.Path())
	}
	fenced := vg.fenced && b.devicesOwn
	back, devBack, err := b.ownTasks(fenced)
	if err != nil {
		return fmt.Errorf("cgroup: start in %s: %w", vg.Path(), err)
	}
	var startErr error
	onOwnThread(func() bool {
		// leave moves the thread back out of the first n hierarchies of
		// dirs, and out of the devices one when dev is set; a thread that
		// cannot leave is not reused (fn returns false).
		leave := func(n int, dev bool, what string) bool {
			var berr error
			var left *ownTasks // the devices files, when used
			if dev {
				left = devBack
				berr = moveThreadBack(devBack.files)
			}
			if berr = errors.Join(berr, moveThreadBack(back.files[:n])); berr != nil {
				b.forgetOwnTasks(back, left)
				b.log.Warn("a thread could not leave the group "+what+"; it ends", "cgroup", vg.Path(), "err", berr)
				return false
			}
			return true
		}
		// Memory first: a group gone meanwhile fails before anything moved.
		for i, d := range b.dirs {
			if err = moveThread(filepath.Join(d, b.root, vg.name, "tasks")); err != nil {
				err = fmt.Errorf("cgroup: start in %s: %w", vg.Path(), err)
				return leave(i, false, "it entered")
			}
		}
		if fenced {
			if err = moveThread(filepath.Join(vg.dir(ctrlDevices), "tasks")); err != nil {
				err = fmt.Errorf("cgroup: start in %s: %w", vg.Path(), err)
				return leave(len(b.dirs), false, "it entered")
			}
		}
		startErr = start(-1)
		return leave(len(b.dirs), fenced, "it started a process in")
	})
	if err != nil {
		return err
	}
	return startErr
}

// ownTasks is the tasks files of the process's own groups, one per
// hierarchy (ownTasksFiles), held open for writing. Starts running at
// once write "0" to them, each moving its own thread back (package os
// serializes writes on one file, as the kernel does moves); they are
// written to for nothing else.
type ownTasks struct {
	files []*os.File
}

// ownTasks returns the tasks files of the process's own groups in the
// hierarchies of dirs, and in the devices hierarchy too when devices is
// set (nil otherwise). They are opened once for the backend's life: a
// shim server starts every process of its agent, and its own groups do
// not change under it. After a failed move back they are dropped and
// looked up again at the next start (forgetOwnTasks): someone may have
// moved the process, or removed its old group.
func (b *v1Backend) ownTasks(devices bool) (back, devBack *ownTasks, err error) {
	b.backMu.Lock()
	defer b.backMu.Unlock()
	if b.back == nil {
		if b.back, err = openOwnTasks(b.dirs, b.dirCtrl, b.mount); err != nil {
			return nil, nil, err
		}
	}
	if devices && b.devBack == nil {
		if b.devBack, err = openOwnTasks([]string{b.devices}, []string{ctrlDevices}, b.mount); err != nil {
			return nil, nil, err
		}
	}
	if devices {
		devBack = b.devBack
	}
	return b.back, devBack, nil
}

// openOwnTasks opens the tasks files of ownTasksFiles(dirs, ctrls, mount).
func openOwnTasks(dirs, ctrls []string, mount string) (*ownTasks, error) {
	paths, err := ownTasksFiles(dirs, ctrls, mount)
	if err != nil {
		return nil, err
	}
	t := &ownTasks{files: make([]*os.File, 0, len(paths))}
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_WRONLY, 0) // O_CLOEXEC: package os sets it
		if err != nil {
			t.close()
			return nil, err
		}
		t.files = append(t.files, f)
	}
	return t, nil
}

func (t *ownTasks) close() {
	if t == nil {
		return
	}
	for _, f := range t.files {
		f.Close()
	}
}

// forgetOwnTasks drops and closes back and devBack, the files a thread
// failed to move back through, so that the next start opens them again.
// Files that another start's failure has dropped already are left to it.
// Other starts may be writing to them meanwhile: an os.File's fd is
// closed only once no write is under way on it, and a write after Close
// fails (os.ErrClosed), so a thread that took the files before they were
// dropped may then fail to move back, and ends. That costs a thread,
// rarely (only after a move back failed), and never writes to an fd
// number reused for another file.
func (b *v1Backend) forgetOwnTasks(back, devBack *ownTasks) {
	b.backMu.Lock()
	if b.back == back {
		b.back = nil
	} else {
		back = nil // replaced, and closed, by another start's failure
	}
	if b.devBack == devBack {
		b.devBack = nil
	} else {
		devBack = nil
	}
	b.backMu.Unlock()
	back.close()
	devBack.close()
}

// ownTasksFiles returns the tasks files of the process's own cgroups in
// the hierarchies dirs (ctrls[i] a controller mounted at dirs[i]), in
// their order: where a thread that entered
// a group goes back to (startIn moves no other thread, and never the main
// one). They are read from /proc/self/cgroup, not /proc/thread-self: a
// thread's /proc entries, once looked up, stay cached until the process
// is reaped, and the kernel then walks them (release_task invalidating
// /proc/PID): that walk made reaping each shim cost the agent ~1 ms of
// CPU. The hierarchies are assumed mounted at their root, which holds
// outside cgroup namespaces.
func ownTasksFiles(dirs, ctrls []string, mount string) ([]string, error) {
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	out := make([]string, 0, len(dirs))
	for i, d := range dirs {
		n := ctrls[i]
		p, ok := paths[n]
		if !ok {
			return nil, fmt.Errorf("own %s cgroup not in /proc/self/cgroup", n)
		}
		f := filepath.Join(d, p, "tasks")
		if !exists(f) {
			return nil, fmt.Errorf("own %s cgroup %s not found under %s (cgroup namespace?)", n, p, mount)
		}
		out = append(out, f)
	}
	return out, nil
}

// moveThread moves the calling thread, alone, into the group of the tasks
// file f ("0" is the writer itself).
func moveThread(f string) error { return writeFile(f, []byte("0")) }

// moveThreadBack moves the calling thread into the group of every tasks
// file of files, the last first (memory's last: see startIn), trying
// them all.
func moveThreadBack(files []*os.File) error {
	var errs []error
	for _, f := range slices.Backward(files) {
		if _, err := f.Write([]byte("0")); err != nil { // EINTR retried by package os
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (b *v1Backend) removeRoot() error {
	var errs []error
	dirs := b.dirs
	if b.devicesOwn {
		dirs = append(slices.Clip(dirs), b.devices)
	}
	for _, d := range dirs {
		if err := removeRootDir(filepath.Join(d, b.root)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type v1Group struct {
	b    *v1Backend
	name string
	// fenced: FenceDevices gave the group a devices group of its own, which
	// StartIn and AddProc enter too.
	fenced bool
}

func (g *v1Group) Name() string { return g.name }

func (g *v1Group) Path() string { return g.dir(ctrlMemory) }

func (g *v1Group) dir(ctrl string) string {
	return filepath.Join(g.b.hier[ctrl], g.b.root, g.name)
}

func (g *v1Group) file(ctrl, f string) string {
	return filepath.Join(g.dir(ctrl), f)
}

// AddProc writes pid to cgroup.procs in every hierarchy (memory first, so
// that a group gone meanwhile fails before anything moved).
func (g *v1Group) AddProc(pid int) error {
	b := []byte(strconv.Itoa(pid))
	dirs := g.b.dirs
	if g.fenced && g.b.devicesOwn {
		dirs = append(slices.Clip(dirs), g.b.devices)
	}
	for _, d := range dirs {
		if err := writeFile(filepath.Join(d, g.b.root, g.name, "cgroup.procs"), b); err != nil {
			return fmt.Errorf("cgroup: add pid %d to %s: %w", pid, g.Path(), err)
		}
	}
	return nil
}

func (g *v1Group) Procs() ([]int, error) {
	out, err := readProcs(g.dir(ctrlMemory), true)
	if err != nil {
		return nil, fmt.Errorf("cgroup: list processes of %s: %w", g.Path(), err)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (g *v1Group) OOMExact() bool { return g.b.oomLine }

func (g *v1Group) PeakMemory() (uint64, error) {
	n, err := readUint(g.file(ctrlMemory, "memory.max_usage_in_bytes"))
	if err != nil {
		return 0, fmt.Errorf("cgroup: read peak memory of %s: %w", g.Path(), err)
	}
	return n, nil
}

func (g *v1Group) OOMKills() (uint64, error) {
	if g.b.oomLine {
		n, err := readKey(g.file(ctrlMemory, "memory.oom_control"), "oom_kill")
		if err != nil {
			return 0, fmt.Errorf("cgroup: read OOM kills of %s: %w", g.Path(), err)
		}
		return n, nil
	}
	// Old kernels: no counter. memory.failcnt > 0 means the limit was hit.
	n, err := readUint(g.file(ctrlMemory, "memory.failcnt"))
	if err != nil {
		return 0, fmt.Errorf("cgroup: read memory.failcnt of %s: %w", g.Path(), err)
	}
	if n > 0 {
		return 1, nil
	}
	return 0, nil
}

// Stats reads the memory controller's usage files, cpuacct.usage and
// pids.current (the last two when those controllers are mounted). A
// group that is gone yields an error wrapping os.ErrNotExist.
func (g *v1Group) Stats() (Stats, error) {
	var s Stats
	var err error
	read := func(ctrl, f string) uint64 {
		if err != nil {
			return 0
		}
		var n uint64
		n, err = readUint(g.file(ctrl, f))
		return n
	}
	s.MemoryUsage = read(ctrlMemory, "memory.usage_in_bytes")
	s.MemoryMaxUsage = read(ctrlMemory, "memory.max_usage_in_bytes")
	if l := read(ctrlMemory, "memory.limit_in_bytes"); l < 1<<62 {
		s.MemoryLimit = l
	}
	if g.b.memsw {
		if sw := read(ctrlMemory, "memory.memsw.usage_in_bytes"); sw > s.MemoryUsage {
			s.SwapUsage = sw - s.MemoryUsage
		}
	}
	if err == nil {
		s.RSS, err = readKey(g.file(ctrlMemory, "memory.stat"), "total_rss")
	}
	if err == nil && g.b.oomLine {
		s.OOMKills, err = readKey(g.file(ctrlMemory, "memory.oom_control"), "oom_kill")
	}
	if _, ok := g.b.hier[ctrlCPUAcct]; ok {
		s.CPUUsage = time.Duration(read(ctrlCPUAcct, "cpuacct.usage"))
	}
	if _, ok := g.b.hier[ctrlPids]; ok {
		s.Pids = read(ctrlPids, "pids.current")
	}
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup: stats of %s: %w", g.Path(), err)
	}
	return s, nil
}

// Kill freezes the group, SIGKILLs every process, thaws it, and repeats until
// the group is empty (a process forking while we read the list is caught by
// the next round; the freezer makes that rare).
func (g *v1Group) Kill() error {
	for round := 0; round < 20; round++ {
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
		frozen := g.freeze()
		if frozen {
			if pids, err = g.Procs(); err != nil {
				g.thaw()
				return err
			}
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				g.b.log.Warn("kill", "pid", pid, "cgroup", g.Path(), "err", err)
			}
		}
		if frozen {
			g.thaw()
		}
		if err := waitEmpty(g, 100*time.Millisecond*time.Duration(round+1)); err == nil {
			return nil
		}
	}
	return waitEmpty(g, 2*time.Second)
}

// freeze writes FROZEN and waits up to 200 ms for the state to settle (a
// task in D state could otherwise turn waiting for it into a hang). It
// reports whether the group is frozen.
func (g *v1Group) freeze() bool {
	if _, ok := g.b.hier[ctrlFreezer]; !ok {
		return false
	}
	f := g.file(ctrlFreezer, "freezer.state")
	if err := writeFile(f, []byte("FROZEN")); err != nil {
		return false
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		if strings.TrimSpace(string(b)) == "FROZEN" {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return true // partially frozen; thaw will still run
}

func (g *v1Group) thaw() {
	f := g.file(ctrlFreezer, "freezer.state")
	if err := writeFile(f, []byte("THAWED")); err != nil {
		g.b.log.Warn("thaw", "cgroup", g.Path(), "err", err)
	}
}

// Delete removes the group with one rmdir per hierarchy, memory first: a
// group with processes inside fails there and is left whole. Its devices
// group goes last, if it has one (a group that is not fenced has none:
// that rmdir fails at once with ENOENT; a Group from Load cannot know).
func (g *v1Group) Delete() error {
	dirs := g.b.dirs
	if g.b.devicesOwn {
		dirs = append(slices.Clip(dirs), g.b.devices)
	}
	for _, d := range dirs {
		if err := removeGroupDir(filepath.Join(d, g.b.root, g.name)); err != nil {
			return fmt.Errorf("cgroup: delete %s: %w", g.Path(), err)
		}
	}
	return nil
}

// FenceDevices: see Group and fenceV1.
func (g *v1Group) FenceDevices(f DeviceFence) error {
	if err := f.validate(); err != nil {
		return err
	}
	return g.fenceV1(f)
}

// Update applies r.
func (g *v1Group) Update(r Resources) error { return g.apply(r, false) }

// apply writes r's limits. The kernel wants memory.memsw.limit_in_bytes
// (memory plus swap) never below memory.limit_in_bytes, so a group that
// may have limits already (!fresh) first gets an unlimited memsw, then
// its memory limit, then memsw; a fresh group has no limits and needs
// only the last two.
func (g *v1Group) apply(r Resources, fresh bool) error {
	type step struct{ ctrl, file, value string }
	var steps []step
	memsw := g.b.memsw && r.MemoryLimit > 0 && r.SwapLimit != 0
	if g.b.memsw && !fresh {
		steps = append(steps, step{ctrlMemory, "memory.memsw.limit_in_bytes", unlimited})
	}
	switch {
	case r.MemoryLimit > 0:
		steps = append(steps, step{ctrlMemory, "memory.limit_in_bytes", strconv.FormatInt(r.MemoryLimit, 10)})
	case !fresh:
		steps = append(steps, step{ctrlMemory, "memory.limit_in_bytes", unlimited})
	}
	if memsw {
		sw := r.MemoryLimit // NoSwap
		if r.SwapLimit > 0 {
			sw += r.SwapLimit
		}
		steps = append(steps, step{ctrlMemory, "memory.memsw.limit_in_bytes", strconv.FormatInt(sw, 10)})
	}
	if _, ok := g.b.hier[ctrlCPU]; ok && r.CPUWeight > 0 {
		shares := max(r.CPUWeight*1024/100, 2)
		steps = append(steps, step{ctrlCPU, "cpu.shares", strconv.FormatUint(shares, 10)})
	}
	for _, s := range steps {
		if err := writeFile(g.file(s.ctrl, s.file), []byte(s.value)); err != nil {
			return fmt.Errorf("cgroup: set %s of %s: %w", s.file, g.Path(), err)
		}
	}
	return nil
}

func (g *v1Group) OpenFD() (int, error) { return -1, ErrNoCgroupFD }
