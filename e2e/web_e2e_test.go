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
func scrapeBody(t testing.TB, base string) string {
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
func scrape(t testing.TB, base string) map[string]float64 {
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

// TestWebDashboardBrowser opens every page of a plain dev cluster's
// dashboard (`ducc agent --dev`, no config) in Debian's chromium at 800
// px wide, with a running managed reservation, a running job, a job with
// a failed item, a service and a pending reservation. The browser runs
// on the node as the user who submitted the work (root), and the dev
// dashboard knows it by the owner of its loopback connection
// (web.local_users): the owner's job page lists the failed item with its
// error and time, its process's log opens, and no page says to sign in.
// It checks the overview page, the titles by kind, the charts' y axes,
// that no page scrolls sideways and no state pill breaks at 800 px, and
// saves a screenshot of every page under $DUCC_ARTIFACTS/dashboard (a
// temporary directory when unset; docs/operations.md).
func TestWebDashboardBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("browser test skipped: %s not installed (apt-get install chromium)", chromiumPath)
	}
	f := newJobFixture(t)
	base := f.webURL()
	shots := artifactDir(t, "dashboard")

	// A job with a failed item, ended.
	items := seqItems(12)
	items[5] = "bad"
	failedJob := f.submit(t, f.items(t, "failing", items), 0, 0, "--max-item-retries", "0")
	if w := f.waitEnd(t, failedJob, 60*time.Second); w.Job == nil || w.Job.Failed != 1 {
		t.Fatalf("job %s ended without one failed item: %+v", failedJob, w.Job)
	}
	// A service, a managed reservation and a job that keep running.
	port := freePorts(t, 1)
	svc := f.register(t, "--service-request-endpoint", fmt.Sprintf("HTTP:127.0.0.1:%d/", port), "--process-memory-size", "1G",
		"--service-ping-interval", "500ms", "--", f.py, examplePath(t, "http_service.py"), strconv.Itoa(port))
	f.mustDucc(t, "services", "start", svc)
	t.Cleanup(func() { f.ducc("services", "stop", svc) })
	f.waitService(svc, 30*time.Second, "available", available)
	out, errs, code := f.ducc("run", "--detach", "--log-dir", filepath.Join(f.dir, "logs"), "--", "sh", "-c", "echo hello-from-the-log; exec sleep 300")
	if code != 0 {
		t.Fatalf("ducc run --detach: %d %s", code, errs)
	}
	managed := strings.TrimSpace(out)
	w := f.waitRunning(managed)
	t.Cleanup(func() { f.ducc("cancel", managed) })
	job := f.submit(t, f.items(t, "long", seqItems(3000)), 0, 0.5)
	t.Cleanup(func() { f.ducc("cancel", job) })
	f.waitRunning(job)
	// A reservation of the whole node: it waits, as the service and the
	// managed reservation may not be evicted.
	out, errs, code = f.ducc("reserve", "--memory", "16G")
	if code != 0 {
		t.Fatalf("ducc reserve: exit %d %q %q", code, out, errs)
	}
	res := strings.TrimSuffix(strings.Fields(out)[1], ":")
	t.Cleanup(func() { f.ducc("cancel", res) })

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		// Overlay scrollbars: the page is 800 px wide, tall or not, and
		// the full-page screenshots show all of it.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(800, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelT()
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("browser, %s: %v\nagent log:\n%s", what, err, tail(f.agentLog(), 40))
		}
	}
	run("viewport", chromedp.EmulateViewport(800, 1000))

	// signIn is text that would tell the page's user to sign in, or that
	// their own work is private to them: none of it on a dev dashboard.
	signIn := regexp.MustCompile(`(?i)sign in|web-token|private to its owner|are private`)
	// visit opens a page, checks that it does not scroll sideways at 800
	// px, that no state pill breaks over lines and that nothing asks to
	// sign in, and saves its screenshot.
	n := 0
	visit := func(name, path, title string, actions ...chromedp.Action) {
		t.Helper()
		var width, client int
		var wide, broken []string
		var shot []byte
		var text, h1 string
		all := append([]chromedp.Action{chromedp.Navigate(base + path), chromedp.WaitVisible("#content", chromedp.ByQuery)}, actions...)
		all = append(all, chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
			chromedp.Evaluate(`document.documentElement.clientWidth`, &client),
			// A table may scroll inside its box; none should have to.
			chromedp.Evaluate(`Array.from(document.querySelectorAll(".tablewrap")).filter(e => e.scrollWidth > e.clientWidth).map(e => e.firstElementChild.id)`, &wide),
			// A pill on two lines has two boxes.
			chromedp.Evaluate(`Array.from(document.querySelectorAll(".state")).filter(e => e.getClientRects().length > 1).map(e => e.textContent)`, &broken),
			chromedp.Text("body", &text, chromedp.ByQuery),
			chromedp.Text("h1", &h1, chromedp.ByQuery),
			chromedp.FullScreenshot(&shot, 100))
		run(path, all...)
		if width > 800 || width > client {
			t.Errorf("%s is %d px wide in an 800 px window (%d px inside): it scrolls sideways", path, width, client)
		}
		if len(wide) > 0 {
			t.Errorf("%s: tables %v are wider than the page at 800 px", path, wide)
		}
		if len(broken) > 0 {
			t.Errorf("%s: state pills %q break over two lines at 800 px", path, broken)
		}
		if m := signIn.FindString(text); m != "" {
			t.Errorf("%s: the dev dashboard's owner is told %q:\n%s", path, m, text)
		}
		if title != "" && h1 != title {
			t.Errorf("%s is titled %q, want %q", path, h1, title)
		}
		n++
		p := filepath.Join(shots, fmt.Sprintf("%02d-%s.png", n, name))
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	count := func(sel string, n *int) chromedp.Action {
		return chromedp.Evaluate(`document.querySelectorAll(`+strconv.Quote(sel)+`).length`, n)
	}
	// points is the most points of the chart's lines (data-n).
	points := func(chart string) string {
		return `Math.max(0, ...Array.from(document.querySelectorAll("#` + chart + ` polyline")).map(e => Number(e.dataset.n)))`
	}
	// textOf is the text shown in the element sel, "" when there is none.
	textOf := func(sel string, s *string) chromedp.Action {
		return chromedp.Evaluate(`(document.querySelector(`+strconv.Quote(sel)+`) || {}).innerText || ""`, s)
	}
	// yAxis is the labels of a chart's y axis, top to bottom.
	yAxis := func(chart string, labels *[]string) chromedp.Action {
		return chromedp.Evaluate(`Array.from(document.querySelectorAll("#`+chart+` .yaxis span")).map(e => e.textContent)`, labels)
	}

	// The overview: the cluster at a glance, linked to the lists.
	var nodesText, memText, workText, pendingText, failText, svcText string
	visit("overview", "/", "Overview",
		chromedp.WaitVisible("#failed-"+failedJob, chromedp.ByQuery),
		textOf("#ov-nodes", &nodesText), textOf("#ov-memory", &memText), textOf("#ov-work", &workText),
		textOf("#ov-pending", &pendingText), textOf("#ov-failures", &failText), textOf("#ov-services", &svcText))
	for what, c := range map[string]struct{ text, want string }{
		"nodes": {nodesText, "1 of 1 up"}, "memory": {memText, "Free to schedule"}, "work": {workText, "Running"},
		"pending": {pendingText, res}, "failures": {failText, "1 of 12 items failed"}, "services": {svcText, "Available"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("overview %s: %q lacks %q", what, c.text, c.want)
		}
	}

	// Who the dashboard takes the browser for, and why.
	var who, signedIn string
	visit("login", "/login", "Who you are", chromedp.WaitVisible("#signed-in", chromedp.ByQuery),
		chromedp.Text("#who", &who, chromedp.ByQuery), chromedp.Text("#signed-in", &signedIn, chromedp.ByQuery))
	if who != "root" || !strings.Contains(signedIn, "You are root") || !strings.Contains(signedIn, "owns its connection") {
		t.Errorf("the dev dashboard takes the browser for %q: %q", who, signedIn)
	}

	// The jobs list shows the kind of work at 800 px, the arguments of
	// the owner's own commands where the column shows.
	row := "#work-" + managed
	var rowText, state, liveBadge, kind string
	visit("jobs", "/jobs", "Jobs",
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Text(row, &rowText, chromedp.ByQuery), // the text shown
		chromedp.Text(row+" td.kind", &kind, chromedp.ByQuery),
		chromedp.AttributeValue(row, "data-state", &state, nil, chromedp.ByQuery),
		// live.js marks the page live after its first poll of the JSON API.
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Text("#live", &liveBadge, chromedp.ByQuery))
	if state != "Running" || kind != "managed" || !strings.Contains(rowText, "managed") {
		t.Errorf("job row at 800 px: state %q, kind %q, shown %q", state, kind, rowText)
	}
	if liveBadge != "live" {
		t.Errorf("live badge %q", liveBadge)
	}
	visit("jobs-all", "/jobs?all=1", "Jobs", chromedp.WaitVisible("#work-"+failedJob, chromedp.ByQuery))

	// The managed reservation: its pid, and its log in the browser.
	var procText, logHref, logText string
	var ok bool
	visit("managed", "/jobs/"+managed, "Managed reservation "+managed, chromedp.WaitVisible("#procs", chromedp.ByQuery),
		chromedp.TextContent("#procs", &procText, chromedp.ByQuery), // the PID column hides at 800 px
		chromedp.AttributeValue(`#procs a[href^="/jobs/`+managed+`/log"]`, "href", &logHref, &ok, chromedp.ByQuery))
	if pid := strconv.Itoa(w.Procs[0].PID); !strings.Contains(procText, pid) || !strings.Contains(procText, "n1") {
		t.Errorf("details lack pid %s on n1: %q", pid, procText)
	}
	if !ok {
		t.Fatalf("managed reservation %s: no link to its log", managed)
	}
	run("managed log", chromedp.Navigate(base+logHref),
		chromedp.Poll(`document.body.innerText.includes("hello-from-the-log")`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Text("body", &logText, chromedp.ByQuery))
	if !strings.Contains(logText, "hello-from-the-log") {
		t.Errorf("the log of %s in the browser: %q", managed, logText)
	}

	// The running job: progress and items/s over time with y axes. The
	// head samples every few seconds and live.js swaps the page in as it
	// changes.
	var progressN, rateN, logLinks int
	var progressY, rateY []string
	visit("job-running", "/jobs/"+job, "Job "+job,
		chromedp.Poll(points("chart-progress")+` >= 3`, nil, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Evaluate(points("chart-progress"), &progressN),
		chromedp.Evaluate(points("chart-rate"), &rateN),
		yAxis("chart-progress", &progressY), yAxis("chart-rate", &rateY),
		count(`#procs a[href^="/jobs/`+job+`/log"]`, &logLinks))
	if progressN < 3 || rateN < 2 {
		t.Errorf("job %s charts: %d progress points, %d rate points; want at least 3 and 2", job, progressN, rateN)
	}
	if len(progressY) != 3 || !strings.HasSuffix(progressY[0], " items") || progressY[2] != "0" {
		t.Errorf("job %s progress chart's y axis: %q, want a top in items down to 0", job, progressY)
	}
	if len(rateY) != 3 || !strings.HasSuffix(rateY[0], "/s") {
		t.Errorf("job %s rate chart's y axis: %q, want items per second", job, rateY)
	}
	if logLinks == 0 {
		t.Errorf("job %s: no link to a process log", job)
	}

	// The owner's failed job: the failed item with its error, its time
	// and its process, whose log opens; alone when asked.
	var failedState, itemRow, itemTime, procHref, failedOnly string
	var failedRows int
	visit("job-failed-item", "/jobs/"+failedJob, "Job "+failedJob,
		chromedp.WaitVisible("#items-table", chromedp.ByQuery),
		chromedp.AttributeValue("#item-5", "data-state", &failedState, nil, chromedp.ByQuery),
		chromedp.Text("#item-5", &itemRow, chromedp.ByQuery),
		chromedp.Text("#item-5 td:nth-child(3)", &itemTime, chromedp.ByQuery),
		chromedp.AttributeValue("#item-5 td:nth-child(5) a", "href", &procHref, &ok, chromedp.ByQuery))
	if failedState != "Failed" || !strings.Contains(itemRow, "bad item") || !strings.Contains(itemRow, "bad") {
		t.Errorf("work-item table of job %s: item 5 %q: %q", failedJob, failedState, itemRow)
	}
	if !regexp.MustCompile(`^\d+(\.\d)? (ms|s)$`).MatchString(itemTime) {
		t.Errorf("item 5 of job %s: time %q, want e.g. 12 ms", failedJob, itemTime)
	}
	if !ok || !strings.HasPrefix(procHref, "/jobs/"+failedJob+"/log?process=") {
		t.Errorf("item 5 of job %s: process link %q, want its log", failedJob, procHref)
	} else {
		var status int
		var ctype string
		run("failed item's log", chromedp.Navigate(base+procHref),
			chromedp.Evaluate(`document.contentType`, &ctype),
			chromedp.Evaluate(`performance.getEntriesByType("navigation")[0].responseStatus`, &status),
			chromedp.Text("body", &logText, chromedp.ByQuery))
		if status != 200 || ctype != "text/plain" || signIn.MatchString(logText) {
			t.Errorf("the log of job %s's failed item: %d %s %q", failedJob, status, ctype, logText)
		}
	}
	visit("job-failed-only", "/jobs/"+failedJob+"?items=failed", "Job "+failedJob,
		chromedp.WaitVisible("#items-table", chromedp.ByQuery),
		count("#items-table tbody tr", &failedRows),
		chromedp.Text("#items-table", &failedOnly, chromedp.ByQuery))
	if failedRows != 1 || !strings.Contains(failedOnly, "bad item") {
		t.Errorf("failed items of job %s: %d rows %q, want the one failed item", failedJob, failedRows, failedOnly)
	}

	// The other pages, their links and charts.
	var svcLinks, resLinks, nodeLinks, classN, sharesN, bars int
	var peers string
	var sharesY []string
	visit("services", "/services", "Services", chromedp.WaitVisible("#svc-"+svc, chromedp.ByQuery),
		count(`#svc-`+svc+` a[href="/jobs/`+svc+`"]`, &svcLinks))
	visit("service", "/jobs/"+svc, "Service "+svc, chromedp.WaitVisible("#procs", chromedp.ByQuery))
	visit("reservations", "/reservations", "Reservations", chromedp.WaitVisible("#res-"+res, chromedp.ByQuery),
		count(`#res-`+res+` a[href="/jobs/`+res+`"]`, &resLinks))
	visit("reservation", "/jobs/"+res, "Reservation "+res, chromedp.WaitVisible("#work-facts", chromedp.ByQuery))
	visit("machines", "/machines", "Machines", chromedp.WaitVisible("#node-n1", chromedp.ByQuery),
		count(`#node-n1 a[href="/machines/n1"]`, &nodeLinks),
		count(`#chart-nodes rect.bar-used`, &bars),
		chromedp.Poll(points("chart-shares")+` >= 1`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(points("chart-shares"), &sharesN), yAxis("chart-shares", &sharesY))
	visit("node", "/machines/n1", "Node n1", chromedp.WaitVisible("#node-procs", chromedp.ByQuery))
	visit("classes", "/classes", "Classes", chromedp.WaitVisible("#classes", chromedp.ByQuery),
		chromedp.Poll(points("chart-classes")+` >= 1`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(points("chart-classes"), &classN))
	visit("cluster", "/cluster", "Cluster", chromedp.WaitVisible("#peers", chromedp.ByQuery), chromedp.Text("#peers", &peers, chromedp.ByQuery))
	if svcLinks == 0 || resLinks == 0 || nodeLinks == 0 {
		t.Errorf("links: service %d, reservation %d, node %d; want each page linked", svcLinks, resLinks, nodeLinks)
	}
	if bars == 0 || sharesN == 0 || classN == 0 {
		t.Errorf("charts: %d node bars, %d shares points, %d class points", bars, sharesN, classN)
	}
	if len(sharesY) != 3 || !strings.HasSuffix(sharesY[0], " shares") {
		t.Errorf("the shares chart's y axis: %q", sharesY)
	}
	if !strings.Contains(peers, "n1") || !strings.Contains(peers, "Leader") || !strings.Contains(peers, "voter") {
		t.Errorf("Raft peers by node name: %q", peers)
	}
	t.Logf("%d screenshots at 800 px in %s", n, shots)
}

// artifactDir is where a test keeps files for people to look at:
// $DUCC_ARTIFACTS/name, or a temporary directory when that is unset.
func artifactDir(t *testing.T, name string) string {
	t.Helper()
	root := os.Getenv("DUCC_ARTIFACTS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
