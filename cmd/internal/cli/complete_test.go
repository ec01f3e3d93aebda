package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/cmd/internal/manpage"
	"github.com/ducc-project/ducc/wire"
)

// listAgent serves the list methods completion asks for on a Unix socket.
func listAgent(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "ducc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]any{
		"/v1/" + wire.MethodJobs: wire.WorkList{Work: []wire.WorkInfo{
			{ID: 7, Kind: wire.WorkJob, User: "ann", State: "Running"},
			{ID: 12, Kind: wire.WorkJob, User: "bob", State: "Completed", Ended: true, Completion: "EndOfJob"},
		}},
		"/v1/" + wire.MethodClasses: wire.ClassList{Classes: []wire.ClassInfo{{Name: "normal", Policy: "FAIR_SHARE", Pool: "default"}, {Name: "fixed", Policy: "FIXED_SHARE", Pool: "default"}}},
		"/v1/" + wire.MethodNodes:   wire.NodeList{Nodes: []wire.NodeInfo{{Name: "n1", State: "Up"}, {Name: "n2", State: "Down"}}},
		"/v1/" + wire.MethodServiceQuery: wire.ServiceList{Services: []wire.ServiceInfo{
			{ID: 3, Endpoint: "UIMA-AS:q1", State: "Available"},
		}},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(a)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return sock
}

// completeLine runs `ducc __complete ARGS...` as the shell scripts do and
// returns the candidates (without descriptions) and stderr.
func completeLine(t *testing.T, args ...string) (values []string, stderr string) {
	t.Helper()
	root := newRoot("dev", nil)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(append([]string{"__complete"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(line, ":") || line == "" {
			continue // the directive
		}
		v, _, _ := strings.Cut(line, "\t")
		values = append(values, v)
	}
	return values, errb.String()
}

func TestCompletion(t *testing.T) {
	t.Setenv("DUCC_SOCKET", listAgent(t))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"show", ""}, "7 12"},
		{[]string{"results", "1"}, "12"},
		{[]string{"show", "7", ""}, ""}, // one id only
		{[]string{"cancel", "7", ""}, "12"},
		{[]string{"admin", "vary-off", ""}, "n1 n2"},
		{[]string{"services", "start", ""}, "3 UIMA-AS:q1"},
		{[]string{"run", "--class", ""}, "normal fixed"},
		{[]string{"submit", "job.yaml", "--scheduling-class", "n"}, "normal"},
		{[]string{"submit", "--service-dependency", ""}, "UIMA-AS:q1"},
	}
	for _, tc := range tests {
		got, stderr := completeLine(t, tc.args...)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("complete %q = %q, want %q (stderr %q)", tc.args, got, tc.want, stderr)
		}
	}
}

// Without an agent, completion offers nothing and says nothing: the
// shell must not print errors on TAB.
func TestCompletionWithoutAgent(t *testing.T) {
	t.Setenv("DUCC_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
	for _, args := range [][]string{{"show", ""}, {"run", "--class", ""}, {"services", "stop", ""}} {
		got, stderr := completeLine(t, args...)
		if len(got) != 0 || strings.Contains(stderr, "agent") {
			t.Errorf("complete %q without agent = %q, stderr %q; want nothing", args, got, stderr)
		}
	}
}

func TestGenMan(t *testing.T) {
	dir := t.TempDir()
	n, err := genMan(newRoot("dev", nil), dir, manpage.Render)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ducc.1.gz", "ducc-submit.1.gz", "ducc-services-start.1.gz", "ducc_submit.1.gz", "duccd.1.gz"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("gen-man did not write %s: %v", f, err)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1.gz"))
	if len(pages) != n || n < 30 {
		t.Errorf("gen-man wrote %d pages (said %d)", len(pages), n)
	}
	hidden, _ := filepath.Glob(filepath.Join(dir, "ducc-shim*"))
	if len(hidden) != 0 {
		t.Errorf("hidden commands got pages: %v", hidden)
	}
}
