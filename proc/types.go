package proc

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ducc-project/ducc/cgroup"
)

// Spec describes a process to launch.
type Spec struct {
	ID     string `json:"id"`      // "17.1" (work id . process number); a safe file name
	WorkID uint64 `json:"work_id"` // for the log file name
	Kind   string `json:"kind"`    // a label for the log file name: the head's process kind ("JP", "SVC", "POP")
	Node   string `json:"node"`    // node name, for the log file name
	// Incarnation is the cluster incarnation that asked for the process
	// (a label: the agent tells leftovers of an earlier cluster by it).
	Incarnation string `json:"incarnation,omitempty"`

	// Target user. As root the shim always switches to UID/GID/Groups; if
	// User is set and UID and GID are 0 (and User is not "root"), the shim
	// resolves User itself (an unknown user is a launch failure). A non-root
	// shim cannot change identity: UID must then be its own uid.
	User   string   `json:"user,omitempty"`
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`

	// Path is the program (looked up in the PATH of Env if it has no slash);
	// Args are its arguments, not including argv[0].
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	// Env is the complete environment; nil means a minimal one (PATH, HOME,
	// USER, LOGNAME).
	Env []string `json:"env,omitempty"`
	Dir string   `json:"dir,omitempty"` // working directory; "" = "/"
	// DirIfExists: when Dir is not a directory the user can reach, run in
	// "/" instead of failing the launch (the shim looks, as the user).
	DirIfExists bool `json:"dir_if_exists,omitempty"`
	// Umask for the process (the submitter's); nil means 0o022.
	Umask *int `json:"umask,omitempty"`

	// LogDir receives <WorkID>-<Kind>-<Node>-<pid>.log (stdout and stderr).
	// The shim creates missing directories and the file as the user, with
	// Umask; one the user may not create is a launch failure. "" means the
	// process directory under DataDir.
	LogDir string `json:"log_dir,omitempty"`
	// MemoryLimit in bytes for the cgroup (0 = none); swap is capped too.
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// Stdin gives the process FIFOs instead of /dev/null and the log: its
	// stdin reads <process dir>/stdin and its stdout writes <process
	// dir>/stdout (stderr still goes to the log). The shim holds both open
	// read-write, so the process sees neither EOF nor EPIPE while the agent
	// restarts; the agent reconnects through Manager.Pipes.
	Stdin bool `json:"stdin,omitempty"`
	// GPUFence, when set, closes the device files of the NVIDIA GPUs not
	// in it to the process (the shim fences its cgroup before the process
	// starts); nil fences nothing and costs nothing (a node without GPUs).
	// On a node with GPUs every process should have one: a process
	// without GPUs gets an empty one. It needs cgroups (an agent with
	// cgroups disabled fences nothing).
	GPUFence *GPUFence `json:"gpu_fence,omitempty"`
}

// State of a process.
type State string

const (
	Starting     State = "Starting"
	Running      State = "Running"
	Exited       State = "Exited"
	LaunchFailed State = "LaunchFailed"
	// Lost: the shim died without recording the exit (Reason "lost: shim
	// died"); whatever was left in the cgroup has been killed.
	Lost State = "Lost"
)

// Ended reports whether the state is final.
func (s State) Ended() bool { return s == Exited || s == LaunchFailed || s == Lost }

// Status is what is known about a process. It is also the content of
// status.json.
type Status struct {
	ID        string    `json:"id"`
	State     State     `json:"state"`
	PID       int       `json:"pid,omitempty"`
	ShimPID   int       `json:"shim_pid,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// ExitCode is the exit code, or -1 if the process was killed by a
	// signal, failed to launch, or was lost.
	ExitCode  int    `json:"exit_code"`
	Signal    string `json:"signal,omitempty"` // "SIGKILL" when killed by a signal
	OOMKilled bool   `json:"oom_killed,omitempty"`

	// OOMKilled says the process ended because of its memory cap (the OOM
	// killer killed it, or a process of its tree it then failed with).
	// OOMKills is how many processes of its tree (everything in its
	// cgroup) the kernel OOM killer killed while it ran, the process itself
	// included. It can be above 0 with OOMKilled false: a child was killed
	// and the process went on, maybe to exit 0.
	OOMKills uint64 `json:"oom_kills,omitempty"`
	// Stopped: the shim received a stop request (SIGTERM/SIGINT/... or the
	// post-grace kill) before the process ended.
	Stopped     bool  `json:"stopped,omitempty"`
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// Reason is for humans: "exceeded its memory limit of 512 MiB", "exec:
	// /x: no such file or directory", "killed by SIGTERM", "exited with code
	// 7", "lost: shim died".
	Reason  string `json:"reason,omitempty"`
	LogPath string `json:"log_path,omitempty"`
	// MaxRSS (bytes) and CPUSeconds of an ended process and the children
	// it waited for (getrusage of the process the shim reaped), for
	// accounting.
	MaxRSS     int64   `json:"max_rss,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Incarnation is Spec.Incarnation (Manager.Status and List fill it
	// in).
	Incarnation string `json:"incarnation,omitempty"`
}

// Config configures a Manager.
type Config struct {
	// DataDir: processes live in DataDir/procs/<id>/.
	DataDir string
	// ShimCommand runs the shim, e.g. {"/usr/bin/ducc-shim", "shim"}
	// (see [ShimCommand]); the process directory is appended as the last
	// argument.
	ShimCommand []string
	// ShimServerCommand runs the shim server, e.g. {"/usr/bin/ducc-shim",
	// "shim-server"} (see [ShimServerCommand]): Start then launches every
	// process through one long-lived shim per Manager instead of one shim
	// per process (Manager.Run always uses ShimCommand). The procs
	// directory is appended as the last argument.
	ShimServerCommand []string
	// ShimEnv is added to the agent's environment for the shim.
	ShimEnv []string
	// Cgroups places processes; nil means cgroup.NewDisabled.
	Cgroups *cgroup.Manager
	Logger  *slog.Logger
	// OnExit is called once per process (per Manager) when it has ended,
	// from a goroutine the Manager owns. It must not call Close.
	OnExit func(Status)
}

var (
	// ErrUnknown is returned for an id the Manager does not know.
	ErrUnknown = errors.New("unknown process")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("process manager closed")
	// ErrRunning is returned by Forget for a process that has not ended.
	ErrRunning = errors.New("process still running")
)

// ValidID reports whether id can name a process (and its directory and
// cgroup): 1-128 characters from [A-Za-z0-9._-], not starting with '.'.
func ValidID(id string) error {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return fmt.Errorf("proc: invalid process id %q", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("proc: invalid process id %q: only letters, digits, '.', '_' and '-' are allowed", id)
		}
	}
	return nil
}

func (s Spec) validate() error {
	if err := ValidID(s.ID); err != nil {
		return err
	}
	if s.Path == "" {
		return fmt.Errorf("proc: %s: empty program path", s.ID)
	}
	for _, f := range []string{s.Kind, s.Node} {
		if strings.ContainsAny(f, "/\x00") {
			return fmt.Errorf("proc: %s: kind and node must not contain '/': %q", s.ID, f)
		}
	}
	if s.MemoryLimit < 0 {
		return fmt.Errorf("proc: %s: negative memory limit", s.ID)
	}
	if err := s.GPUFence.validate(); err != nil {
		return fmt.Errorf("proc: %s: %w", s.ID, err)
	}
	return nil
}

// logName is the final log file name (docs/operations.md).
func (s Spec) logName(pid int) string {
	return fmt.Sprintf("%d-%s-%s-%d.log", s.WorkID, s.Kind, s.Node, pid)
}

// shimSpec is spec.json: the Spec plus what the shim needs to find the cgroup.
type shimSpec struct {
	Spec
	CgroupEnabled bool   `json:"cgroup_enabled"`
	CgroupRoot    string `json:"cgroup_root,omitempty"`
	CgroupMode    string `json:"cgroup_mode,omitempty"`
	CgroupMount   string `json:"cgroup_mount,omitempty"`
	CgroupName    string `json:"cgroup_name,omitempty"`
	// Oneshot: a Manager.Run process, with its stdin, stdout and stderr
	// on the shim's fds 4, 5 and 6 (oneshotFD) and no log file.
	Oneshot bool `json:"oneshot,omitempty"`
}

// childInfo is child.json.
type childInfo struct {
	PID       int       `json:"pid"`
	ShimPID   int       `json:"shim_pid"`
	ShimStart uint64    `json:"shim_start"`       // /proc/<pid>/stat starttime, clock ticks since boot
	Server    string    `json:"server,omitempty"` // the shim server's socket name; "" for a per-process shim
	StartedAt time.Time `json:"started_at"`
	LogPath   string    `json:"log_path"`
}

// handshake is the JSON line the shim writes on fd 3.
type handshake struct {
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	LogPath   string    `json:"log_path,omitempty"`
	Error     string    `json:"error,omitempty"`
}
