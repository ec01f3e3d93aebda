package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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

// scrape fetches /metrics and returns series → value (the full line
// before the value, labels included).
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: %d %s", resp.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
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

func TestWebMetrics(t *testing.T) {
	c := startCluster(t)
	base := c.webURL()

	resp, err := http.Get(base + "/healthz?head=1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	before := scrape(t, base)
	for _, s := range []string{"ducc_head_reachable", "ducc_is_head", "ducc_nodes_up", `ducc_nodes{state="Up"}`,
		"ducc_raft_applied_index", "ducc_agent_processes_started_total", "ducc_agent_oom_kills_total",
		"ducc_head_rm_cycle_seconds_count", "ducc_build_info{version=\"dev\"}", "go_goroutines"} {
		if _, ok := before[s]; !ok {
			t.Errorf("/metrics lacks %s", s)
		}
	}
	if before["ducc_head_reachable"] != 1 || before["ducc_is_head"] != 1 || before["ducc_nodes_up"] != 1 {
		t.Errorf("a one-node dev cluster: reachable %v is_head %v nodes_up %v",
			before["ducc_head_reachable"], before["ducc_is_head"], before["ducc_nodes_up"])
	}

	out, errs, code := c.ducc("run", "--detach", "--", "sleep", "30")
	if code != 0 {
		t.Fatalf("ducc run --detach: %d %s", code, errs)
	}
	id := strings.TrimSpace(out)
	c.waitRunning(id)
	after := scrape(t, base)

	moved := []struct {
		series string
		want   func(b, a float64) bool
	}{
		{`ducc_work{kind="managed",state="Running"}`, func(b, a float64) bool { return a >= 1 }},
		{`ducc_agent_managed_processes{state="Running"}`, func(b, a float64) bool { return a >= 1 }},
		{"ducc_raft_applied_index", func(b, a float64) bool { return a > b }},
		{"ducc_agent_processes_started_total", func(b, a float64) bool { return a > b }},
	}
	for _, m := range moved {
		if _, ok := after[m.series]; !ok {
			t.Errorf("after ducc run, /metrics lacks %s; state series: %v", m.series, grep(after, m.series[:strings.IndexAny(m.series+"{", "{")]))
			continue
		}
		if !m.want(before[m.series], after[m.series]) {
			t.Errorf("%s did not move: %v → %v (the agent's metric hooks, e.g. ProcStarted in the reconcile loop, must be wired)",
				m.series, before[m.series], after[m.series])
		}
	}
	c.ducc("cancel", id)
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
