// Package cgroup is the only package in ducc that knows about cgroup files.
//
// It offers one interface ([Manager] and [Group]) over cgroup v1 (legacy and
// hybrid hosts) and cgroup v2 (unified hierarchy). It reads and writes the
// control files itself, a handful per operation; the host mode comes from
// statfs(2) of /sys/fs/cgroup. (It was built on containerd's cgroups
// library; ducc used a tenth of it, and the shim, which opens a group for
// every process it starts, paid for initializing all of it: protobuf,
// eBPF, D-Bus. ARCHITECTURE.md, "Process start".)
//
// All groups of one agent live under a root group (for example "ducc"):
//
//	v1: /sys/fs/cgroup/{memory,cpu,cpuacct,freezer,pids}/<root>/<name>
//	v2: /sys/fs/cgroup/<root>/<name>
//
// On v1, controllers mounted together ("cpu" and "cpuacct" as links to
// "cpu,cpuacct") share one directory, which is made, entered and removed
// once. On v2 the root group's cgroup.subtree_control enables memory, cpu
// and pids (those the hierarchy has) for the groups below it, and so do
// its ancestors'.
//
// On a hybrid host (v1 controllers plus an empty cgroup2 mount at
// /sys/fs/cgroup/unified) the v1 hierarchies are used, because that is where
// the controllers are; if the host has no v1 memory hierarchy but the unified
// mount has a memory controller, v2 at the unified mount is used instead.
//
// # Memory caps
//
// [Resources.MemoryLimit] is written as memory.limit_in_bytes (v1) or
// memory.max (v2). Swap is capped where the host accounts it:
// [Resources.SwapLimit] = [NoSwap] writes memory.memsw.limit_in_bytes equal to
// the memory limit on v1 (no swap beyond the cap) and memory.swap.max = 0 on
// v2. If the host does not account swap (no memsw files, no memory.swap.max)
// the swap setting is skipped with a debug log line.
//
// # OOM detection
//
// v2: the oom_kill counter of memory.events. v1: the oom_kill line of
// memory.oom_control (kernels >= 4.13). On older v1 kernels that line is
// absent; [Group.OOMKills] then returns 1 when memory.failcnt > 0 and 0
// otherwise, and [Group.OOMExact] returns false: the caller must combine it
// with its own evidence (the process died from SIGKILL) before calling it an
// OOM kill. The proc package does exactly that.
//
// # Starting a process inside a group
//
// [Manager.StartIn] runs a fork so that the child begins inside a group
// while the caller stays where it is. v2 clones the child straight into
// the group (clone3 with CLONE_INTO_CGROUP, through SysProcAttr.UseCgroupFD).
// v1 has no such clone: one OS thread of the caller (never its main thread)
// moves itself, alone, into the group in every controller by writing "0" to
// each controller's tasks file, forks, and moves itself back; starts run at
// once, each on a thread of its own. A thread that moves itself is
// migrated without the global cgroup_threadgroup_rwsem that a
// whole-process move through cgroup.procs takes for writing; taking that
// lock waits for an RCU grace period whenever no migration happened in the
// last one (7-24 ms measured on an idle host), and makes the next forks of
// the host wait too. The caller's memory is never charged to the group (the
// v1 memory controller charges a process's memory to the group of its mm
// owner, the main thread).
//
// # Device fences
//
// [Group.FenceDevices] closes the minors of one character-device major
// that a [DeviceFence] does not allow to everything in a group (proc
// fences the NVIDIA GPUs a process was not given). Only fenced groups pay
// for it.
//
//   - v1: the devices controller. The group gets a directory in the
//     devices hierarchy (only when fenced: the others have none, and
//     StartIn does not enter that hierarchy for them), which inherits its
//     parent's allow-all, and one devices.deny rule per denied minor
//     ("c 195:1 rwm"). A deny-all-of-the-major rule with allow rules for
//     the allowed minors does not work: while a group allows by default, the
//     kernel takes an allow rule only as the removal of a deny rule of
//     exactly that device. StartIn and AddProc of the fenced Group value
//     enter its devices group too; Delete and RemoveRoot remove it.
//   - v2: a BPF_PROG_TYPE_CGROUP_DEVICE program, built and loaded with
//     bpf(2) here (no BPF library: see ARCHITECTURE.md), attached to the
//     group with BPF_F_ALLOW_MULTI, so that device programs of ancestors
//     (systemd's) keep running: an access must pass all of them. The
//     attachment lives as long as the group. The kernel runs device
//     programs on the cgroup2 hierarchy of hybrid hosts too.
//
// # Disabled mode
//
// When cgroups are not writable (a non-root developer running the agent),
// [New] fails with an error wrapping [ErrNotWritable] that says so. The caller
// can then use [NewDisabled]: every group operation is a no-op, caps and
// device fences are not enforced, [Group.Procs] is empty, [Group.Stats] returns [ErrDisabled] and
// the manager logs one warning line saying that memory caps are not enforced.
package cgroup
