package cgroup

import (
	"bufio"
	"bytes"
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

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

var errROFS = syscall.EROFS

// v1 controllers ducc uses; memory is required, the others are used when
// mounted. cpuset, devices, blkio... are left alone (cpuset would need
// cpus/mems copied down for every group).
var v1Controllers = []cgroup1.Name{cgroup1.Memory, cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Freezer, cgroup1.Pids}

type v1Backend struct {
	mount     string // parent of the controller directories
	root      string // root group, no leading slash
	log       *slog.Logger
	hierarchy cgroup1.Hierarchy
	names     []cgroup1.Name // mounted controllers among v1Controllers
	memsw     bool           // host accounts swap (memory.memsw.*)
	oomLine   bool           // memory.oom_control has an oom_kill line
	freezer   bool
}

func newV1(mount, root string, logger *slog.Logger) (*v1Backend, error) {
	memRoot := filepath.Join(mount, string(cgroup1.Memory))
	if !exists(filepath.Join(memRoot, "memory.limit_in_bytes")) {
		return nil, fmt.Errorf("cgroup: %w: %s has no memory.limit_in_bytes (is the v1 memory controller mounted?)", ErrUnavailable, memRoot)
	}
	b := &v1Backend{mount: mount, root: root, log: logger}
	b.memsw = exists(filepath.Join(memRoot, "memory.memsw.limit_in_bytes"))
	if oc, err := os.ReadFile(filepath.Join(memRoot, "memory.oom_control")); err == nil {
		b.oomLine = bytes.Contains(oc, []byte("oom_kill "))
	}
	for _, n := range v1Controllers {
		if exists(filepath.Join(mount, string(n))) {
			b.names = append(b.names, n)
		}
	}
	b.freezer = slices.Contains(b.names, cgroup1.Freezer)
	b.hierarchy = func() ([]cgroup1.Subsystem, error) {
		var ss []cgroup1.Subsystem
		for _, n := range b.names {
			switch n {
			case cgroup1.Memory:
				ignore := []string{"kmem", "kmem.tcp"}
				if !b.memsw {
					ignore = append(ignore, "memsw")
				}
				ss = append(ss, cgroup1.NewMemory(mount, cgroup1.IgnoreModules(ignore...)))
			case cgroup1.Cpu:
				ss = append(ss, cgroup1.NewCpu(mount))
			case cgroup1.Cpuacct:
				ss = append(ss, cgroup1.NewCpuacct(mount))
			case cgroup1.Freezer:
				ss = append(ss, cgroup1.NewFreezer(mount))
			case cgroup1.Pids:
				ss = append(ss, cgroup1.NewPids(mount))
			}
		}
		return ss, nil
	}
	// Create the root group in every controller (idempotent).
	for _, n := range b.names {
		p := filepath.Join(mount, string(n), root)
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

func (b *v1Backend) groupPath(name string) string { return "/" + b.root + "/" + name }

func (b *v1Backend) spec(r Resources) *specs.LinuxResources {
	res := &specs.LinuxResources{Memory: &specs.LinuxMemory{}}
	if r.MemoryLimit > 0 {
		l := r.MemoryLimit
		res.Memory.Limit = &l
		if b.memsw && r.SwapLimit != 0 {
			sw := l // NoSwap
			if r.SwapLimit > 0 {
				sw = l + r.SwapLimit
			}
			res.Memory.Swap = &sw
		}
	}
	if r.CPUWeight > 0 {
		shares := max(r.CPUWeight*1024/100, 2)
		res.CPU = &specs.LinuxCPU{Shares: &shares}
	}
	return res
}

func (b *v1Backend) create(name string, r Resources) (Group, error) {
	cg, err := cgroup1.New(cgroup1.StaticPath(b.groupPath(name)), b.spec(r), cgroup1.WithHierarchy(b.hierarchy))
	if err != nil {
		return nil, err
	}
	return &v1Group{b: b, name: name, cg: cg}, nil
}

// load only checks that the group exists: the library's handle, which
// stats every controller and control file, is opened on first use by the
// few operations that need it (Stats, Update).
func (b *v1Backend) load(name string) (Group, error) {
	if !exists(filepath.Join(b.mount, string(cgroup1.Memory), b.root, name)) {
		return nil, ErrNotExist
	}
	return &v1Group{b: b, name: name}, nil
}

func (b *v1Backend) startIn(g Group, start func(cgroupFD int) error) error {
	vg, ok := g.(*v1Group)
	if !ok {
		return fmt.Errorf("cgroup: %s is not a v1 group", g.Path())
	}
	var err, startErr error
	onOwnThread(func() bool {
		var back []string
		if back, err = b.threadTasksFiles(); err != nil {
			err = fmt.Errorf("cgroup: start in %s: %w", vg.Path(), err)
			return true
		}
		// Memory first: a group gone meanwhile fails before anything moved.
		for i, n := range b.names {
			if err = moveThread(vg.file(n, "tasks")); err != nil {
				err = fmt.Errorf("cgroup: start in %s: %w", vg.Path(), err)
				if berr := moveThreadBack(back[:i]); berr != nil {
					b.log.Warn("a thread could not leave the group it entered; it ends", "cgroup", vg.Path(), "err", berr)
					return false
				}
				return true
			}
		}
		startErr = start(-1)
		if berr := moveThreadBack(back); berr != nil {
			b.log.Warn("a thread could not leave the group it started a process in; it ends", "cgroup", vg.Path(), "err", berr)
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	return startErr
}

// threadTasksFiles returns the tasks files of the process's own cgroups in
// ducc's controllers, in the order of b.names: where a thread that entered
// a group goes back to (startIn moves no other thread, and never the main
// one). They are read from /proc/self/cgroup, not /proc/thread-self: a
// thread's /proc entries, once looked up, stay cached until the process
// is reaped, and the kernel then walks them (release_task invalidating
// /proc/PID): that walk made reaping each shim cost the agent ~1 ms of
// CPU. The hierarchies are assumed mounted at their root, which holds
// outside cgroup namespaces.
func (b *v1Backend) threadTasksFiles() ([]string, error) {
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
	out := make([]string, 0, len(b.names))
	for _, n := range b.names {
		p, ok := paths[string(n)]
		if !ok {
			return nil, fmt.Errorf("own %s cgroup not in /proc/self/cgroup", n)
		}
		f := filepath.Join(b.mount, string(n), p, "tasks")
		if !exists(f) {
			return nil, fmt.Errorf("own %s cgroup %s not found under %s (cgroup namespace?)", n, p, b.mount)
		}
		out = append(out, f)
	}
	return out, nil
}

// moveThread moves the calling thread, alone, into the group of the tasks
// file f ("0" is the writer itself).
func moveThread(f string) error {
	fd, err := unix.Open(f, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: f, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("0")); err != nil {
		return &os.PathError{Op: "write", Path: f, Err: err}
	}
	return nil
}

// moveThreadBack moves the calling thread into the group of every tasks
// file in back, trying them all.
func moveThreadBack(back []string) error {
	var errs []error
	for _, f := range back {
		if err := moveThread(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (b *v1Backend) removeRoot() error {
	var errs []error
	for _, n := range b.names {
		p := filepath.Join(b.mount, string(n), b.root)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type v1Group struct {
	b    *v1Backend
	name string

	mu sync.Mutex
	cg cgroup1.Cgroup // the library's handle; nil until lib opens it
}

// lib returns the library's handle on the group, opening it on first use.
func (g *v1Group) lib() (cgroup1.Cgroup, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cg == nil {
		cg, err := cgroup1.Load(cgroup1.StaticPath(g.b.groupPath(g.name)), cgroup1.WithHierarchy(g.b.hierarchy))
		if err != nil {
			return nil, v1err(err)
		}
		g.cg = cg
	}
	return g.cg, nil
}

func (g *v1Group) Name() string { return g.name }

func (g *v1Group) Path() string {
	return filepath.Join(g.b.mount, "memory", g.b.root, g.name)
}

func (g *v1Group) dir(ctrl cgroup1.Name) string {
	return filepath.Join(g.b.mount, string(ctrl), g.b.root, g.name)
}

func (g *v1Group) file(ctrl cgroup1.Name, f string) string {
	return filepath.Join(g.dir(ctrl), f)
}

// AddProc writes pid to cgroup.procs in every controller (memory first, so
// that a group gone meanwhile fails before anything moved).
func (g *v1Group) AddProc(pid int) error {
	b := []byte(strconv.Itoa(pid))
	for _, n := range g.b.names {
		if err := os.WriteFile(g.file(n, "cgroup.procs"), b, 0); err != nil {
			return fmt.Errorf("cgroup: add pid %d to %s: %w", pid, g.Path(), err)
		}
	}
	return nil
}

func (g *v1Group) Procs() ([]int, error) {
	out, err := readProcs(g.dir(cgroup1.Memory), true)
	if err != nil {
		return nil, fmt.Errorf("cgroup: list processes of %s: %w", g.Path(), err)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (g *v1Group) OOMExact() bool { return g.b.oomLine }

func (g *v1Group) PeakMemory() (uint64, error) {
	n, err := readUint(g.file(cgroup1.Memory, "memory.max_usage_in_bytes"))
	if err != nil {
		return 0, fmt.Errorf("cgroup: read peak memory of %s: %w", g.Path(), err)
	}
	return n, nil
}

func (g *v1Group) OOMKills() (uint64, error) {
	if g.b.oomLine {
		n, err := readKey(g.file(cgroup1.Memory, "memory.oom_control"), "oom_kill")
		if err != nil {
			return 0, fmt.Errorf("cgroup: read OOM kills of %s: %w", g.Path(), err)
		}
		return n, nil
	}
	// Old kernels: no counter. memory.failcnt > 0 means the limit was hit.
	n, err := readUint(g.file(cgroup1.Memory, "memory.failcnt"))
	if err != nil {
		return 0, fmt.Errorf("cgroup: read memory.failcnt of %s: %w", g.Path(), err)
	}
	if n > 0 {
		return 1, nil
	}
	return 0, nil
}

func (g *v1Group) Stats() (Stats, error) {
	cg, err := g.lib()
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup: stats of %s: %w", g.Path(), err)
	}
	m, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup: stats of %s: %w", g.Path(), v1err(err))
	}
	var s Stats
	if mem := m.Memory; mem != nil {
		if mem.Usage != nil {
			s.MemoryUsage = mem.Usage.Usage
			s.MemoryMaxUsage = mem.Usage.Max
			if mem.Usage.Limit < 1<<62 {
				s.MemoryLimit = mem.Usage.Limit
			}
			if g.b.memsw && mem.Swap != nil && mem.Swap.Usage > mem.Usage.Usage {
				s.SwapUsage = mem.Swap.Usage - mem.Usage.Usage
			}
		}
		s.RSS = mem.TotalRSS
	}
	if m.CPU != nil && m.CPU.Usage != nil {
		s.CPUUsage = time.Duration(m.CPU.Usage.Total)
	}
	if m.MemoryOomControl != nil {
		s.OOMKills = m.MemoryOomControl.OomKill
	}
	if m.Pids != nil {
		s.Pids = m.Pids.Current
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

// freeze writes FROZEN and waits up to 200 ms for the state to settle (the
// library's Freeze waits forever, which a task in D state would turn into a
// hang). It reports whether the group is frozen.
func (g *v1Group) freeze() bool {
	if !g.b.freezer {
		return false
	}
	f := g.file(cgroup1.Freezer, "freezer.state")
	if err := os.WriteFile(f, []byte("FROZEN"), 0); err != nil {
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
	f := g.file(cgroup1.Freezer, "freezer.state")
	if err := os.WriteFile(f, []byte("THAWED"), 0); err != nil {
		g.b.log.Warn("thaw", "cgroup", g.Path(), "err", err)
	}
}

// Delete removes the group with one rmdir per controller, memory first: a
// group with processes inside fails there and is left whole.
func (g *v1Group) Delete() error {
	for _, n := range g.b.names {
		if err := removeGroupDir(g.dir(n)); err != nil {
			return fmt.Errorf("cgroup: delete %s: %w", g.Path(), err)
		}
	}
	return nil
}

// Update applies r. Memory limits are written in an order the kernel accepts
// (memsw must always be >= the memory limit): memsw unlimited, then the
// memory limit, then memsw.
func (g *v1Group) Update(r Resources) error {
	minus1 := int64(-1)
	limit := minus1
	if r.MemoryLimit > 0 {
		limit = r.MemoryLimit
	}
	steps := []*specs.LinuxResources{}
	if g.b.memsw {
		steps = append(steps, &specs.LinuxResources{Memory: &specs.LinuxMemory{Swap: &minus1}})
	}
	steps = append(steps, &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}})
	if sp := g.b.spec(r); sp.Memory.Swap != nil {
		steps = append(steps, &specs.LinuxResources{Memory: &specs.LinuxMemory{Swap: sp.Memory.Swap}})
	}
	if r.CPUWeight > 0 {
		steps = append(steps, &specs.LinuxResources{CPU: g.b.spec(r).CPU})
	}
	cg, err := g.lib()
	if err != nil {
		return fmt.Errorf("cgroup: update %s: %w", g.Path(), err)
	}
	for _, s := range steps {
		if err := cg.Update(s); err != nil {
			return fmt.Errorf("cgroup: update %s: %w", g.Path(), v1err(err))
		}
	}
	return nil
}

func (g *v1Group) OpenFD() (int, error) { return -1, ErrNoCgroupFD }

// readKey reads "key value" lines (memory.oom_control, memory.events).
func readKey(path, key string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// v1err makes the library's "cgroup deleted" match os.ErrNotExist.
func v1err(err error) error {
	if errors.Is(err, cgroup1.ErrCgroupDeleted) && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", os.ErrNotExist, err)
	}
	return err
}
