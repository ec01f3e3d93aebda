package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// retentionConfig purges finished work, and a job's results, 2 s after it
// ended; the records stay an hour.
const retentionConfig = "head: {retention: {work: 2s, results: 2s, history: 1h}}\n"

// TestRetentionAndHistory: finished work leaves `ducc jobs`, its
// accounting record stays in `ducc history`, `ducc results` says the
// results were purged, and all of it survives a restart of the agent.
func TestRetentionAndHistory(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ducc.yaml")
	writeFile(t, cfg, retentionConfig)
	c := startCluster(t, "--config", cfg)

	out := c.mustDucc(t, "run", "--detach", "--", "sh", "-c", "exit 3")
	run := strings.TrimSpace(out)
	if _, _, code := c.ducc("wait", run); code != 3 {
		t.Fatalf("wait %s: exit %d, want 3", run, code)
	}
	out = c.mustDucc(t, "submit", "--worker-protocol", "exec", "--input-file", writeItems(t, c.dir, "3"),
		"--process-memory-size", "1G", "--", "sh", "-c", "echo {}")
	job := strings.Fields(out)[1]
	if end := waitEnded(t, c, job, 60*time.Second); end.Completion != "EndOfJob" {
		t.Fatalf("job: %+v", end)
	}

	// The finished work leaves the live state.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var list wire.WorkList
		out := c.mustDucc(t, "jobs", "--all", "--json")
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("jobs --json: %v: %s", err, out)
		}
		if len(list.Work) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("finished work still listed after 60 s: %+v", list.Work)
		}
		time.Sleep(200 * time.Millisecond)
	}

	check := func(when string) {
		t.Helper()
		if out := c.mustDucc(t, "show", run); !strings.Contains(out, "Purged:") || !strings.Contains(out, "ProgramExit") {
			t.Errorf("%s: show of purged work:\n%s", when, out)
		}
		_, errs, code := c.ducc("results", job)
		if code != 2 || !strings.Contains(errs, "were purged at") || !strings.Contains(errs, "head.retention.results") {
			t.Errorf("%s: results of a purged job: exit %d: %s", when, code, errs)
		}
		var h wire.HistoryReply
		out := c.mustDucc(t, "history", "--json")
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("%s: history --json: %v: %s", when, err, out)
		}
		byID := map[string]wire.HistoryRecord{}
		for _, r := range h.Records {
			byID[strconv.FormatUint(r.ID, 10)] = r
		}
		r, j := byID[run], byID[job]
		if r.Completion != "ProgramExit" || r.ExitCode != 3 || r.MaxRSS <= 0 || r.Memory <= 0 || r.MemoryLimit <= 0 ||
			!slices.Equal(r.Nodes, []string{"n1"}) || r.WorkPurgedAt == 0 || r.Kind != wire.WorkManaged {
			t.Errorf("%s: record of the run: %+v", when, r)
		}
		if j.Completion != "EndOfJob" || j.Items != 3 || j.Done != 3 || j.ItemsPurgedAt == 0 || j.Kind != wire.WorkJob || j.Procs == 0 {
			t.Errorf("%s: record of the job: %+v", when, j)
		}
		table := c.mustDucc(t, "history", "--since", "1h")
		t.Logf("%s: ducc history:\n%s", when, table)
		for _, want := range []string{"ID", "MAXRSS", "Exit(3)", "EndOfJob", "3/3"} {
			if !strings.Contains(table, want) {
				t.Errorf("%s: history table lacks %q:\n%s", when, want, table)
			}
		}
		if !tableHasID(table, run) || !tableHasID(table, job) {
			t.Errorf("%s: history table lacks a row for %s or %s:\n%s", when, run, job, table)
		}
		if done := c.mustDucc(t, "history", "--state", "done"); !tableHasID(done, job) || tableHasID(done, run) {
			t.Errorf("%s: history --state done:\n%s", when, done)
		}
	}
	check("after the purge")

	if isRoot() {
		ensureUser(t, "ducc-e2e")
		// Ordinary users see their own records only.
		if out := c.mustDucc(t, "history", "--as", "ducc-e2e"); tableHasID(out, run) {
			t.Errorf("another user sees root's records:\n%s", out)
		}
		if _, errs, code := c.ducc("history", "--as", "ducc-e2e", "--user", "root"); code != 2 || !strings.Contains(errs, "only root or an administrator") {
			t.Errorf("history --user root as a user: exit %d: %s", code, errs)
		}
	}

	// The history is durable: the restarted agent replays it from Raft.
	c.stop()
	c.start()
	check("after a restart")
}

// tableHasID reports whether a table printed by ducc has a row whose first
// column is id (a plain substring test would also match a time such as
// 01:40:41 for id 1).
func tableHasID(table, id string) bool {
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == id {
			return true
		}
	}
	return false
}

// netHistory returns the accounting records node via lists, by id.
func netHistory(t *testing.T, via *nsNode) map[string]wire.HistoryRecord {
	t.Helper()
	out, errs, code := via.ducc("history", "--json")
	if code != 0 {
		t.Fatalf("history via %s: exit %d: %s", via.name, code, errs)
	}
	var h wire.HistoryReply
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("history --json: %v: %s", err, out)
	}
	byID := map[string]wire.HistoryRecord{}
	for _, r := range h.Records {
		byID[strconv.FormatUint(r.ID, 10)] = r
	}
	return byID
}

// waitPurged waits until work id has left the live state, as node via sees
// it.
func waitPurged(t *testing.T, via *nsNode, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for netShow(t, via, id).PurgedAt == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("work %s not purged within 60 s", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMultiNodeRetention: purges go through Raft, so the history answers
// after a failover, and the new head purges in its turn.
func TestMultiNodeRetention(t *testing.T) {
	c := startNetClusterHead(t, "250ms", "3s", "retention: {work: 2s, results: 2s, history: 1h}", "",
		netNodeSpec{"h1", true}, netNodeSpec{"h2", true}, netNodeSpec{"h3", true}, netNodeSpec{"w1", false})
	w1 := c.nodes["w1"]
	run := func() string {
		t.Helper()
		out, errs, code := w1.ducc("run", "--detach", "--machine", "w1", "--memory", "1G", "--", "sh", "-c", "exit 3")
		if code != 0 {
			t.Fatalf("run: exit %d: %s %s", code, out, errs)
		}
		id := strings.TrimSpace(out)
		if _, errs, code := w1.ducc("wait", id); code != 3 {
			t.Fatalf("wait %s: exit %d, want 3: %s", id, code, errs)
		}
		return id
	}
	first := run()
	waitPurged(t, w1, first)
	if r, ok := netHistory(t, w1)[first]; !ok || r.ExitCode != 3 || r.WorkPurgedAt == 0 {
		t.Fatalf("record of %s before the failover: %+v", first, r)
	}

	old := c.headNode(w1)
	old.kill9()
	t0 := time.Now()
	for {
		if st, ok := w1.status(); ok && st.Head != "" && st.Head != old.name {
			break
		}
		if time.Since(t0) > hangGuard {
			t.Fatalf("no new head within %v", hangGuard)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The new head refuses a submission until a node's full heartbeat
	// told it the node's memory: wait for all three.
	c.waitUp(3, hangGuard)
	if r, ok := netHistory(t, w1)[first]; !ok || r.ExitCode != 3 || r.WorkPurgedAt == 0 || !slices.Equal(r.Nodes, []string{"w1"}) {
		t.Errorf("record of %s after the failover: %+v", first, r)
	}
	if w := netShow(t, w1, first); w.PurgedAt == 0 || w.ExitCode != 3 {
		t.Errorf("show of %s after the failover: %+v", first, w)
	}
	// The new head purges too.
	second := run()
	waitPurged(t, w1, second)
	h := netHistory(t, w1)
	if _, ok := h[second]; !ok {
		t.Errorf("no record of %s purged by the new head: %+v", second, h)
	}
	// The old head comes back and catches up from the others.
	old.start()
	c.waitUp(4, 60*time.Second)
	if h := netHistory(t, old); len(h) != 2 {
		t.Errorf("history via the returned %s: %+v", old.name, h)
	}
}
