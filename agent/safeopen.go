package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openLog opens the log file at path for reading on behalf of a user
// whose processes run as uid. The agent runs as root and the path, its
// directories and the file are in the user's hands, so it must not let
// anything the user controls make it read a file the user could not:
//
//   - no component of path may be a symbolic link (openat2 with
//     RESOLVE_NO_SYMLINKS, or a walk with O_NOFOLLOW on every component
//     where the kernel has no openat2);
//   - the file is first opened with O_PATH, which reads nothing and
//     cannot block or have side effects, and checked with fstat: it must
//     be a regular file (not a FIFO or a device) owned by uid, so a hard
//     link to someone else's file is refused too;
//   - only then is that same inode opened for reading, through
//     /proc/self/fd, so nothing swapped in after the check is read.
//
// An agent that does not run as root reads as its own user and the kernel
// checks it; the owner check then uses the agent's uid (its processes run
// as it), see logOwner.
func openLog(path string, uid uint32) (*os.File, error) {
	return openLogWith(path, uid, openNoFollow)
}

// openLogWith is openLog with the path resolution given, so that tests
// can run the checks over both resolvers.
func openLogWith(path string, uid uint32, resolve func(string) (int, error)) (*os.File, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, fmt.Errorf("log path %q is not a clean absolute path", path)
	}
	pfd, err := resolve(path)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("refusing log %s: a component of the path is a symbolic link (logs are never read through links)", path)
		}
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("stat log %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return nil, fmt.Errorf("refusing log %s: it is a symbolic link (logs are never read through links)", path)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("refusing log %s: it is not a regular file", path)
	case st.Uid != uid:
		return nil, fmt.Errorf("refusing log %s: it is owned by uid %d, not by the work's owner (uid %d)", path, st.Uid, uid)
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

// openNoFollow resolves the absolute, clean path to an O_PATH descriptor
// without following any symbolic link: with openat2 where the kernel has
// it (Linux 5.6), else component by component.
func openNoFollow(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		// No openat2 (old kernel, or a seccomp filter that refuses it).
		return walkNoFollow(path)
	}
	return fd, err
}

// walkNoFollow resolves path one component at a time with O_NOFOLLOW:
// every directory is opened with O_DIRECTORY (a link there fails with
// ELOOP or ENOTDIR), and the last component as an O_PATH descriptor of
// whatever it is (a link included, which the caller's fstat refuses).
func walkNoFollow(path string) (int, error) {
	dir, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, name := range parts {
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(dir, name, flags, 0)
		unix.Close(dir)
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) && i < len(parts)-1 {
				var st unix.Stat_t
				// Tell a link in a directory component from a plain file.
				if unix.Fstatat(unix.AT_FDCWD, "/"+strings.Join(parts[:i+1], "/"), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					return -1, unix.ELOOP
				}
			}
			return -1, err
		}
		dir = next
	}
	return dir, nil
}

// logOwner is the uid that must own the logs of work whose processes run
// as uid: that uid when the agent runs as root (the shim switches to it),
// else the agent's own (its processes run as the agent's user).
func logOwner(uid uint32) uint32 {
	if e := os.Geteuid(); e != 0 {
		return uint32(e)
	}
	return uid
}
