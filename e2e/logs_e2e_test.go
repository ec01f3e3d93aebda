package e2e

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLogsAccessAndLinks plays two users and an administrator against a
// root agent: a work's log is served to its owner, root and the
// administrators only, and a log its owner replaced by a link to a
// root-only file is refused without showing anything of that file.
func TestLogsAccessAndLinks(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users and switch to them")
	}
	const alice, bob, admin = "ducc-e2e", "ducc-e2e2", "ducc-e2e3"
	for _, u := range []string{alice, bob, admin} {
		ensureUser(t, u)
	}
	cfg := filepath.Join(t.TempDir(), "ducc.yaml")
	if err := os.WriteFile(cfg, []byte("administrators: ["+admin+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "--config", cfg)

	// Root's secret: mode 600 in a 700 directory.
	const secretText = "TOP-SECRET-4711"
	secretDir := filepath.Join(c.dir, "rootonly")
	if err := os.Mkdir(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secret, []byte(secretText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	logDir := userLogDir(t, c.dir, alice)
	out, errs, code := c.ducc("run", "--as", alice, "--log-dir", logDir, "--detach", "--", "sh", "-c", "echo hello-from-alice")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	c.ducc("wait", id)
	w := c.show(id)
	if len(w.Procs) == 0 || w.Procs[0].LogPath == "" {
		t.Fatalf("work %s has no log: %+v", id, w)
	}
	logPath := w.Procs[0].LogPath
	// Alice makes her log private: 0600 in a 0700 directory.
	if err := os.Chmod(logPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(logPath), 0o700); err != nil {
		t.Fatal(err)
	}
	// Bob cannot read it on disk...
	if out, _, code := c.ducc("run", "--as", bob, "--", "cat", logPath); code == 0 || strings.Contains(out, "hello-from-alice") {
		t.Fatalf("bob reads alice's private log on disk (exit %d): the test's premise is wrong", code)
	}
	// ...nor through ducc; alice, root and the administrator can.
	tests := []struct {
		as   string
		code int
		want string
	}{
		{alice, 0, "hello-from-alice"},
		{"", 0, "hello-from-alice"},
		{admin, 0, "hello-from-alice"},
		{bob, 2, "the logs of work " + id + " are private to " + alice + ": only " + alice + ", root and the administrators (" + admin + ") may read them"},
	}
	for _, tc := range tests {
		args := []string{"logs", id}
		if tc.as != "" {
			args = append(args, "--as", tc.as)
		}
		out, errs, code := c.ducc(args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("ducc logs %s as %q: exit %d, out %q, err %q; want exit %d and %q", id, tc.as, code, out, errs, tc.code, tc.want)
		}
		if tc.code != 0 && strings.Contains(out+errs, "hello-from-alice") {
			t.Errorf("ducc logs as %s shows the log: %q", tc.as, out)
		}
	}

	// The attack: alice's own work swaps its log for a link to root's file.
	if _, errs, code := c.ducc("run", "--as", alice, "--", "ln", "-sf", secret, logPath); code != 0 {
		t.Fatalf("alice's ln: exit %d: %s", code, errs)
	}
	if fi, err := os.Lstat(logPath); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the log is not a link now: %v %v", fi, err)
	}
	refused := func(what string) {
		t.Helper()
		for _, as := range []string{alice, ""} {
			args := []string{"logs", id}
			if as != "" {
				args = append(args, "--as", as)
			}
			out, errs, code := c.ducc(args...)
			if strings.Contains(out+errs, secretText) {
				t.Errorf("%s: ducc logs as %q prints root's secret: %q %q", what, as, out, errs)
			}
			if code != 2 || !strings.Contains(errs, "symbolic link the user controls") {
				t.Errorf("%s: ducc logs as %q: exit %d, err %q; want exit 2 and a refusal naming the link", what, as, code, errs)
			}
		}
	}
	refused("log replaced by a link")

	// The same through a directory: alice swaps the log's directory for a
	// link to root's directory, which holds a file of the log's name.
	if err := os.WriteFile(filepath.Join(secretDir, filepath.Base(logPath)), []byte(secretText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(logPath)
	if _, errs, code := c.ducc("run", "--as", alice, "--", "sh", "-c", `mv "$1" "$1.old" && ln -s "$2" "$1"`, "sh", dir, secretDir); code != 0 {
		t.Fatalf("alice's directory swap: exit %d: %s", code, errs)
	}
	refused("log directory replaced by a link")

	// Root's files are untouched.
	for _, f := range []string{secret, filepath.Join(secretDir, filepath.Base(logPath))} {
		b, err := os.ReadFile(f)
		fi, _ := os.Stat(f)
		if err != nil || string(b) != secretText+"\n" || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s changed: %q %v %v", f, b, fi.Mode(), err)
		}
	}
}

// userLogDir makes <dir>/logs-<user>, owned by the user, for --log-dir.
func userLogDir(t *testing.T, dir, name string) string {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	d := filepath.Join(dir, "logs-"+name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, uid, gid); err != nil {
		t.Fatal(err)
	}
	return d
}
