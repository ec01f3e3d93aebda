package cgroup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// openHelperEnv makes the test binary a helper that opens the device
// nodes it names and prints "path errno-name" ("path ok") for each.
const openHelperEnv = "DUCC_CGROUP_TEST_OPEN"

func openDevices(paths []string) {
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Println(p, unix.ErrnoName(err.(unix.Errno)))
			continue
		}
		unix.Close(fd)
		fmt.Println(p, "ok")
	}
}

// nvidiaFence is the fence of a process given GPU minor 0: nvidia-modeset
// (254) and nvidiactl (255) stay open, as proc asks.
var nvidiaFence = DeviceFence{Major: 195, Minors: 256, Allowed: []uint32{0, 254, 255}}

// TestFenceDevices starts real processes in a fenced and an unfenced group
// and has them open device nodes of major 195 made with mknod. There is no
// NVIDIA driver here: an open the fence lets through fails in the driver
// lookup (ENXIO), after the device cgroup's check, which answers EPERM. So
// "not EPERM" means allowed, EPERM means fenced. It runs the v1 devices
// controller where the host has one and the v2 device program on the host's
// cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid
// host, where the kernel runs device programs too).
func TestFenceDevices(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (mknod, cgroups, bpf)")
	}
	dir := t.TempDir()
	nodes := []struct {
		name  string
		minor uint32
	}{{"nvidia0", 0}, {"nvidia1", 1}, {"nvidia-modeset", 254}, {"nvidiactl", 255}, {"other", 0}}
	for _, n := range nodes {
		dev := unix.Mkdev(195, n.minor)
		if n.name == "other" {
			dev = unix.Mkdev(1, 3) // /dev/null's: never fenced
		}
		if err := unix.Mknod(filepath.Join(dir, n.name), unix.S_IFCHR|0o666, int(dev)); err != nil {
			t.Fatalf("mknod: %v", err)
		}
	}
	paths := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	all := paths("nvidia0", "nvidia1", "nvidia-modeset", "nvidiactl", "other")

	modes := []struct {
		name    string
		manager func(t testing.TB) *Manager
	}{
		{"v1 devices controller", v1DevicesManager},
		{"v2 device program", v2Manager},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			m := mode.manager(t)
			tests := []struct {
				name   string
				fence  *DeviceFence
				denied []string // EPERM; the others must not be
			}{
				{"unfenced", nil, nil},
				{"GPU 0", &nvidiaFence, paths("nvidia1")},
				{"no GPU", &DeviceFence{Major: 195, Minors: 256, Allowed: []uint32{254, 255}}, paths("nvidia0", "nvidia1")},
				{"GPUs 0 and 1", &DeviceFence{Major: 195, Minors: 256, Allowed: []uint32{0, 1, 254, 255}}, nil},
			}
			t.Run("fenced again", func(t *testing.T) {
				// v1: a fence replaces the group's earlier one; v2: a
				// second program runs beside the first, and an access
				// must pass both.
				g := create(t, m, "again", Resources{})
				noGPU := DeviceFence{Major: 195, Minors: 256, Allowed: []uint32{254, 255}}
				if err := g.FenceDevices(noGPU); err != nil {
					t.Fatal(err)
				}
				g, err := m.Create("again", Resources{}) // reused, as a Group value without the fence
				if err != nil {
					t.Fatal(err)
				}
				if err := g.FenceDevices(nvidiaFence); err != nil {
					t.Fatal(err)
				}
				got := openIn(t, m, g, all)
				t.Logf("opens: %v", got)
				want := map[string]string{ModeV1: "ENXIO", ModeHybrid: "ENXIO", ModeV2: "EPERM"}[m.Mode()]
				if p := paths("nvidia0")[0]; got[p] != want {
					t.Errorf("nvidia0 after the second fence: %s, want %s", got[p], want)
				}
				if p := paths("nvidia1")[0]; got[p] != "EPERM" {
					t.Errorf("nvidia1 after the second fence: %s, want EPERM", got[p])
				}
			})
			for i, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					g := create(t, m, fmt.Sprintf("fence%d", i), Resources{})
					if tc.fence != nil {
						if err := g.FenceDevices(*tc.fence); err != nil {
							t.Fatalf("FenceDevices: %v", err)
						}
					}
					got := openIn(t, m, g, all)
					t.Logf("opens: %v", got)
					for _, p := range all {
						want := "not EPERM"
						if contains(tc.denied, p) {
							want = "EPERM"
						}
						if got[p] == "EACCES" {
							t.Skipf("%s: EACCES: the temp dir is on a nodev mount", p)
						}
						if (got[p] == "EPERM") != (want == "EPERM") {
							t.Errorf("open %s: %s, want %s", filepath.Base(p), got[p], want)
						}
					}
				})
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

// v1DevicesManager is a manager of the host's v1 hierarchies, skipping where
// there is no v1 devices controller.
func v1DevicesManager(t testing.TB) *Manager {
	if mode := hostMode(); mode != ModeV1 && mode != ModeHybrid {
		t.Skipf("the host has no cgroup v1 hierarchies (mode %q): the v1 devices controller cannot run here", mode)
	}
	if !exists(filepath.Join(v1Mount, ctrlDevices, "devices.deny")) {
		t.Skip("the host has no v1 devices controller mounted")
	}
	m := newManager(t)
	b, ok := m.backend.(*v1Backend)
	if !ok {
		t.Skipf("the manager uses %T, not the v1 backend", m.backend)
	}
	t.Cleanup(func() {
		// Delete took the groups' devices directories, RemoveRoot the root's.
		if b.devicesOwn && exists(filepath.Join(b.devices, b.root)) {
			ents, _ := os.ReadDir(filepath.Join(b.devices, b.root))
			for _, e := range ents {
				if e.IsDir() {
					t.Errorf("devices group %s left behind", e.Name())
				}
			}
		}
	})
	return m
}

// v2Manager is a v2 manager on the host's cgroup2 mount, skipping where
// there is none.
func v2Manager(t testing.TB) *Manager {
	mp := v1Mount
	if hostMode() == ModeHybrid {
		mp = filepath.Join(v1Mount, "unified")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mp, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skipf("the host has no cgroup2 mount at %s: the v2 device program cannot run here", mp)
	}
	root := fmt.Sprintf("ducc-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))
	m, err := NewWithOptions(Options{Root: root, Logger: testLogger(t), Mode: ModeV2, Mountpoint: mp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.RemoveRoot(); err != nil {
			t.Errorf("RemoveRoot: %v", err)
		}
	})
	return m
}

// openIn starts the test binary as the open helper in g (StartIn, as the
// shim does) and returns each path's result.
func openIn(t *testing.T, m *Manager, g Group, paths []string) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), openHelperEnv+"="+strings.Join(paths, " "))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = m.StartIn(g, func(fd int) error {
		if fd >= 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		}
		return cmd.Start()
	})
	if err != nil {
		t.Fatalf("StartIn: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		p, res, _ := strings.Cut(line, " ")
		got[p] = res
	}
	if len(got) != len(paths) {
		t.Fatalf("helper output:\n%s", out.String())
	}
	return got
}

func TestDeviceFenceValidate(t *testing.T) {
	tests := []struct {
		f    DeviceFence
		want string // "" valid
	}{
		{nvidiaFence, ""},
		{DeviceFence{Major: 195, Minors: 256}, ""},
		{DeviceFence{Major: 195, Minors: 0}, "0 minors"},
		{DeviceFence{Major: 195, Minors: 5000}, "5000 minors"},
		{DeviceFence{Major: 5000, Minors: 1}, "not a device major"},
		{DeviceFence{Major: 195, Minors: 256, Allowed: []uint32{256}}, "allowed minor 256"},
	}
	for _, tc := range tests {
		err := tc.f.validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("validate(%+v) = %v, want %q", tc.f, err, tc.want)
		}
	}
	g := disabledGroup("x")
	if err := g.FenceDevices(DeviceFence{}); err == nil {
		t.Error("disabled group accepted an invalid fence")
	}
}

// TestDeviceProgramEncoding checks the hand-encoded device program against
// github.com/cilium/ebpf's assembler (used by the tests only).
func TestDeviceProgramEncoding(t *testing.T) {
	for _, f := range []DeviceFence{nvidiaFence, {Major: 195, Minors: 256}, {Major: 10, Minors: 4096, Allowed: []uint32{1, 2, 3}}} {
		got := deviceProgram(f)
		n := len(got)
		jump := func(op asm.JumpOp, imm int32, i int) asm.Instruction {
			ins := op.Imm(asm.R2, imm, "")
			ins.Offset = int16(n - 2 - (i + 1))
			return ins
		}
		want := asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
			asm.And.Imm(asm.R2, 0xffff),
			jump(asm.JNE, 2, 2),
			asm.LoadMem(asm.R2, asm.R1, 4, asm.Word),
			jump(asm.JNE, int32(f.Major), 4),
			asm.LoadMem(asm.R2, asm.R1, 8, asm.Word),
			jump(asm.JGE, int32(f.Minors), 6),
		}
		for i, m := range f.Allowed {
			want = append(want, jump(asm.JEq, int32(m), 7+i))
		}
		want = append(want, asm.Mov.Imm(asm.R0, 0), asm.Return(), asm.Mov.Imm(asm.R0, 1), asm.Return())
		var order binary.ByteOrder = binary.LittleEndian
		if insnRegs(1, 0) != 1 {
			order = binary.BigEndian
		}
		var wb bytes.Buffer
		if err := want.Marshal(&wb, order); err != nil {
			t.Fatal(err)
		}
		var gb bytes.Buffer
		if err := binary.Write(&gb, binary.NativeEndian, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gb.Bytes(), wb.Bytes()) {
			t.Errorf("fence %+v:\n got  %x\n want %x\n%v", f, gb.Bytes(), wb.Bytes(), want)
		}
	}
}

// TestFenceUnavailable: a v1 manager whose mount has no devices controller
// says so.
func TestFenceUnavailable(t *testing.T) {
	g := &v1Group{b: &v1Backend{mount: "/nowhere"}, name: "x"}
	err := g.FenceDevices(nvidiaFence)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "devices controller") {
		t.Fatalf("FenceDevices without a devices controller = %v", err)
	}
}

// BenchmarkFenceStart measures what a fence adds to a process start in
// its own group: Create, FenceDevices (or not), StartIn of /bin/true, wait,
// Delete, as the agent and the shim do them, for the host's v1 hierarchies
// and its cgroup2 mount.
func BenchmarkFenceStart(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("needs root")
	}
	modes := []struct {
		name    string
		manager func(t testing.TB) *Manager
	}{
		{"v1", v1DevicesManager},
		{"v2", v2Manager},
	}
	for _, mode := range modes {
		for _, fence := range []*DeviceFence{nil, &nvidiaFence} {
			name := mode.name + "/no-fence"
			if fence != nil {
				name = mode.name + "/fence"
			}
			b.Run(name, func(b *testing.B) {
				m := mode.manager(b)
				for i := 0; b.Loop(); i++ {
					g, err := m.Create("b"+strconv.Itoa(i), Resources{})
					if err != nil {
						b.Fatal(err)
					}
					if fence != nil {
						if err := g.FenceDevices(*fence); err != nil {
							b.Fatal(err)
						}
					}
					var pid int
					err = m.StartIn(g, func(fd int) error {
						sys := &syscall.SysProcAttr{}
						if fd >= 0 {
							sys.UseCgroupFD, sys.CgroupFD = true, fd
						}
						pid, err = syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: sys})
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					var ws syscall.WaitStatus
					if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
						b.Fatal(err)
					}
					if err := g.Delete(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFenceDevices measures the fence alone: Create, FenceDevices
// (or not) and Delete of an empty group.
func BenchmarkFenceDevices(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("needs root")
	}
	for _, mode := range []struct {
		name    string
		manager func(t testing.TB) *Manager
	}{{"v1", v1DevicesManager}, {"v2", v2Manager}} {
		for _, fence := range []*DeviceFence{nil, &nvidiaFence} {
			name := mode.name + "/no-fence"
			if fence != nil {
				name = mode.name + "/fence"
			}
			b.Run(name, func(b *testing.B) {
				m := mode.manager(b)
				for i := 0; b.Loop(); i++ {
					g, err := m.Create("f"+strconv.Itoa(i), Resources{})
					if err != nil {
						b.Fatal(err)
					}
					if fence != nil {
						if err := g.FenceDevices(*fence); err != nil {
							b.Fatal(err)
						}
					}
					if err := g.Delete(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
