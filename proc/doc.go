// Package proc is the only package in ducc that forks.
//
// It launches a process as a user inside a cgroup through a shim that
// stays the process's parent, records its exit status on disk, and lets a
// restarted agent re-adopt it: the agent's shim server ([RunShimServer],
// one per Manager, see "The shim server"), or, for [Manager.Run] and a
// Manager without [Config.ShimServerCommand], a shim per process
// ([RunShim]).
//
// The shims, and the worker of exec jobs ([RunExecWorker]), run from the
// small executable ducc-shim ([Main], cmd/ducc-shim) when it lies next to
// the running executable (duccd, the agent), else from that executable
// (`duccd shim`, `duccd exec-worker`): [ShimCommand] and
// [ExecWorkerCommand] choose. ducc-shim links this package and what it
// needs, not the CLI, libp2p or Prometheus, so a process start does not
// pay for initializing them.
//
// # Files
//
// Every process has a directory DataDir/procs/<id>/ (local disk, JSON, not a
// wire format):
//
//	spec.json    written by the agent before launching the shim
//	shim.log     the shim's own stderr (diagnostics only)
//	child.json   written by the shim once the child runs: child pid, shim pid
//	             and shim start time (to recognise a recycled pid)
//	status.json  written by the shim when the child has ended (or failed to
//	             launch), atomically: temp file, rename; an exit is not
//	             synced to disk (it protects against the agent dying, not
//	             the machine: the head's Raft log holds the reported exit,
//	             and an unreadable status after a crash reads as lost); a
//	             launch failure's is synced (file and directory)
//
// The directory and the cgroup stay until [Manager.Forget], called once the
// head has acknowledged the exit; until then every agent start re-reports the
// exit through [Config.OnExit].
//
// # The shim server
//
// [Manager.Start] launches the Manager's server (`ducc-shim shim-server
// <procs directory>`) at its first call, in its own session, with one end
// of a socket pair as fd 3. Agent and server exchange JSON lines
// (serverMsg): "start <id>" (spec.json is in place) is answered by
// "started" with the handshake below; "signal <id> <name>" forwards a stop
// signal to the child's process group, or ("kill") kills the group and the
// cgroup, while the child is unreaped; "ended <id>" tells every connected
// agent that status.json is written. The server launches up to four
// processes at once, each on a goroutine of its own and exactly as a
// per-process shim does (below, from reading spec.json to child.json):
// the files a launch creates get their modes explicitly, and only the fork
// sets the process-wide umask to the child's (forks with the same umask
// share it, umask.go); a "signal" for a process still launching is kept
// and sent once it runs; a second "start" of an id that is launching or
// running is refused; a process's "started" always precedes its "ended".
// The server reaps its children on SIGCHLD with wait4 (never during a
// fork) and records each end, as a per-process shim does, on up to four
// goroutines. The Manager hands each answer to Start over at once and
// finishes reported ends (status.json, OnExit) on up to four goroutines
// of its own. child.json names the server: pid, start time and
// its abstract unix socket ("ducc-shim-server/<pid>/<start>"), which
// accepts connections from its own uid only. A new Manager's Adopt
// connects to the servers its processes name (checking the peer's pid),
// then finishes the processes whose status.json exists (they ended while
// no agent listened); a server that is gone, or whose connection ends,
// turns its processes without status.json into lost ones (cgroup killed).
// A server catches and drops SIGTERM, SIGINT, SIGHUP and SIGPIPE (caught,
// not ignored, so that its children start with them at their defaults),
// and exits once it has no process and no connected agent. Its stderr is
// DataDir/shim-server.log, warnings only. It runs its Go code on one P
// below 8 cores and on a P per 4 cores above, up to four (serverProcs).
//
// # The shim
//
// The agent starts a per-process shim in its own session (Setsid) with the handshake
// pipe as fd 3. The shim reads spec.json, resolves the user, and, with the
// user's filesystem identity (see below), finds the program, checks the
// working directory and creates the log directory and file with the
// process's umask; then it starts the child inside the cgroup without ever
// entering it itself ([cgroup.Manager.StartIn]; v2: clone-into-cgroup with
// SysProcAttr.UseCgroupFD; v1: one thread of the shim steps alone into the
// group, forks and steps back), so the shim's own memory is not charged to
// the process and the OOM killer never picks the shim; it starts the child in its own process group with the user's credentials, cwd,
// environment and umask and stdout+stderr on the log file, renames the log to
// <LogDir>/<WorkID>-<Kind>-<Node>-<pid>.log, writes child.json and sends one
// JSON line on the pipe. It forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to
// the child's process group; SIGUSR1 means "SIGKILL the child's process group
// and everything in the cgroup" (used by [Manager.Stop] after the grace
// period, so that the shim itself survives to record the status). When the
// child ends the shim kills whatever is left in the cgroup (like systemd's
// KillMode=control-group), counts the OOM kills in its tree and decides
// whether the process ended because of them (cgroup oom_kill counter delta:
// every process of the cgroup counts, so a child killed at the cap while the
// process went on and exited 0 is reported too, in [Status.OOMKills] and the
// reason; on old v1 kernels without that counter, memory.failcnt plus a
// SIGKILL death of the process itself), writes status.json and exits.
//
// # GPU fences
//
// A spec with a [GPUFence] (on a node with GPUs, every process: one
// without GPUs gets an empty fence) has the device files of the NVIDIA
// GPUs it was not given closed to it: the shim, as root, fences the
// process's cgroup ([cgroup.Group.FenceDevices]: major 195, minors 0-255
// but the allowed GPUs' minors, nvidia-modeset 254 and nvidiactl 255)
// after loading it and before the fork; on cgroup v1 the same Group value
// then starts the child in its devices group too. A fence that cannot be
// set is a launch failure ("cgroup: GPU fence: ..."). A spec without one
// costs nothing. The environment (CUDA_VISIBLE_DEVICES) is the caller's.
//
// # Files of the user's
//
// The agent and the shim run as root; the paths of a spec (program,
// working directory, log directory) are the user's to choose and the
// user's to change at any time (a log replaced by a symlink, a directory
// swapped for a symlink to one of root's). So every file operation on
// such a path runs on an OS thread whose fsuid, fsgid and groups are the
// user's (setfsuid(2), per thread, which also drops root's power to bypass
// permissions on that thread): the kernel checks it as for the user's own
// process. A log directory the user may not create is a launch failure
// ("cannot create log directory /x/logs as alice: permission denied"), and
// nothing is created there. The rename of the log to carry the pid, and
// its removal when the launch fails, are done as the user too. The agent
// writes a job process's non-protocol output to its log through
// [Manager.AppendLog]: opened as the user, with O_NOFOLLOW, and accepted
// only as a regular file with one link owned by the user. Only the default
// log directory, the process directory (root's, 0700), is written as root.
//
// # The agent side
//
// [Manager.Start] creates the cgroup (memory cap, swap capped), writes
// spec.json, asks the shim server (or launches a per-process shim) and
// waits for the handshake only (about a millisecond). A server's ends
// arrive on its connection, read by one goroutine per server, which reads
// status.json and calls OnExit. A per-process shim is watched through a
// pidfd registered with the Go netpoller, so no OS thread is parked per
// process; when it ends, the agent reaps it if it is its child (waitid
// P_PIDFD), reads status.json and calls OnExit once, from the watcher
// goroutine. [Manager.Adopt] does the same for
// shims found in DataDir/procs after a restart; a shim that died without
// status.json (or a pid that now belongs to another process: pid and start
// time are checked) is reported with State Lost and its cgroup is emptied. [Manager.Close] stops the
// watchers and never kills anything.
//
// # Short-lived runs
//
// [Manager.Run] runs a program to completion for the agent (custom service
// pingers): through a per-process shim, as the user, in its own cgroup with a
// memory cap, with given bytes on its standard input and its standard output
// and error captured (the last [RunSpec.MaxOutput] bytes of each). The shim
// gets the handshake pipe as fd 3 and the program's stdin, stdout and stderr
// as fds 4-6 (spec.json says "oneshot"), writes no log file, and otherwise
// behaves as above. At the timeout Run kills the process group and the
// cgroup. A run lives in DataDir/runs/<id>/ and in a cgroup of that id only
// while Run waits; [NewManager] removes what a crashed agent left there. Runs
// are never reported through OnExit nor adopted.
//
// Production note: the agent's systemd unit must not kill the shims when the
// agent restarts (KillMode=process, or Delegate=yes with the shims moved
// elsewhere); the shims run in their own session but, on cgroup v2, in the
// agent's cgroup.
package proc
