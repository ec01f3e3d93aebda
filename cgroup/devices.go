package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxFencedMinors bounds [DeviceFence.Minors]: on cgroup v1 every fenced
// minor is one rule, written one by one.
const maxFencedMinors = 4096

// DeviceFence says which minors of one character-device major the
// processes of a group may open (see [Group.FenceDevices]).
type DeviceFence struct {
	// Major is the character-device major fenced (195 for NVIDIA GPUs).
	Major uint32
	// Minors: the fenced minors are 0..Minors-1; minors from Minors on,
	// and every other device, are left alone. 1..4096.
	Minors uint32
	// Allowed are the minors below Minors that stay open to the group.
	Allowed []uint32
}

func (f DeviceFence) validate() error {
	if f.Minors == 0 || f.Minors > maxFencedMinors {
		return fmt.Errorf("cgroup: device fence of major %d: %d minors fenced, want 1..%d", f.Major, f.Minors, maxFencedMinors)
	}
	if f.Major > 4095 { // 12 bits
		return fmt.Errorf("cgroup: device fence: major %d is not a device major (0..4095)", f.Major)
	}
	for _, m := range f.Allowed {
		if m >= f.Minors {
			return fmt.Errorf("cgroup: device fence of major %d: allowed minor %d is not below %d, the fenced range", f.Major, m, f.Minors)
		}
	}
	return nil
}

// denied lists the fenced minors not allowed, ascending.
func (f DeviceFence) denied() []uint32 {
	out := make([]uint32, 0, f.Minors)
	for m := range f.Minors {
		if !slices.Contains(f.Allowed, m) {
			out = append(out, m)
		}
	}
	return out
}

// v1 devices controller.

// fenceV1 gives the group a directory in the devices hierarchy, or resets
// the one it has to allow-all, and writes one devices.deny rule per denied
// minor. A devices group inherits its parent's rules (allow all, below the
// hierarchy's root) and, while it allows by default, a devices.allow rule
// only removes a deny rule of exactly the same device: "deny c 195:*, then
// allow c 195:0" would leave all of major 195 denied. So the denied minors
// are each denied, as Slurm does.
func (g *v1Group) fenceV1(f DeviceFence) error {
	b := g.b
	if b.devices == "" {
		return fmt.Errorf("cgroup: fence devices of %s: %w: no v1 devices controller is mounted at %s (mount it, or run on a cgroup v2 host)",
			g.Path(), ErrUnavailable, filepath.Join(b.mount, ctrlDevices))
	}
	dir := g.dir(ctrlDevices)
	if !b.devicesOwn {
		// Co-mounted with a controller of dirs: the group has its
		// directory there already; start again from allow-all.
		if err := writeFile(filepath.Join(dir, "devices.allow"), []byte("a")); err != nil {
			return fmt.Errorf("cgroup: reset devices of %s: %w", dir, err)
		}
	} else {
		root := filepath.Join(b.devices, b.root)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return permissionError(root, err)
		}
		if err := mkdir(dir); errors.Is(err, unix.EEXIST) {
			// A group reused: start again from its parent's allow-all.
			if err := writeFile(filepath.Join(dir, "devices.allow"), []byte("a")); err != nil {
				return fmt.Errorf("cgroup: reset devices of %s: %w", dir, err)
			}
		} else if err != nil {
			return fmt.Errorf("cgroup: fence devices of %s: %w", g.Path(), &os.PathError{Op: "mkdir", Path: dir, Err: err})
		}
	}
	deny := filepath.Join(dir, "devices.deny")
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Open(deny, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("cgroup: fence devices of %s: %w", g.Path(), &os.PathError{Op: "open", Path: deny, Err: err})
	}
	defer unix.Close(fd)
	// One rule per write: the kernel reads one and ignores the rest.
	prefix := "c " + strconv.FormatUint(uint64(f.Major), 10) + ":"
	buf := make([]byte, 0, 32)
	for _, m := range f.denied() {
		buf = append(buf[:0], prefix...)
		buf = strconv.AppendUint(buf, uint64(m), 10)
		buf = append(buf, " rwm"...)
		if err := ignoringEINTR(func() error { _, err := unix.Write(fd, buf); return err }); err != nil {
			return fmt.Errorf("cgroup: fence devices of %s: %w", g.Path(), &os.PathError{Op: "write " + string(buf), Path: deny, Err: err})
		}
	}
	g.fenced = true
	return nil
}

// v2: a BPF_PROG_TYPE_CGROUP_DEVICE program, loaded and attached with two
// bpf(2) calls made here. The package does not link a BPF library: every
// program that links cgroup (ducc-shim, started for each exec-job worker
// and each pinger run) would pay for initializing it, and
// github.com/cilium/ebpf, the library to take, costs ducc-shim 2.1 MB and
// about 0.15 ms a start (docs/performance.md, "GPU fencing cost"). Its
// assembler checks this encoding in the tests.

// The fields of struct bpf_cgroup_dev_ctx (include/uapi/linux/bpf.h).
const (
	devCtxAccessType = 0 // (access << 16) | type
	devCtxMajor      = 4
	devCtxMinor      = 8
	devTypeChar      = 2 // BPF_DEVCG_DEV_CHAR
)

// bpfInsn is struct bpf_insn: opcode, dst_reg (low nibble) and src_reg
// (high nibble), offset, immediate.
type bpfInsn struct {
	code uint8
	regs uint8
	off  int16
	imm  int32
}

// The opcodes a device program uses (include/uapi/linux/bpf_common.h,
// bpf.h).
const (
	opLdxMemW  = 0x61 // BPF_LDX | BPF_MEM | BPF_W: dst = *(u32 *)(src + off)
	opAnd64Imm = 0x57 // BPF_ALU64 | BPF_AND | BPF_K
	opMov64Imm = 0xb7 // BPF_ALU64 | BPF_MOV | BPF_K
	opJeqImm   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	opJgeImm   = 0x35 // BPF_JMP | BPF_JGE | BPF_K (unsigned)
	opJneImm   = 0x55 // BPF_JMP | BPF_JNE | BPF_K
	opExit     = 0x95 // BPF_JMP | BPF_EXIT
)

// deviceProgram is the program of a fence: it returns 1 (allow) for every
// device but the fenced minors of f.Major that f does not allow, 0 for
// those. r1 is the context, r2 the field read; every jump goes to the
// last two instructions (r0 = 1; exit).
func deviceProgram(f DeviceFence) []bpfInsn {
	const r0, r1, r2 = 0, 1, 2
	ld := func(off int16) bpfInsn { return bpfInsn{code: opLdxMemW, regs: insnRegs(r2, r1), off: off} }
	jmp := func(op uint8, imm int32) bpfInsn { return bpfInsn{code: op, regs: insnRegs(r2, 0), imm: imm} }
	insns := []bpfInsn{
		ld(devCtxAccessType),
		{code: opAnd64Imm, regs: insnRegs(r2, 0), imm: 0xffff},
		jmp(opJneImm, devTypeChar),
		ld(devCtxMajor),
		jmp(opJneImm, int32(f.Major)),
		ld(devCtxMinor),
		jmp(opJgeImm, int32(f.Minors)),
	}
	for _, m := range f.Allowed {
		insns = append(insns, jmp(opJeqImm, int32(m)))
	}
	insns = append(insns,
		bpfInsn{code: opMov64Imm, regs: insnRegs(r0, 0), imm: 0},
		bpfInsn{code: opExit},
		bpfInsn{code: opMov64Imm, regs: insnRegs(r0, 0), imm: 1},
		bpfInsn{code: opExit},
	)
	allow := len(insns) - 2
	for i := range insns[:allow-2] {
		if insns[i].code&0x07 == 0x05 { // BPF_JMP
			insns[i].off = int16(allow - (i + 1))
		}
	}
	return insns
}

// insnRegs packs struct bpf_insn's dst_reg:4 and src_reg:4 bit fields:
// the first is the low nibble on little-endian hosts, the high one on
// big-endian hosts.
func insnRegs(dst, src uint8) uint8 {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) == 0 { // big-endian
		return dst<<4 | src
	}
	return dst | src<<4
}

// progLoadAttr is the head of union bpf_attr for BPF_PROG_LOAD, up to
// expected_attach_type; the kernel takes a shorter attr as zero-filled.
type progLoadAttr struct {
	progType           uint32
	insnCnt            uint32
	insns              uint64
	license            uint64
	logLevel           uint32
	logSize            uint32
	logBuf             uint64
	kernVersion        uint32
	progFlags          uint32
	progName           [16]byte
	progIfindex        uint32
	expectedAttachType uint32
}

// progAttachAttr is union bpf_attr for BPF_PROG_ATTACH, up to
// replace_bpf_fd.
type progAttachAttr struct {
	targetFD     uint32
	attachBPFFD  uint32
	attachType   uint32
	attachFlags  uint32
	replaceBPFFD uint32
}

func bpf(cmd int, attr unsafe.Pointer, size uintptr) (int, error) {
	for try := 0; ; try++ {
		r, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
		runtime.KeepAlive(attr)
		if errno == unix.EINTR || errno == unix.EAGAIN && cmd == unix.BPF_PROG_LOAD && try < 10 {
			continue // the verifier gives up on a pending signal
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
	}
}

// loadDeviceProgram loads insns and returns the program's fd. When the
// kernel refuses it, a second load with the verifier's log says why.
func loadDeviceProgram(insns []bpfInsn) (int, error) {
	license := []byte("Apache-2.0\x00")
	attr := progLoadAttr{
		progType:           unix.BPF_PROG_TYPE_CGROUP_DEVICE,
		insnCnt:            uint32(len(insns)),
		insns:              uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license:            uint64(uintptr(unsafe.Pointer(&license[0]))),
		expectedAttachType: unix.BPF_CGROUP_DEVICE,
	}
	copy(attr.progName[:], "ducc_fence")
	fd, err := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	if err == nil {
		unix.CloseOnExec(fd)
		return fd, nil
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EACCES) {
		log := make([]byte, 16<<10)
		attr.logLevel, attr.logSize, attr.logBuf = 1, uint32(len(log)), uint64(uintptr(unsafe.Pointer(&log[0])))
		fd2, err2 := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
		runtime.KeepAlive(insns)
		runtime.KeepAlive(license)
		runtime.KeepAlive(log)
		if err2 == nil {
			unix.Close(fd2)
		} else if n := bytes.IndexByte(log, 0); n > 0 {
			return -1, fmt.Errorf("%w; the verifier says: %s", err, strings.TrimSpace(string(log[:n])))
		}
	}
	return -1, err
}

// fenceV2 loads f's program and attaches it to the group with
// BPF_F_ALLOW_MULTI (BPF_PROG_ATTACH, not a bpf link: the attachment
// lasts as long as the group, not as long as a file descriptor of this
// process; the program goes with the group). With ALLOW_MULTI the kernel
// runs the group's programs and those its ancestors attached with
// ALLOW_MULTI (systemd's), and allows an access only if all of them do.
func (g *v2Group) fenceV2(f DeviceFence) error {
	prog, err := loadDeviceProgram(deviceProgram(f))
	if err != nil {
		return fmt.Errorf("cgroup: fence devices of %s: load the device program (needs root, a kernel with CONFIG_CGROUP_BPF, and before Linux 5.11 a RLIMIT_MEMLOCK that fits it): %w", g.path, err)
	}
	defer unix.Close(prog)
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Open(g.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("cgroup: fence devices of %s: %w", g.path, &os.PathError{Op: "open", Path: g.path, Err: err})
	}
	defer unix.Close(fd)
	attr := progAttachAttr{
		targetFD:    uint32(fd),
		attachBPFFD: uint32(prog),
		attachType:  unix.BPF_CGROUP_DEVICE,
		attachFlags: unix.BPF_F_ALLOW_MULTI,
	}
	if _, err := bpf(unix.BPF_PROG_ATTACH, unsafe.Pointer(&attr), unsafe.Sizeof(attr)); err != nil {
		return fmt.Errorf("cgroup: fence devices of %s: attach the device program (an ancestor group holding a device program without BPF_F_ALLOW_MULTI refuses it): %w", g.path, err)
	}
	return nil
}

// FenceDevices: see Group and fenceV2.
func (g *v2Group) FenceDevices(f DeviceFence) error {
	if err := f.validate(); err != nil {
		return err
	}
	return g.fenceV2(f)
}

// FenceDevices does nothing: without cgroups nothing is fenced (the
// manager's warning says so).
func (disabledGroup) FenceDevices(f DeviceFence) error { return f.validate() }
