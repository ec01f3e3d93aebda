package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

func TestPages(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	tests := []struct {
		name, path string
		code       int
		want, not  []string
	}{
		{"jobs active", "/jobs", 200,
			[]string{`id="work-2"`, `href="/jobs/2"`, "alice", "Running", "4 GiB", "1m30s", "<code>sleep</code> <small>…</small>",
				"no node in pool default has 64 GiB", `data-api="/api/v1/jobs"`, `class="active" aria-current="page">Jobs`},
			[]string{`id="work-1"`, "sleep 60"}},
		{"jobs with items", "/jobs?user=carol", 200, []string{`id="work-5"`, "Done / Total", `<progress max="100" value="40"></progress><br>40 / 100`, `href="/classes#class-normal"`, "normal"}, nil},
		{"jobs all", "/jobs?all=1", 200, []string{`id="work-1"`, "ProgramExit", "<code>sh</code>", `data-api="/api/v1/jobs?all=1"`}, []string{"exit 3"}},
		{"jobs of a user", "/jobs?user=bob", 200, []string{`id="work-3"`, "user bob"}, []string{`id="work-2"`}},
		{"job details", "/jobs/2", 200,
			[]string{"<h1>Managed reservation 2</h1>", "<title>Managed reservation 2 · ducc</title>", `id="proc-2.1"`, "4242", "12 MiB", "4 GiB", "1.5 s", "ducc logs 2 --process 2.1",
				"/home/alice/ducc/logs/2/2-POP-n1-4242.log", `data-api="/api/v1/jobs/2"`, "n1"}, nil},
		{"job of work items", "/jobs/5", 200,
			[]string{"<h1>Job 5</h1>", "40 / 100 done, 2 errors", "mean 800 ms · min 120 ms · max 2.5 s · stddev 90 ms · 3.5 items/s",
				"8 dispatched · 1 retried", "2 live × 4 pipelines · stream protocol · mean init 45.0 s", "Items done", "<td class=\"num\">25</td>"}, nil},
		{"job pending", "/jobs/3", 200, []string{"No process yet.", "no node in pool default has 64 GiB"}, nil},
		{"job unknown", "/jobs/99", 404, []string{"no work with id 99"}, nil},
		{"job bad id", "/jobs/abc", 400, []string{"bad work id &#34;abc&#34;"}, nil},
		{"machines", "/machines", 200,
			[]string{`id="node-n1"`, `id="node-n2"`, "32 GiB", "16 GiB", "5 GiB", "4 / 16", "0.25", "1s ago", "5m00s ago", "Down"}, nil},
		{"cluster", "/cluster", 200, []string{"Leader", `id="head"><a href="/machines/n1">n1</a>`, "12D3KooWHead", "(head)", "1 of 2", "2 / 57", "v1.2.3", "n1 · v-test",
			`<a href="/machines/n2">n2</a>`, "Unreachable", "voter"}, nil},
		{"node", "/machines/n1", 200, []string{"Node n1", `id="proc-2.1"`, `<a href="/jobs/2">2</a>`, `id="proc-5.1"`, `id="proc-7.1"`, "4 / 16"}, nil},
		{"node unknown", "/machines/nope", 404, []string{"no node &#34;nope&#34;"}, nil},
		{"machines charts", "/machines", 200, []string{`id="chart-nodes"`, `href="/machines/n1"`, `id="chart-shares"`, `<polyline class="line line-0" data-n="2"`}, nil},
		{"classes chart", "/classes", 200, []string{`id="chart-classes"`, "normal: 6 GiB",
			`<div class="yaxis"><span>6 GiB</span><span>3 GiB</span><span>0</span></div>`}, nil},
		{"job charts", "/jobs/5", 200, []string{`id="chart-progress"`, `data-n="4"`, "done: 40", "failed: 2", `id="chart-rate"`, `id="items-private"`,
			`<div class="yaxis"><span>100 items</span><span>50</span><span>0</span></div>`, `<line class="axis" x1="0" y1="0" x2="0" y2="150">`}, []string{"worker raised"}},
		{"machines y axis", "/machines", 200, []string{`<div class="yaxis"><span>20 shares</span><span>10</span><span>0</span></div>`}, nil},
		{"overview", "/", 200, []string{"<h1>Overview</h1>", `class="active" aria-current="page">Overview`,
			`id="ov-nodes"`, "1 of 2 up", `<a href="/machines/n2">n2</a> <span class="state state-down">Down</span>`, "Raft Leader, term 2",
			`id="ov-mem-held">4 GiB`, `id="ov-mem-free">12 GiB`, "4 of 16 shares held",
			`<li data-state="Running"><span class="state state-running">Running</span> <strong>3</strong> <small>1 job, 2 managed reservations</small></li>`,
			`<li data-state="WaitingForResources">`, `id="reason-Resources"`, `<a href="/jobs/3">3</a>`, "no node in pool default has 64 GiB",
			`id="ov-service-states"`, `<li data-state="Available">`, `id="failed-1"`, "ProgramExit", "exit 3", `<a href="/jobs?all=1">1 ended</a>`}, nil},
		{"services", "/services", 200, []string{`id="svc-7"`, "HTTP:localhost:8080/", "Available", "reference", `<a href="/jobs/7#proc-7.1">7.1</a>`,
			`<a href="/machines/n1">n1</a>`, `<a href="/jobs/7">7</a>`, `data-api="/api/v1/services"`}, []string{"s3cret"}},
		{"reservations", "/reservations", 200, []string{"No reservations", "ducc reserve --memory"}, nil},
		{"classes", "/classes", 200, []string{`id="class-normal"`, "FAIR_SHARE", "(default)", "8 GiB", "6 GiB", `id="class-reserve"`, `data-api="/api/v1/classes"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := get(t, srv.URL+tc.path)
			if code != tc.code {
				t.Fatalf("GET %s: status %d, want %d\n%s", tc.path, code, tc.code, body)
			}
			if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("content type %q", ct)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: missing %q\n%s", tc.path, w, body)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s: unexpected %q", tc.path, w)
				}
			}
			if !strings.Contains(body, "<!doctype html>") || !strings.Contains(body, "/static/live.js") {
				t.Errorf("GET %s: not a full page", tc.path)
			}
		})
	}
}

func TestPagesEscapeEverything(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	for _, path := range []string{"/jobs", "/jobs/4"} {
		_, body, _ := get(t, srv.URL+path)
		if strings.Contains(body, "<script>alert(1)</script>") || strings.Contains(body, "<b>x</b>") {
			t.Errorf("%s: user data rendered unescaped", path)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: escaped user name missing", path)
		}
	}
}

func TestPagesFragmentAndOverview(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	code, body, _ := get(t, srv.URL+"/jobs?fragment=1")
	if code != 200 || strings.Contains(body, "<html") || !strings.Contains(body, `id="work-2"`) {
		t.Errorf("fragment: %d %q", code, body)
	}
	if code, body, _ := get(t, srv.URL+"/"); code != 200 || !strings.Contains(body, "<h1>Overview</h1>") {
		t.Errorf("/: %d, want the overview page\n%s", code, body)
	}
	if code, _, _ := get(t, srv.URL+"/nope"); code != 404 {
		t.Errorf("/nope: %d", code)
	}
}

func TestPagesHeadUnreachable(t *testing.T) {
	src := newFake()
	src.err = wire.Errorf(wire.CodeUnreachable, "no head elected yet; the cluster may be starting")
	srv, _ := newTestServer(t, src, nil)
	for _, path := range []string{"/jobs", "/jobs/2", "/machines", "/cluster"} {
		code, body, _ := get(t, srv.URL+path)
		if code != http.StatusBadGateway || !strings.Contains(body, `class="error"`) || !strings.Contains(body, "no head elected yet") {
			t.Errorf("%s: %d, want 502 with the reason\n%s", path, code, body)
		}
	}
}

func TestPagesEmpty(t *testing.T) {
	srv, _ := newTestServer(t, &fakeSource{}, nil)
	for path, want := range map[string]string{"/jobs": "No active work", "/machines": "No machine has sent a heartbeat yet", "/cluster": "No Raft configuration"} {
		code, body, _ := get(t, srv.URL+path)
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want %q", path, code, want)
		}
	}
}

func TestPagesLogURL(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), func(c *Config) {
		c.LogURL = func(w wire.WorkInfo, p wire.ProcInfo) string { return "/logs/" + p.ID }
	})
	_, body, _ := get(t, srv.URL+"/jobs/2")
	if !strings.Contains(body, `<a href="/logs/2.1">log</a>`) {
		t.Errorf("log link missing:\n%s", body)
	}
}

func TestStaticAssets(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	for path, want := range map[string]string{"/static/live.js": "data-api", "/static/style.css": "table"} {
		code, body, hdr := get(t, srv.URL+path)
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d", path, code)
		}
		if hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff header", path)
		}
	}
	if code, _, _ := get(t, srv.URL+"/static/../layout.html"); code == 200 {
		t.Errorf("templates must not be served")
	}
	if code, _, _ := get(t, srv.URL+"/static/layout.html"); code == 200 {
		t.Errorf("templates must not be served")
	}
}

// TestTitlesByKind: a work's page is titled by its kind, as the CLI
// names it (a service's and a reservation's page is not "Job N"), and
// the navigation marks its list.
func TestTitlesByKind(t *testing.T) {
	src := newFake()
	src.work = append(src.work,
		wire.WorkInfo{ID: 7, Kind: wire.WorkService, User: "alice", Class: "fixed", State: "Running", Command: []string{"/srv/db"}},
		wire.WorkInfo{ID: 9, Kind: wire.WorkReservation, User: "dave", Class: "reserve", State: "WaitingForResources"})
	srv, _ := newTestServer(t, src, nil)
	for _, tc := range []struct{ path, title, nav string }{
		{"/jobs/5", "Job 5", "Jobs"}, {"/jobs/2", "Managed reservation 2", "Jobs"},
		{"/jobs/7", "Service 7", "Services"}, {"/jobs/9", "Reservation 9", "Reservations"},
	} {
		_, body, _ := get(t, srv.URL+tc.path)
		if !strings.Contains(body, "<title>"+tc.title+" · ducc</title>") || !strings.Contains(body, "<h1>"+tc.title+"</h1>") {
			t.Errorf("%s: not titled %q:\n%.400s", tc.path, tc.title, body)
		}
		if !strings.Contains(body, `class="active" aria-current="page">`+tc.nav+"<") {
			t.Errorf("%s: the navigation does not mark %s", tc.path, tc.nav)
		}
	}
}

// TestNiceAxis: the y axis tops are round numbers at or above the data.
func TestNiceAxis(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{1, 1}, {3, 4}, {7, 8}, {9, 10}, {40, 40}, {41, 50}, {100, 100}, {101, 200}, {0.3, 0.4}, {2.2, 2.5},
	} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := formatSize(niceSize(6 << 30)); got != "6 GiB" {
		t.Errorf("niceSize(6 GiB) = %s", got)
	}
	if got := formatSize(niceSize(700 << 20)); got != "800 MiB" {
		t.Errorf("niceSize(700 MiB) = %s", got)
	}
}
