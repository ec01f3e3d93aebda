package agent

import (
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ducc-project/ducc/wire"
)

// TestOpenLog plays a user who owns a log directory against a root agent:
// every way to point the log at a file the user could not read is
// refused, and links root made in root's directories are followed.
func TestOpenLog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files belong to several owners")
	}
	const user, other = 23456, 23457 // uids with no account: only ownership matters
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// Root's secret: mode 600 in a 700 directory.
	secretDir := filepath.Join(base, "root")
	mkdir(t, secretDir, 0o700, 0)
	secret := filepath.Join(secretDir, "secret")
	writeOwned(t, secret, "root's secret\n", 0o600, 0)
	// The user's log directory, and another user's file.
	logs := filepath.Join(base, "logs")
	mkdir(t, logs, 0o755, user)
	good := filepath.Join(logs, "17-JP-n1-1.log")
	writeOwned(t, good, "hello from the job\n", 0o644, user)
	private := filepath.Join(logs, "private.log")
	writeOwned(t, private, "private but mine\n", 0o000, user)
	theirs := filepath.Join(logs, "theirs.log")
	writeOwned(t, theirs, "someone else's\n", 0o600, other)
	// A symbolic link as the last component, and as a directory.
	link := filepath.Join(logs, "link.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(logs, "dir")
	if err := os.Symlink(secretDir, dirLink); err != nil {
		t.Fatal(err)
	}
	// A link to a link whose target is the user's own file: still a link.
	ownLink := filepath.Join(logs, "own.log")
	if err := os.Symlink(good, ownLink); err != nil {
		t.Fatal(err)
	}
	// A hard link to root's file (same file system, made by root here).
	hard := filepath.Join(logs, "hard.log")
	if err := os.Link(secret, hard); err != nil {
		t.Fatal(err)
	}
	// A FIFO the user made: opening it for reading would block.
	fifo := filepath.Join(logs, "fifo.log")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(fifo, user, user); err != nil {
		t.Fatal(err)
	}
	// A directory owned by the user in place of the log.
	sub := filepath.Join(logs, "sub")
	mkdir(t, sub, 0o755, user)
	// Links root made: in a directory only root changes (followed), and
	// in the user's directory or a world-writable one (not followed).
	sys := filepath.Join(base, "sys")
	mkdir(t, sys, 0o755, 0)
	symlinkOwned(t, logs, filepath.Join(sys, "home"), 0)
	symlinkOwned(t, "../logs", filepath.Join(sys, "rel"), 0)
	symlinkOwned(t, filepath.Join(sys, "home"), filepath.Join(sys, "chain"), 0)
	symlinkOwned(t, secretDir, filepath.Join(sys, "users"), user) // the user's link in root's directory
	symlinkOwned(t, "/", filepath.Join(sys, "root"), 0)
	rootLinkInUserDir := filepath.Join(logs, "rootlink")
	symlinkOwned(t, secretDir, rootLinkInUserDir, 0)
	public := filepath.Join(base, "public")
	mkdir(t, public, 0o777, 0)
	symlinkOwned(t, secretDir, filepath.Join(public, "x"), 0)
	loop := filepath.Join(sys, "loop")
	symlinkOwned(t, loop, loop, 0)

	tests := []struct {
		name    string
		path    string
		want    string // content, or "" for a refusal
		errWant string
	}{
		{"own file", good, "hello from the job\n", ""},
		{"own file of mode 000", private, "private but mine\n", ""},
		{"symlink as the last component", link, "", "symbolic link the user controls"},
		{"symlink to the user's own file", ownLink, "", "symbolic link"},
		{"symlink as a directory component", filepath.Join(dirLink, "secret"), "", "symbolic link"},
		{"hard link to a root-owned file", hard, "", "owned by uid 0, not by the work's owner (uid 23456)"},
		{"FIFO", fifo, "", "not a regular file"},
		{"directory", sub, "", "not a regular file"},
		{"another user's file", theirs, "", "owned by uid 23457"},
		{"root's file itself", secret, "", "owned by uid 0"},
		{"relative path", "logs/17-JP-n1-1.log", "", "not a clean absolute path"},
		{"path with dot-dot", logs + "/../root/secret", "", "not a clean absolute path"},
		{"missing file", filepath.Join(logs, "none.log"), "", "no such file"},
		{"root's link in root's directory", filepath.Join(sys, "home", "17-JP-n1-1.log"), "hello from the job\n", ""},
		{"root's relative link", filepath.Join(sys, "rel", "17-JP-n1-1.log"), "hello from the job\n", ""},
		{"a chain of root's links", filepath.Join(sys, "chain", "17-JP-n1-1.log"), "hello from the job\n", ""},
		{"root's link to /", filepath.Join(sys, "root") + good, "hello from the job\n", ""},
		{"the user's link in root's directory", filepath.Join(sys, "users", "secret"), "", "symbolic link the user controls"},
		{"root's link in the user's directory", filepath.Join(rootLinkInUserDir, "secret"), "", "symbolic link the user controls"},
		{"root's link in a world-writable directory", filepath.Join(public, "x", "secret"), "", "symbolic link the user controls"},
		{"a link loop", filepath.Join(loop, "x"), "", "too many levels of symbolic links"},
		{"a file as a directory", filepath.Join(good, "x"), "", "not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := openLog(tc.path, user)
			if tc.errWant != "" {
				if err == nil {
					b, _ := io.ReadAll(f)
					f.Close()
					t.Fatalf("opened %s (read %q); want a refusal with %q", tc.path, b, tc.errWant)
				}
				if !strings.Contains(err.Error(), tc.errWant) {
					t.Errorf("error %q; want it to contain %q", err, tc.errWant)
				}
				if strings.Contains(err.Error(), "root's secret") {
					t.Errorf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("open %s: %v", tc.path, err)
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil || string(b) != tc.want {
				t.Errorf("read %q, %v; want %q", b, err, tc.want)
			}
		})
	}
}

// TestOpenLogKeepsTheCheckedFile: once open, the log is the checked file;
// swapping the path for a link afterwards changes nothing that is read.
func TestOpenLogKeepsTheCheckedFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "job.log")
	if err := os.WriteFile(log, []byte("line 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openLog(log, uint32(os.Geteuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(log, log+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, log); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != "line 1\n" {
		t.Errorf("read %q, %v; want the original log", b, err)
	}
}

func TestLogOwner(t *testing.T) {
	// A user every system has, other than root.
	me, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here")
	}
	myUID, _ := strconv.ParseUint(me.Uid, 10, 32)
	work := func(name string, uid, gid uint32) wire.LogAccess {
		return wire.LogAccess{Work: wire.WorkInfo{ID: 17, User: name}, UID: uid, GID: gid}
	}
	tests := []struct {
		name    string
		acc     wire.LogAccess
		want    uint32 // as root
		errWant string
	}{
		{"the work's uid", work("alice", 1234, 1234), 1234, ""},
		{"root's work", work("root", 0, 0), 0, ""},
		{"a named user with uid 0 is looked up, as the shim does", work(me.Username, 0, 0), uint32(myUID), ""},
		{"uid 0 with a gid is uid 0", work(me.Username, 0, 5), 0, ""},
		{"an unknown user with uid 0", work("no-such-user-here", 0, 0), 0, "unknown user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logOwner(tc.acc)
			if os.Geteuid() != 0 {
				// Not root: the processes run as the agent's user.
				if err != nil || got != uint32(os.Geteuid()) {
					t.Errorf("as uid %d: %d, %v; want the agent's uid", os.Geteuid(), got, err)
				}
				return
			}
			if tc.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWant) {
					t.Errorf("got %d, %v; want an error with %q", got, err, tc.errWant)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func mkdir(t *testing.T, path string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func writeOwned(t *testing.T, path, content string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func symlinkOwned(t *testing.T, target, link string, uid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, uid); err != nil {
		t.Fatal(err)
	}
}
