package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
)

// openLog opens the log file at path for reading on behalf of a user
// whose processes run as uid. The agent runs as root and the path, its
// directories and the file are in the user's hands, so it must not let
// anything the user controls make it read a file the user could not:
//
//   - the path is resolved one component at a time from "/", each opened
//     with O_PATH|O_NOFOLLOW relative to the directory before it, so no
//     rename or swap between steps changes what the next step sees;
//   - a symbolic link is followed only if root made it in a directory
//     that only root may change (such as /home -> /export/home): the
//     link and its directory are owned by root and the directory is not
//     writable by group or others. Any other link (one the user made, or
//     in a directory the user may write) refuses the log;
//   - the file is opened with O_PATH, which reads nothing and cannot
//     block or have side effects, and checked with fstat: it must be a
//     regular file (not a FIFO or a device) owned by uid, so a hard link
//     to someone else's file is refused too;
//   - only then is that same inode opened for reading, through
//     /proc/self/fd, so nothing swapped in after the check is read.
//
// A refusal is a CodeUsage error that names the path and why; it never
// shows anything of the file. An agent that does not run as root reads as
// its own user and the kernel checks it; its processes run as the agent's
// user, which logOwner names.
func openLog(path string, uid uint32) (*os.File, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, wire.Errorf(wire.CodeUsage, "log path %q is not a clean absolute path", path)
	}
	pfd, err := resolveNoUserLinks(path)
	if err != nil {
		var le *linkError
		if errors.As(err, &le) {
			return nil, wire.Errorf(wire.CodeUsage, "refusing log %s: %s is a symbolic link the user controls (logs are read only through links root made in directories only root may change)", path, le.link)
		}
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("stat log %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, wire.Errorf(wire.CodeUsage, "refusing log %s: it is not a regular file", path)
	case st.Uid != uid:
		return nil, wire.Errorf(wire.CodeUsage, "refusing log %s: it is owned by uid %d, not by the work's owner (uid %d)", path, st.Uid, uid)
	}
	// Reopen the checked inode itself: /proc/self/fd/N names the open
	// O_PATH descriptor, not the path, so no lookup happens again.
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("open log %s: the file changed while it was opened", path)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// linkError is a symbolic link that resolveNoUserLinks does not follow.
type linkError struct{ link string }

func (e *linkError) Error() string { return e.link + " is a symbolic link the user controls" }

// maxLinks bounds the symbolic links one resolution follows (as the
// kernel's ELOOP limit does).
const maxLinks = 40

// resolveNoUserLinks resolves the absolute path to an O_PATH descriptor of
// its last component (never followed if it is a link the user controls),
// following only the symbolic links trustedLink accepts.
func resolveNoUserLinks(path string) (int, error) {
	dir, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	// dir is closed unless it is the descriptor returned.
	defer func() {
		if dir >= 0 {
			unix.Close(dir)
		}
	}()
	todo := strings.Split(strings.TrimPrefix(path, "/"), "/")
	seen := "" // the path resolved so far, for messages
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == "" || name == "." {
			continue
		}
		fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("%s/%s: %w", seen, name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			if !trustedLink(dir, &st) {
				unix.Close(fd)
				return -1, &linkError{link: seen + "/" + name}
			}
			links++
			if links > maxLinks {
				unix.Close(fd)
				return -1, fmt.Errorf("%s/%s: %w", seen, name, unix.ELOOP)
			}
			target, err := readlinkFd(fd)
			unix.Close(fd)
			if err != nil {
				return -1, err
			}
			rest := strings.Split(target, "/")
			if strings.HasPrefix(target, "/") {
				root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return -1, err
				}
				unix.Close(dir)
				dir, seen = root, ""
			}
			todo = append(rest, todo...)
		case len(todo) == 0:
			unix.Close(dir)
			dir = -1
			return fd, nil
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			unix.Close(fd)
			return -1, fmt.Errorf("%s/%s: %w", seen, name, unix.ENOTDIR)
		default:
			unix.Close(dir)
			dir = fd
			if name == ".." {
				seen = filepath.Dir("/" + seen)
				if seen == "/" {
					seen = ""
				}
			} else {
				seen += "/" + name
			}
		}
	}
	// The path named a directory (or "/"): return it; the caller refuses
	// anything but a regular file.
	fd := dir
	dir = -1
	return fd, nil
}

// trustedLink reports whether the symbolic link st, in the directory dir,
// is one only root controls: the link is root's, and so is its directory,
// which neither group nor others may write. A non-root agent trusts its
// own links and directories as well (it reads as itself anyway).
func trustedLink(dir int, st *unix.Stat_t) bool {
	trusted := func(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }
	var ds unix.Stat_t
	if unix.Fstat(dir, &ds) != nil {
		return false
	}
	return trusted(st.Uid) && trusted(ds.Uid) && ds.Mode&0o022 == 0
}

// readlinkFd reads the target of the symbolic link open as the O_PATH
// descriptor fd.
func readlinkFd(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// logOwner is the uid that must own the logs of the work acc describes:
// the uid its processes run as. As root the shim switches to the work's
// uid, or, for a named user with uid and gid 0, to that user as this node
// knows it (proc.LookupUser); an agent that is not root runs its
// processes as itself.
func logOwner(acc wire.LogAccess) (uint32, error) {
	if e := os.Geteuid(); e != 0 {
		return uint32(e), nil
	}
	if u := acc.Work.User; u != "" && u != "root" && acc.UID == 0 && acc.GID == 0 {
		uid, _, _, err := proc.LookupUser(u)
		if err != nil {
			return 0, wire.Errorf(wire.CodeUsage, "the logs of work %d: %v", acc.Work.ID, err)
		}
		return uid, nil
	}
	return acc.UID, nil
}
