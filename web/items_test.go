package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestWorkItemTable checks the job page's work-item table: the owner sees
// the items (failures alone when asked) with time, attempts and the
// process linked; another user gets the head's refusal, an anonymous
// viewer no item data.
func TestWorkItemTable(t *testing.T) {
	h := NewHandler(privateConfig(newFake()))
	carol := testToken(t, wire.Caller{User: "carol", UID: 1003}, testNow.Add(time.Hour))
	bobTok := testToken(t, bob, testNow.Add(time.Hour))
	tests := []struct {
		name, path, token string
		want, not         []string
	}{
		{"owner, all items", "/jobs/5", carol,
			[]string{`id="items-table"`, `id="item-0"`, `id="item-1" data-state="Failed"`, "worker raised ValueError", "2.5 s",
				`<td class="num">3</td>`, `<a href="#proc-5.1">5.1</a>`, `id="items-failed-link"`, "2 items in all"},
			[]string{`id="items-private"`}},
		{"owner, failed only", "/jobs/5?items=failed", carol,
			[]string{`id="item-1"`, "Showing failed items only"}, []string{`id="item-0"`}},
		{"another user", "/jobs/5", bobTok,
			[]string{`id="items-private"`, "private to carol"}, []string{"worker raised", `id="items-table"`}},
		{"anonymous", "/jobs/5", "",
			[]string{`id="items-private"`, "sign in with a token from `ducc web-token`"}, []string{"worker raised", `id="items-table"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			req.RemoteAddr = "127.0.0.1:1"
			if tc.token != "" {
				req.Header.Set("Cookie", tokenCookie+"="+tc.token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", tc.path, rec.Code, body)
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
		})
	}
}

func TestJobChartsAddThePresent(t *testing.T) {
	w := wire.WorkInfo{Job: &wire.JobStats{Done: 40, Failed: 2, Total: 100}}
	samples := []wire.WorkSample{{At: 1000, Done: 0, Total: 100}, {At: 11000, Done: 20, Total: 100}}
	prog, rate := jobCharts(samples, w, 21000)
	if prog == nil || rate == nil {
		t.Fatal("no charts")
	}
	if n := prog.Lines[0].N; n != 3 {
		t.Errorf("progress has %d points, want the 2 samples and now", n)
	}
	// 20 items in 10 s, then 22 in 10 s.
	if got := rate.Lines[0].Last; got != "2.2/s" {
		t.Errorf("last rate %q, want 2.2/s", got)
	}
	if prog, rate := jobCharts(nil, wire.WorkInfo{}, 1); prog != nil || rate != nil {
		t.Errorf("work without items got charts")
	}
	if c := newChart("x", "x", itemScale); c != nil {
		t.Errorf("a chart without points: %+v", c)
	}
}

func TestNodePageNamesItsReservation(t *testing.T) {
	src := newFake()
	src.work = append(src.work, wire.WorkInfo{ID: 9, Kind: wire.WorkReservation, User: "dave", Class: "reserve", State: "Running",
		Memory: 32 << 30, Node: "n1", StartedAt: ms(time.Minute), Procs: []wire.ProcInfo{{ID: "9.1", Node: "n1", State: "Running", StartedAt: ms(time.Minute)}}})
	srv, _ := newTestServer(t, src, nil)
	_, body, _ := get(t, srv.URL+"/machines/n1")
	if !strings.Contains(body, `id="node-reserved">by <a href="/jobs/9">reservation 9</a>`) {
		t.Errorf("node page without its reservation:\n%s", body)
	}
	_, body, _ = get(t, srv.URL+"/reservations")
	for _, want := range []string{`<a href="/jobs/9">9</a>`, `<a href="/machines/n1">n1</a>`} {
		if !strings.Contains(body, want) {
			t.Errorf("reservations page lacks %s:\n%s", want, body)
		}
	}
}
