package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const chromiumPath = "/usr/bin/chromium"

// webURL reads the dashboard URL the dev agent wrote to data_dir/web.url.
func (c *cluster) webURL() string {
	c.t.Helper()
	path := filepath.Join(c.dir, "data", "web.url")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return strings.TrimSuffix(strings.TrimSpace(string(b)), "/")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no dashboard URL in %s after 10s; agent log:\n%s", path, c.agentLog())
	return ""
}

// scrapeBody fetches /metrics as text.
func scrapeBody(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v %s", resp.StatusCode, err, b)
	}
	return string(b)
}

// parseMetrics returns series → value (the full line before the value,
// labels included) of a Prometheus text exposition.
func parseMetrics(body string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// scrape fetches /metrics and returns series → value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	return parseMetrics(scrapeBody(t, base))
}

// promtoolCheck runs `promtool check metrics` (Debian's prometheus
// package) on an exposition; the subtest skips where promtool is missing.
func promtoolCheck(t *testing.T, name, body string) {
	t.Run("promtool "+name, func(t *testing.T) {
		path, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool not installed (apt-get install prometheus)")
		}
		cmd := exec.Command(path, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})
}

// TestWebMetrics scrapes a dev cluster's /metrics, checks it with
// promtool, and sees the series move: a running process, a pending run, a
// job with a failing item that is retried, a registered service.
func TestWebMetrics(t *testing.T) {
	f := newJobFixture(t)
	c := f.cluster
	base := c.webURL()

	resp, err := http.Get(base + "/healthz?head=1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	body := scrapeBody(t, base)
	promtoolCheck(t, "idle", body)
	before := parseMetrics(body)
	for _, s := range []string{"ducc_head_reachable", "ducc_is_head", `ducc_nodes{state="Up"}`,
		"ducc_raft_applied_index", "ducc_raft_term", "ducc_agent_processes_started_total", "ducc_agent_oom_kills_total",
		"ducc_head_rm_cycle_seconds_count", "ducc_build_info{version=\"dev\"}", "go_goroutines",
		"process_resident_memory_bytes", "process_cpu_seconds_total",
		"ducc_node_memory_total_bytes", "ducc_node_memory_schedulable_bytes", "ducc_node_memory_used_bytes",
		`ducc_node_heartbeat_age_seconds{node="n1"}`, `ducc_node_shares{node="n1"}`, `ducc_node_shares_used{node="n1"}`,
		`ducc_class_demand_bytes{class="normal"}`, `ducc_class_fair_share_bytes{class="normal"}`, `ducc_class_allocated_bytes{class="normal"}`,
		"ducc_work_items_failed_total", "ducc_work_items_retried_total", "ducc_work_items_preempted_total",
		"ducc_raft_commit_seconds_count", "ducc_raft_commit_commands_count", `ducc_raft_leader_changes_total`,
		`ducc_raft_state{state="Leader"}`} {
		if _, ok := before[s]; !ok {
			t.Errorf("/metrics lacks %s", s)
		}
	}
	for _, gone := range []string{"ducc_nodes_up", "ducc_node_memory_bytes", "ducc_agent_process_"} {
		if strings.Contains(body, gone) {
			t.Errorf("/metrics still has %s", gone)
		}
	}
	if before["ducc_head_reachable"] != 1 || before["ducc_is_head"] != 1 || before[`ducc_nodes{state="Up"}`] != 1 ||
		before["ducc_raft_leader_changes_total"] < 1 || before[`ducc_node_shares{node="n1"}`] < 1 {
		t.Errorf("a one-node dev cluster: reachable %v is_head %v nodes up %v leader changes %v shares %v",
			before["ducc_head_reachable"], before["ducc_is_head"], before[`ducc_nodes{state="Up"}`],
			before["ducc_raft_leader_changes_total"], before[`ducc_node_shares{node="n1"}`])
	}

	// A run that holds 12 of the node's 16 GiB, and one more that waits.
	out, errs, code := c.ducc("run", "--detach", "--memory", "12G", "--", "sleep", "60")
	if code != 0 {
		t.Fatalf("ducc run --detach: %d %s", code, errs)
	}
	id := strings.TrimSpace(out)
	c.waitRunning(id)
	out, errs, code = c.ducc("run", "--detach", "--memory", "12G", "--", "sleep", "60")
	if code != 0 {
		t.Fatalf("second ducc run --detach: %d %s", code, errs)
	}
	waiting := strings.TrimSpace(out)
	svc := c.register(t, "--service-request-endpoint", "TCP:127.0.0.1:1", "--description", "never started", "--", "true")
	var after map[string]float64
	pending := `ducc_work_pending{class="fixed",reason="Resources"}`
	deadline := time.Now().Add(15 * time.Second)
	for {
		body = scrapeBody(t, base)
		after = parseMetrics(body)
		if after[pending] >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	seen := families(body)
	moved := []struct {
		series string
		want   func(b, a float64) bool
	}{
		{`ducc_work{kind="managed",state="Running"}`, func(b, a float64) bool { return a >= 1 }},
		{`ducc_work{kind="managed",state="WaitingForResources"}`, func(b, a float64) bool { return a >= 1 }},
		{pending, func(b, a float64) bool { return a >= 1 }},
		{`ducc_class_allocated_bytes{class="fixed"}`, func(b, a float64) bool { return a >= 12<<30 }},
		{`ducc_class_demand_bytes{class="fixed"}`, func(b, a float64) bool { return a >= 24<<30 }},
		{`ducc_node_shares_used{node="n1"}`, func(b, a float64) bool { return a > b }},
		{`ducc_service_instances{endpoint="TCP:127.0.0.1:1"}`, func(b, a float64) bool { return a == 0 }},
		{`ducc_agent_managed_processes{state="Running"}`, func(b, a float64) bool { return a >= 1 }},
		{"ducc_raft_applied_index", func(b, a float64) bool { return a > b }},
		{"ducc_raft_commit_seconds_count", func(b, a float64) bool { return a > b }},
		{"ducc_agent_processes_started_total", func(b, a float64) bool { return a > b }},
	}
	checkMoved := func(before, after map[string]float64, moved []struct {
		series string
		want   func(b, a float64) bool
	}) {
		t.Helper()
		for _, m := range moved {
			if _, ok := after[m.series]; !ok {
				t.Errorf("/metrics lacks %s; series of that name: %v", m.series, grep(after, m.series[:strings.IndexAny(m.series+"{", "{")]))
				continue
			}
			if !m.want(before[m.series], after[m.series]) {
				t.Errorf("%s did not move as it should: %v → %v", m.series, before[m.series], after[m.series])
			}
		}
	}
	checkMoved(before, after, moved)
	if n := len(grep(after, "ducc_services{")); n == 0 {
		t.Errorf("no ducc_services series with a registered service")
	}
	c.mustDucc(t, "cancel", waiting)
	c.mustDucc(t, "cancel", id)
	c.mustDucc(t, "services", "unregister", svc)

	// A job whose item "bad" fails, is retried once, and fails for good.
	items := seqItems(5)
	items[2] = "bad"
	job := f.submit(t, f.items(t, "items", items), 0, 0, "--max-item-retries", "1")
	if w := f.waitEnd(t, job, 60*time.Second); w.Completion != "Error" {
		t.Fatalf("the job ended %s, want Error: %+v", w.Completion, w.Job)
	}
	c.waitEnd(t, id, 30*time.Second)
	body = scrapeBody(t, base)
	promtoolCheck(t, "after work", body)
	end := parseMetrics(body)
	for f := range families(body) {
		seen[f] = true
	}
	checkDocumented(t, seen)
	checkMoved(before, end, []struct {
		series string
		want   func(b, a float64) bool
	}{
		{"ducc_work_items_failed_total", func(b, a float64) bool { return a == b+1 }},
		{"ducc_work_items_retried_total", func(b, a float64) bool { return a == b+1 }},
		{`ducc_work_completed_total{kind="job",reason="Error"}`, func(b, a float64) bool { return a == b+1 }},
		{`ducc_work_completed_total{kind="managed",reason="CanceledByUser"}`, func(b, a float64) bool { return a == b+2 }},
		{"ducc_head_work_items_done_total", func(b, a float64) bool { return a >= b+5 }},
	})
	// Everything ended: no work is counted as active any more.
	if active := grep(scrape(t, base), "ducc_work{"); len(active) > 0 {
		t.Errorf("ended work still counted: %v", active)
	}
}

// families are the metric families an exposition declares (# TYPE).
func families(body string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = true
		}
	}
	return out
}

// checkDocumented checks that every ducc series a real agent exported is
// in the table of docs/operations.md, and that every series the shipped
// Grafana dashboard queries was exported.
func checkDocumented(t *testing.T, seen map[string]bool) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for f := range seen {
		if strings.HasPrefix(f, "ducc_") && !strings.Contains(string(doc), "| `"+f+"` |") {
			t.Errorf("/metrics exports %s, which the table in docs/operations.md does not list", f)
		}
	}
	dash, err := os.ReadFile(filepath.Join("..", "packaging", "grafana", "ducc-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`\b(ducc|process)_[a-z0-9_]+`).FindAllString(string(dash), -1) {
		base := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && seen[b] {
				base = b
			}
		}
		if !seen[base] {
			t.Errorf("the Grafana dashboard queries %s, which /metrics did not export", name)
		}
	}
}

func grep(m map[string]float64, prefix string) []string {
	var out []string
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return out
}

// TestWebDashboardBrowser opens the dashboard in Debian's chromium with a
// running managed reservation, checks its row, opens its details and
// saves a screenshot.
func TestWebDashboardBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("browser test skipped: %s not installed (apt-get install chromium)", chromiumPath)
	}
	c := startCluster(t)
	base := c.webURL()
	out, errs, code := c.ducc("run", "--detach", "--", "sleep", "60")
	if code != 0 {
		t.Fatalf("ducc run --detach: %d %s", code, errs)
	}
	id := strings.TrimSpace(out)
	w := c.waitRunning(id)
	t.Cleanup(func() { c.ducc("cancel", id) })

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancelT := context.WithTimeout(ctx, 40*time.Second)
	defer cancelT()

	row := "#work-" + id
	var rowText, state, liveBadge, procText string
	var shot []byte
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/jobs"),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Text(row, &rowText, chromedp.ByQuery),
		chromedp.AttributeValue(row, "data-state", &state, nil, chromedp.ByQuery),
		// live.js marks the page live after its first poll of the JSON API.
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Text("#live", &liveBadge, chromedp.ByQuery),
		chromedp.Click(row+` a[href="/jobs/`+id+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#procs", chromedp.ByQuery),
		chromedp.Text("#procs", &procText, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG,
	)
	if err != nil {
		t.Fatalf("browser: %v\nagent log:\n%s", err, c.agentLog())
	}
	// The dashboard cannot tell who is looking: the executable, not its
	// arguments (docs/decisions.md, "Who sees what").
	if state != "Running" || !strings.Contains(rowText, "sleep …") || strings.Contains(rowText, "sleep 60") || !strings.Contains(rowText, "managed") {
		t.Errorf("job row: state %q text %q", state, rowText)
	}
	if liveBadge != "live" {
		t.Errorf("live badge %q", liveBadge)
	}
	if pid := strconv.Itoa(w.Procs[0].PID); !strings.Contains(procText, pid) || !strings.Contains(procText, "n1") {
		t.Errorf("details lack pid %s on n1: %q", pid, procText)
	}
	dir := os.Getenv("DUCC_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dashboard-job-"+id+".png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the job details: %s", path)
}
