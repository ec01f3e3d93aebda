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

	"github.com/containerd/cgroups/v3/cgroup2"
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
	// Enable controllers for our children: the library enables them on
	// every ancestor when creating a child, but check writability now so
	// that New fails early with a clear message.
	if err := unix.Access(filepath.Join(p, "cgroup.procs"), unix.W_OK); err != nil {
		return nil, permissionError(p, err)
	}
	if !b.ctrl["memory"] {
		logger.Warn("cgroup v2 hierarchy has no memory controller: memory caps cannot be enforced", "mount", mount)
	}
	return b, nil
}

func (b *v2Backend) group(name string) string { return "/" + b.root + "/" + name }

func (b *v2Backend) resources(r Resources) (*cgroup2.Resources, error) {
	res := &cgroup2.Resources{}
	if b.ctrl["memory"] {
		res.Memory = &cgroup2.Memory{}
		if r.MemoryLimit > 0 {
			l := r.MemoryLimit
			res.Memory.Max = &l
		}
	} else if r.MemoryLimit > 0 {
		return nil, fmt.Errorf("%w: the cgroup v2 hierarchy at %s has no memory controller", ErrUnavailable, b.mount)
	}
	if b.ctrl["cpu"] {
		res.CPU = &cgroup2.CPU{}
		if r.CPUWeight > 0 {
			w := min(max(r.CPUWeight, 1), 10000)
			res.CPU.Weight = &w
		}
	}
	if b.ctrl["pids"] {
		res.Pids = &cgroup2.Pids{}
	}
	return res, nil
}

func (b *v2Backend) create(name string, r Resources) (Group, error) {
	res, err := b.resources(r)
	if err != nil {
		return nil, err
	}
	m, err := cgroup2.NewManager(b.mount, b.group(name), res)
	if err != nil {
		return nil, err
	}
	g := &v2Group{b: b, name: name, m: m, path: filepath.Join(b.mount, b.root, name)}
	if err := g.setSwap(r); err != nil {
		return nil, err
	}
	return g, nil
}

func (b *v2Backend) load(name string) (Group, error) {
	p := filepath.Join(b.mount, b.root, name)
	if !exists(p) {
		return nil, ErrNotExist
	}
	m, err := cgroup2.Load(b.group(name), cgroup2.WithMountpoint(b.mount))
	if err != nil {
		return nil, err
	}
	return &v2Group{b: b, name: name, m: m, path: p}, nil
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
	err := os.Remove(filepath.Join(b.mount, b.root))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

type v2Group struct {
	b    *v2Backend
	name string
	path string
	m    *cgroup2.Manager
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
	if err := os.WriteFile(f, []byte(strconv.FormatInt(sw, 10)), 0); err != nil {
		return fmt.Errorf("cgroup: set memory.swap.max of %s: %w", g.path, err)
	}
	return nil
}

func (g *v2Group) AddProc(pid int) error {
	if err := g.m.AddProc(uint64(pid)); err != nil {
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

func (g *v2Group) Stats() (Stats, error) {
	m, err := g.m.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents | cgroup2.StatPids)
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup: stats of %s: %w", g.path, err)
	}
	var s Stats
	if mem := m.Memory; mem != nil {
		s.MemoryUsage = mem.Usage
		s.MemoryMaxUsage = mem.MaxUsage
		if mem.UsageLimit < 1<<62 {
			s.MemoryLimit = mem.UsageLimit
		}
		s.RSS = mem.Anon
		s.SwapUsage = mem.SwapUsage
	}
	if m.CPU != nil {
		s.CPUUsage = time.Duration(m.CPU.UsageUsec) * time.Microsecond
	}
	if m.MemoryEvents != nil {
		s.OOMKills = m.MemoryEvents.OomKill
	}
	if m.Pids != nil {
		s.Pids = m.Pids.Current
	}
	return s, nil
}

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
	// cgroup.kill (Linux >= 5.14) kills the group and its sub-groups at
	// once; without it the library freezes, signals and thaws.
	err = os.WriteFile(filepath.Join(g.path, "cgroup.kill"), []byte("1"), 0)
	if errors.Is(err, os.ErrNotExist) && exists(g.path) {
		err = g.m.Kill()
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cgroup: kill %s: %w", g.path, err)
	}
	return waitEmpty(g, 5*time.Second)
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
		if err := os.WriteFile(filepath.Join(g.path, "memory.max"), []byte(v), 0); err != nil {
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
		if err := g.m.Update(&cgroup2.Resources{CPU: &cgroup2.CPU{Weight: &w}}); err != nil {
			return fmt.Errorf("cgroup: update %s: %w", g.path, err)
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
