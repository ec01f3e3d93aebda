package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/cgroup"
	"golang.org/x/sys/unix"
)

// TestGPUFence starts real processes through the Manager (shim server and
// per-process shim) with and without a GPU fence and has them open device
// nodes of the NVIDIA major made with mknod. There is no NVIDIA driver
// here: an open the fence lets through fails at the driver lookup (ENXIO,
// "No such device or address"), after the device cgroup's check, which
// answers EPERM ("Operation not permitted"). It runs on the host's cgroup
// mode (the v1 devices controller on a v1 or hybrid host, the v2 device
// program on a v2 host) and, on a hybrid host, on its cgroup2 mount too
// (the v2 device program; the kernel runs it there as well).
func TestGPUFence(t *testing.T) {
	t.Run("host cgroups", func(t *testing.T) { forEachShim(t, func(t *testing.T, pp bool) { testGPUFence(t, pp, false) }) })
	t.Run("v2 on the hybrid host's unified mount", func(t *testing.T) {
		forEachShim(t, func(t *testing.T, pp bool) { testGPUFence(t, pp, true) })
	})
}

func testGPUFence(t *testing.T, perProcess, unified bool) {
	e := newEnv(t)
	e.perProcess = perProcess
	if unified {
		mp := "/sys/fs/cgroup/unified"
		var st unix.Statfs_t
		if err := unix.Statfs(mp, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC || e.cg.Mode() != cgroup.ModeHybrid {
			t.Skipf("not a hybrid host with a cgroup2 mount at %s (cgroup mode %s): the host's own mode is tested above", mp, e.cg.Mode())
		}
		cg, err := cgroup.NewWithOptions(cgroup.Options{Root: e.cg.Root() + "-v2", Mode: cgroup.ModeV2, Mountpoint: mp, Logger: e.log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := cg.RemoveRoot(); err != nil {
				t.Errorf("remove cgroup root: %v", err)
			}
		})
		e.cg = cg
	}
	m := e.manager(t)
	dev := t.TempDir()
	nodes := map[string]uint32{"nvidia0": 0, "nvidia1": 1, "nvidia2": 2, "nvidia-modeset": 254, "nvidiactl": 255}
	var script strings.Builder
	for name, minor := range nodes {
		p := filepath.Join(dev, name)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(nvidiaMajor, minor))); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "true < %s && echo %s opened; ", p, p)
	}
	tests := []struct {
		name   string
		fence  *GPUFence
		denied []string
	}{
		{"no fence", nil, nil},
		{"GPU 1", &GPUFence{Allowed: []int{1}}, []string{"nvidia0", "nvidia2"}},
		{"GPUs 0 and 2", &GPUFence{Allowed: []int{2, 0}}, []string{"nvidia1"}},
		{"no GPU", &GPUFence{}, []string{"nvidia0", "nvidia1", "nvidia2"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("25.%d", i)
			sp := shSpec(id, script.String())
			sp.GPUFence = tc.fence
			if _, err := m.Start(context.Background(), sp); err != nil {
				t.Fatal(err)
			}
			st := e.x.wait(t, id, 30*time.Second)
			if st.State != Exited {
				t.Fatalf("status %+v", st)
			}
			out, err := os.ReadFile(st.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "Permission denied") {
				t.Skipf("EACCES: the temp dir is on a nodev mount:\n%s", out)
			}
			for name := range nodes {
				p := filepath.Join(dev, name)
				eperm := strings.Contains(string(out), p+": Operation not permitted")
				if want := contains(tc.denied, name); eperm != want {
					t.Errorf("%s: EPERM %v, want %v; log:\n%s", name, eperm, want, out)
				}
				if !eperm && !strings.Contains(string(out), p+": No such device or address") {
					t.Errorf("%s: neither EPERM nor ENXIO; log:\n%s", name, out)
				}
			}
			if err := m.Forget(id); err != nil {
				t.Fatal(err)
			}
			// Forget took the group, its devices group (v1) included.
			for _, d := range []string{"/sys/fs/cgroup/devices", "/sys/fs/cgroup/memory", e.cg.Mountpoint()} {
				if p := filepath.Join(d, e.cg.Root(), id); dirExists(p) {
					t.Errorf("%s left behind", p)
				}
			}
		})
	}
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func TestGPUFenceValidate(t *testing.T) {
	tests := []struct {
		fence *GPUFence
		ok    bool
	}{
		{nil, true},
		{&GPUFence{}, true},
		{&GPUFence{Allowed: []int{0, 7, MaxGPUMinor}}, true},
		{&GPUFence{Allowed: []int{-1}}, false},
		{&GPUFence{Allowed: []int{254}}, false},
		{&GPUFence{Allowed: []int{255}}, false},
	}
	for _, tc := range tests {
		sp := shSpec("1.1", "true")
		sp.GPUFence = tc.fence
		if err := sp.validate(); (err == nil) != tc.ok {
			t.Errorf("fence %+v: validate = %v, want ok %v", tc.fence, err, tc.ok)
		}
	}
	f := (&GPUFence{Allowed: []int{3, 1, 3}}).deviceFence()
	if f.Major != 195 || f.Minors != 256 || fmt.Sprint(f.Allowed) != "[1 3 254 255]" {
		t.Errorf("deviceFence = %+v", f)
	}
}
