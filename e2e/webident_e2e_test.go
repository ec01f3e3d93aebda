package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// ensureGroup makes group name with the given members.
func ensureGroup(t *testing.T, name string, members ...string) {
	t.Helper()
	if _, err := exec.Command("getent", "group", name).Output(); err != nil {
		if out, err := exec.Command("groupadd", name).CombinedOutput(); err != nil {
			t.Fatalf("groupadd %s: %v %s", name, err, out)
		}
	}
	for _, m := range members {
		if out, err := exec.Command("usermod", "-aG", name, m).CombinedOutput(); err != nil {
			t.Fatalf("usermod -aG %s %s: %v %s", name, m, err, out)
		}
	}
}

// webGet GETs url with a dashboard token ("" for none).
func webGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebIdentity: with web.private, the dashboard's API shows a user
// who signs in with a `ducc web-token` token their own command lines,
// results and logs, and those of work shared with their group
// (share_with_group), and nothing private to anyone without a token.
func TestWebIdentity(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users and switch to them")
	}
	const owner, other, group = "ducc-e2e", "ducc-e2e2", "ducc-e2e-share"
	ensureUser(t, owner)
	ensureUser(t, other)
	ensureGroup(t, group, other)

	cfg := filepath.Join(scratchDir(t), "ducc.yaml")
	// local_users off: the test's own requests (root's, on loopback)
	// are anonymous unless they carry a token.
	if err := os.WriteFile(cfg, []byte("web:\n  private: true\n  token_validity: 1h\n  local_users: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newJobFixture(t, "--config", cfg)
	logs := sharedDir(t, f.dir, "shared-logs")

	submit := func(extra ...string) string {
		t.Helper()
		args := append([]string{"submit", "--as", owner, "--process-executable", f.py,
			"--process-executable-args", f.worker + " 0 0 --token=s3cret", "--process-memory-size", "1G",
			"--input-file", f.items(t, "items", []string{"item-1", "item-2"}), "--log-directory", logs}, extra...)
		out, errs, code := f.ducc(args...)
		if code != 0 {
			t.Fatalf("submit: exit %d: %s %s", code, out, errs)
		}
		id := strings.Fields(out)[1]
		if w := f.waitEnd(t, id, 60*time.Second); w.Completion != "EndOfJob" {
			t.Fatalf("job %s ended %s %q", id, w.Completion, w.Reason)
		}
		return id
	}
	private := submit()
	shared := submit("--share-with-group", group)
	run := func(line string, extra ...string) string {
		t.Helper()
		args := append([]string{"run", "--as", owner, "--log-dir", logs}, extra...)
		args = append(args, "--", "sh", "-c", "echo "+line, "secret-arg")
		out, errs, code := f.ducc(args...)
		if code != 0 || !strings.Contains(out, line) {
			t.Fatalf("run: exit %d: %q %q", code, out, errs)
		}
		var list wire.WorkList
		o, _, _ := f.ducc("jobs", "--as", owner, "--all", "--json")
		if err := json.Unmarshal([]byte(o), &list); err != nil {
			t.Fatal(err)
		}
		for _, w := range list.Work {
			if w.Kind == wire.WorkManaged && len(w.Command) == 4 && w.Command[2] == "echo "+line {
				return strconv.FormatUint(w.ID, 10)
			}
		}
		t.Fatalf("run %q not in %s", line, o)
		return ""
	}
	privateRun := run("private-log-line")
	sharedRun := run("shared-log-line", "--share-with-group", group)

	token := func(as string) string {
		t.Helper()
		out, errs, code := f.ducc("web-token", "--as", as)
		if code != 0 || !strings.HasPrefix(out, "ducc1.") || !strings.Contains(errs, "token for "+as) {
			t.Fatalf("web-token --as %s: exit %d %q %q", as, code, out, errs)
		}
		return strings.TrimSpace(out)
	}
	ownerTok, otherTok := token(owner), token(other)
	if _, errs, code := f.ducc("web-token", "--as", owner, "--valid", "2h"); code != 2 || !strings.Contains(errs, "at most 1h0m0s") {
		t.Errorf("web-token longer than web.token_validity: exit %d %q", code, errs)
	}

	base := f.webURL()
	tests := []struct {
		name, path, token string
		code              int
		has, hasNot       string
	}{
		{"anonymous: no arguments", "/api/v1/jobs/" + private, "", 200, `"` + f.py + `"`, "s3cret"},
		{"anonymous: no arguments in the list", "/api/v1/jobs?all=1", "", 200, owner, "s3cret"},
		{"anonymous: no results", "/api/v1/jobs/" + private + "/results", "", 403, "", "item-1!"},
		{"anonymous: no log", "/jobs/" + privateRun + "/log", "", 403, "", "private-log-line"},
		{"anonymous: no arguments on the page", "/jobs/" + private, "", 200, "sign in", "s3cret"},
		{"bad token", "/api/v1/jobs", "ducc1.forged.token", 401, "not a valid dashboard token", ""},

		{"owner: arguments", "/api/v1/jobs/" + private, ownerTok, 200, "--token=s3cret", ""},
		{"owner: results", "/api/v1/jobs/" + private + "/results", ownerTok, 200, "item-1!", ""},
		{"owner: log", "/jobs/" + privateRun + "/log", ownerTok, 200, "private-log-line", ""},

		{"other: no arguments", "/api/v1/jobs/" + private, otherTok, 200, `"` + f.py + `"`, "s3cret"},
		{"other: no results", "/api/v1/jobs/" + private + "/results", otherTok, 403, "only " + owner, "item-1!"},
		{"other: no log", "/jobs/" + privateRun + "/log", otherTok, 403, "private to " + owner, "private-log-line"},

		{"group: results of shared work", "/api/v1/jobs/" + shared + "/results", otherTok, 200, "item-2!", ""},
		{"group: log of shared work", "/jobs/" + sharedRun + "/log", otherTok, 200, "shared-log-line", ""},
		{"group: still no arguments", "/api/v1/jobs/" + shared, otherTok, 200, `"share_with_group": "` + group + `"`, "s3cret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := webGet(t, base+tt.path, tt.token)
			if code != tt.code || (tt.has != "" && !strings.Contains(body, tt.has)) || (tt.hasNot != "" && strings.Contains(body, tt.hasNot)) {
				t.Errorf("GET %s: %d, want %d with %q and without %q:\n%s", tt.path, code, tt.code, tt.has, tt.hasNot, body)
			}
		})
	}

	// The same rule on the command line.
	if out, errs, code := f.ducc("results", "--as", other, shared); code != 0 || !strings.Contains(out, "item-1!") {
		t.Errorf("the group's results: exit %d %q %q", code, out, errs)
	}
	if out, errs, code := f.ducc("logs", "--as", other, sharedRun); code != 0 || !strings.Contains(out, "shared-log-line") {
		t.Errorf("the group's logs: exit %d %q %q", code, out, errs)
	}
	if out, errs, code := f.ducc("logs", "--as", other, privateRun); code != 2 || strings.Contains(out, "private-log-line") {
		t.Errorf("another user's logs: exit %d %q %q", code, out, errs)
	}
	if out, _, _ := f.ducc("show", "--as", other, shared); !strings.Contains(out, "group "+group) {
		t.Errorf("show of shared work:\n%s", out)
	}
	if _, errs, code := f.ducc("run", "--share-with-group", "no-such-group-e2e", "--", "true"); code != 2 || !strings.Contains(errs, "no such group") {
		t.Errorf("an unknown group: exit %d %q", code, errs)
	}
}

// TestDevConfigSaysWhatItIgnores: `ducc agent --dev --config FILE` uses
// the file's web section (here a private dashboard, which offers the
// token form) and names the keys it ignores instead of dropping them
// silently.
func TestDevConfigSaysWhatItIgnores(t *testing.T) {
	cfg := filepath.Join(scratchDir(t), "ducc.yaml")
	if err := os.WriteFile(cfg, []byte("node:\n  memory: 8G\njoin: [/ip4/10.0.0.1/tcp/42134]\nweb:\n  private: true\n  local_users: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "--config", cfg)
	code, body := webGet(t, c.webURL()+"/login", "")
	if code != 200 || !strings.Contains(body, `<textarea id="token"`) {
		t.Errorf("the web section of a dev config is not used: /login %d\n%s", code, body)
	}
	log := c.agentLog()
	for _, want := range []string{"dev mode: using the config file's scheduler, administrators, web, head.retention",
		"dev mode ignores these keys of the config file", `ignored="node.memory, join"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the agent's log lacks %q:\n%s", want, tail(log, 30))
		}
	}
}
