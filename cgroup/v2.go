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
	"time"

	"golang.org/x/sys/unix"
)

type v2Backend struct {
	mount string
	root  string
	log   *slog.Logger
	ctrl  map[string]bool // controllers available at the mount root
}

func newV2(mount, root string, logger *slog.Logger) (*v2Backend, error) {
	b := &v2Backend{mount: mount, root: root, log: logger, ctrl: map[string]bool{}}
	raw, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w: %v", ErrUnavailable, err)
	}
	for _, c := range strings.Fields(string(raw)) {
		b.ctrl[c] = true
	}
	p := filepath.Join(mount, root)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return nil, permissionError(p, err)
	}
	if err := unix.Access(filepath.Join(p, "cgroup.procs"), unix.W_OK); err != nil {
		return nil, permissionError(p, err)
	}
	b.enableControllers()
	if !b.ctrl["memory"] {
		logger.Warn("cgroup v2 hierarchy has no memory controller: memory caps cannot be enforced", "mount", mount)
	}
	return b, nil
}

// v2Wanted are the controllers a group gets when the hierarchy has them.
var v2Wanted = []string{"memory", "cpu", "pids"}

// enableControllers turns on, in cgroup.subtree_control of the mount and
// of every group down to the root group, the wanted controllers that the
// hierarchy has, so that the groups made under the root get them. A
// controller that cannot be enabled (a systemd-managed ancestor that
// keeps it, a group with processes of its own) is logged and left out:
// a memory cap asked then fails with a clear error at Create.
func (b *v2Backend) enableControllers() {
	var add []string
	for _, c := range v2Wanted {
		if b.ctrl[c] {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return
	}
	dir := b.mount
	for _, part := range append([]string{""}, strings.Split(b.root, "/")...) {
		dir = filepath.Join(dir, part)
		if hasAll(filepath.Join(dir, "cgroup.subtree_control"), v2Wanted, b.ctrl) {
			continue
		}
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(add, " "))); err != nil {
			b.log.Warn("cannot enable cgroup controllers for the groups below", "cgroup", dir, "controllers", add, "err", err)
			break
		}
	}
	// What the root group hands down is what its groups will have (none,
	// when it cannot be read: memory caps then fail with ErrUnavailable).
	enabled, _ := os.ReadFile(filepath.Join(b.mount, b.root, "cgroup.subtree_control"))
	have := map[string]bool{}
	for _, c := range strings.Fields(string(enabled)) {
		have[c] = true
	}
	b.ctrl = have
}

// hasAll reports whether the controller list file f names every wanted
// controller that avail has.
func hasAll(f string, wanted []string, avail map[string]bool) bool {
	raw, err := os.ReadFile(f)
	if err != nil {
		return false
	}
	have := strings.Fields(string(raw))
	for _, c := range wanted {
		if avail[c] && !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

func (b *v2Backend) create(name string, r Resources) (Group, error) {
	if r.MemoryLimit > 0 && !b.ctrl["memory"] {
		return nil, fmt.Errorf("%w: the cgroup v2 hierarchy at %s has no memory controller", ErrUnavailable, b.mount)
	}
	p := filepath.Join(b.mount, b.root, name)
	if err := mkdir(p); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, &os.PathError{Op: "mkdir", Path: p, Err: err}
	}
	g := &v2Group{b: b, name: name, path: p}
	if err := g.Update(r); err != nil {
		return nil, err
	}
	return g, nil
}

func (b *v2Backend) load(name string) (Group, error) {
	p := filepath.Join(b.mount, b.root, name)
	if !exists(p) {
		return nil, ErrNotExist
	}
	return &v2Group{b: b, name: name, path: p}, nil
}

func (b *v2Backend) startIn(g Group, start func(cgroupFD int) error) error {
	fd, err := g.OpenFD()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return start(fd)
}

func (b *v2Backend) removeRoot() error {
	return removeRootDir(filepath.Join(b.mount, b.root))
}

type v2Group struct {
	b    *v2Backend
	name string
	path string
}

func (g *v2Group) Name() string { return g.name }
func (g *v2Group) Path() string { return g.path }

func (g *v2Group) setSwap(r Resources) error {
	if r.MemoryLimit <= 0 || r.SwapLimit == 0 {
		return nil
	}
	f := filepath.Join(g.path, "memory.swap.max")
	if !exists(f) {
		g.b.log.Debug("host does not account swap: swap not capped", "cgroup", g.path)
		return nil
	}
	sw := int64(0)
	if r.SwapLimit > 0 {
		sw = r.SwapLimit
	}
	if err := writeFile(f, []byte(strconv.FormatInt(sw, 10))); err != nil {
		return fmt.Errorf("cgroup: set memory.swap.max of %s: %w", g.path, err)
	}
	return nil
}

func (g *v2Group) AddProc(pid int) error {
	if err := writeFile(filepath.Join(g.path, "cgroup.procs"), []byte(strconv.Itoa(pid))); err != nil {
		return fmt.Errorf("cgroup: add pid %d to %s: %w", pid, g.path, err)
	}
	return nil
}

func (g *v2Group) Procs() ([]int, error) {
	out, err := readProcs(g.path, true)
	if err != nil {
		return nil, fmt.Errorf("cgroup: list processes of %s: %w", g.path, err)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (g *v2Group) OOMExact() bool { return true }

func (g *v2Group) OOMKills() (uint64, error) {
	n, err := readKey(filepath.Join(g.path, "memory.events"), "oom_kill")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !g.b.ctrl["memory"] {
			return 0, nil
		}
		return 0, fmt.Errorf("cgroup: read OOM kills of %s: %w", g.path, err)
	}
	return n, nil
}

func (g *v2Group) PeakMemory() (uint64, error) {
	n, err := readUint(filepath.Join(g.path, "memory.peak"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // before Linux 5.19
	}
	if err != nil {
		return 0, fmt.Errorf("cgroup: read peak memory of %s: %w", g.path, err)
	}
	return n, nil
}

// Stats reads memory.current, memory.peak, memory.max, memory.stat,
// memory.swap.current, memory.events, cpu.stat and pids.current, those
// the group has (a controller not enabled has no files). A group that is
// gone yields an error wrapping os.ErrNotExist.
func (g *v2Group) Stats() (Stats, error) {
	var s Stats
	var err error
	opt := func(n uint64, e error) uint64 {
		if e != nil && !errors.Is(e, os.ErrNotExist) && err == nil {
			err = e
		}
		return n
	}
	f := func(name string) string { return filepath.Join(g.path, name) }
	if !exists(g.path) {
		return Stats{}, fmt.Errorf("cgroup: stats of %s: %w", g.path, os.ErrNotExist)
	}
	s.MemoryUsage = opt(readUint(f("memory.current")))
	s.MemoryMaxUsage = opt(readUint(f("memory.peak")))
	if l := opt(readUint(f("memory.max"))); l < 1<<62 {
		s.MemoryLimit = l
	}
	s.RSS = opt(readKey(f("memory.stat"), "anon"))
	s.SwapUsage = opt(readUint(f("memory.swap.current")))
	s.OOMKills = opt(readKey(f("memory.events"), "oom_kill"))
	s.CPUUsage = time.Duration(opt(readKey(f("cpu.stat"), "usage_usec"))) * time.Microsecond
	s.Pids = opt(readUint(f("pids.current")))
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup: stats of %s: %w", g.path, err)
	}
	return s, nil
}

// Kill writes cgroup.kill (Linux >= 5.14), which kills the group and its
// sub-groups at once; on older kernels it freezes the group
// (cgroup.freeze), signals every process and thaws it, until the group
// is empty.
func (g *v2Group) Kill() error {
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
	err = writeFile(filepath.Join(g.path, "cgroup.kill"), []byte("1"))
	if errors.Is(err, os.ErrNotExist) && exists(g.path) {
		return g.killEach()
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cgroup: kill %s: %w", g.path, err)
	}
	return waitEmpty(g, 5*time.Second)
}

// killEach is Kill without cgroup.kill.
func (g *v2Group) killEach() error {
	freeze := filepath.Join(g.path, "cgroup.freeze")
	for round := 0; round < 20; round++ {
		frozen := writeFile(freeze, []byte("1")) == nil
		pids, err := g.Procs()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				g.b.log.Warn("kill", "pid", pid, "cgroup", g.path, "err", err)
			}
		}
		if frozen {
			_ = writeFile(freeze, []byte("0"))
		}
		if err := waitEmpty(g, 100*time.Millisecond*time.Duration(round+1)); err == nil {
			return nil
		}
	}
	return waitEmpty(g, 2*time.Second)
}

// Delete removes the group with one rmdir (sub-groups first, if a process
// made any); it fails while processes are inside.
func (g *v2Group) Delete() error {
	if err := removeGroupDir(g.path); err != nil {
		return fmt.Errorf("cgroup: delete %s: %w", g.path, err)
	}
	return nil
}

func (g *v2Group) Update(r Resources) error {
	if g.b.ctrl["memory"] {
		v := "max"
		if r.MemoryLimit > 0 {
			v = strconv.FormatInt(r.MemoryLimit, 10)
		}
		if err := writeFile(filepath.Join(g.path, "memory.max"), []byte(v)); err != nil {
			return fmt.Errorf("cgroup: update memory.max of %s: %w", g.path, err)
		}
		if err := g.setSwap(r); err != nil {
			return err
		}
	} else if r.MemoryLimit > 0 {
		return fmt.Errorf("cgroup: update %s: %w: no memory controller", g.path, ErrUnavailable)
	}
	if r.CPUWeight > 0 && g.b.ctrl["cpu"] {
		w := min(max(r.CPUWeight, 1), 10000)
		if err := writeFile(filepath.Join(g.path, "cpu.weight"), []byte(strconv.FormatUint(w, 10))); err != nil {
			return fmt.Errorf("cgroup: update cpu.weight of %s: %w", g.path, err)
		}
	}
	return nil
}

func (g *v2Group) OpenFD() (int, error) {
	fd, err := unix.Open(g.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cgroup: open %s: %w", g.path, err)
	}
	return fd, nil
}
