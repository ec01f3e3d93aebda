package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The agent and the shim run as root, but every file they create or write
// on a user's behalf (log directories and log files, the worker output the
// agent appends to a log) is reached with the user's own filesystem
// identity: a path the user controls (a symlink, a directory swapped for
// another) can then lead nowhere the user could not go by themselves.

// asUser runs fn on an OS thread of its own whose filesystem identity is
// cred's user: fsuid, fsgid and supplementary groups are set on that thread
// only (setfsuid(2), setfsgid(2) and the raw setgroups(2) are per thread),
// and a nonzero fsuid clears the capabilities that bypass file permissions
// (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, ...) from the thread. Every path
// fn opens, creates, renames or removes is thus checked by the kernel as for
// the user. With cred nil or uid 0, or when the process is not root (it can
// only act as itself then), fn runs as is.
//
// fn must do its file operations itself, on the calling goroutine, and not
// hand them to other goroutines. If the thread cannot be given back its
// identity, it is not reused: the goroutine exits locked and the Go runtime
// ends the thread.
func asUser(cred *syscall.Credential, fn func() error) error {
	if cred == nil || cred.Uid == 0 || os.Geteuid() != 0 {
		return fn()
	}
	type result struct{ err, fnErr error }
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		groups, err := unix.Getgroups()
		if err != nil {
			done <- result{err: fmt.Errorf("getgroups: %w", err)}
			return // the thread stays locked and is discarded
		}
		// -1 changes nothing and returns the current id.
		uid0, _ := unix.SetfsuidRetUid(-1)
		gid0, _ := unix.SetfsgidRetGid(-1)
		if err := setFSIdentity(int(cred.Uid), int(cred.Gid), toInts(cred.Groups)); err != nil {
			done <- result{err: err}
			return
		}
		fnErr := fn()
		if err := setFSIdentity(uid0, gid0, groups); err != nil {
			done <- result{err: fmt.Errorf("restoring the agent's identity: %w", err), fnErr: fnErr}
			return
		}
		runtime.UnlockOSThread()
		done <- result{fnErr: fnErr}
	}()
	r := <-done
	if r.err != nil {
		return fmt.Errorf("acting as uid %d: %w", cred.Uid, r.err)
	}
	return r.fnErr
}

// setFSIdentity sets the calling thread's fsuid, fsgid and supplementary
// groups and checks that they took. None of the three needs a capability
// that a nonzero fsuid drops (they need CAP_SETUID and CAP_SETGID).
func setFSIdentity(uid, gid int, groups []int) error {
	if _, err := unix.SetfsuidRetUid(uid); err != nil {
		return fmt.Errorf("setfsuid %d: %w", uid, err)
	}
	if cur, _ := unix.SetfsuidRetUid(-1); cur != uid {
		return fmt.Errorf("setfsuid %d: fsuid is %d", uid, cur)
	}
	if _, err := unix.SetfsgidRetGid(gid); err != nil {
		return fmt.Errorf("setfsgid %d: %w", gid, err)
	}
	if cur, _ := unix.SetfsgidRetGid(-1); cur != gid {
		return fmt.Errorf("setfsgid %d: fsgid is %d", gid, cur)
	}
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	return nil
}

func toInts(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// userName is how errors name the user a file operation was done as.
func userName(name string, cred *syscall.Credential) string {
	switch {
	case name != "":
		return name
	case cred != nil:
		return fmt.Sprintf("uid %d", cred.Uid)
	default:
		return fmt.Sprintf("uid %d", os.Getuid())
	}
}

// mkdirAsUser creates dir and its missing parents as cred's user with mode
// (under the process umask; the shim passes 0755 less the process's umask:
// never writable by others, whatever the umask). A directory the
// user may not create fails with "cannot create log directory X as alice:
// permission denied" and what the user can do about it; nothing is created
// where the user could not create it.
func mkdirAsUser(dir string, mode os.FileMode, cred *syscall.Credential, who string) error {
	return asUser(cred, func() error {
		var missing []string
		for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil {
				break
			}
			missing = append(missing, d)
			if d == filepath.Dir(d) {
				break
			}
		}
		for i := len(missing) - 1; i >= 0; i-- {
			d := missing[i]
			if err := os.Mkdir(d, mode); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("cannot create log directory %s as %s: %w; give the work a log directory %[2]s may create (the default, ~/ducc/logs, needs a home %[2]s may write)", d, who, unwrapPath(err))
			}
		}
		return nil
	})
}

// Flags for opening a user's file for writing: never through a symlink,
// never blocking on a FIFO, never acquiring a terminal.
const userWriteFlags = os.O_WRONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// checkUserFile accepts an opened file only if it is a regular file with
// one link, owned by uid: what the user made of the path (a symlink, a hard
// link to another's file, a device or FIFO) is refused.
func checkUserFile(f *os.File, uid uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return errors.New("not a regular file")
	case st.Uid != uid:
		return fmt.Errorf("owned by uid %d, not by uid %d", st.Uid, uid)
	case st.Nlink != 1:
		return fmt.Errorf("has %d links", st.Nlink)
	}
	return nil
}
