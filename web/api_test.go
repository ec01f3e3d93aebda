package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

func TestAPI(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	tests := []struct {
		name, path string
		code       int
		check      func(t *testing.T, body []byte)
	}{
		{"jobs", "/api/v1/jobs", 200, func(t *testing.T, b []byte) {
			var l wire.WorkList
			mustJSON(t, b, &l)
			if len(l.Work) != 4 {
				t.Errorf("active work: %d, want 4", len(l.Work))
			}
		}},
		{"jobs all of alice", "/api/v1/jobs?all=true&user=alice", 200, func(t *testing.T, b []byte) {
			var l wire.WorkList
			mustJSON(t, b, &l)
			if len(l.Work) != 2 {
				t.Errorf("alice's work: %+v", l.Work)
			}
		}},
		{"jobs none", "/api/v1/jobs?user=nobody", 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"work": []`) {
				t.Errorf("empty list must be [], got %s", b)
			}
		}},
		{"show", "/api/v1/jobs/2", 200, func(t *testing.T, b []byte) {
			var w wire.WorkInfo
			mustJSON(t, b, &w)
			if w.ID != 2 || len(w.Procs) != 1 || w.Procs[0].PID != 4242 {
				t.Errorf("show 2: %+v", w)
			}
		}},
		{"show unknown", "/api/v1/jobs/77", 404, func(t *testing.T, b []byte) {
			var e apiError
			mustJSON(t, b, &e)
			if e.Code != wire.CodeUsage || !strings.Contains(e.Error, "no work with id 77") {
				t.Errorf("error: %+v", e)
			}
		}},
		{"show bad id", "/api/v1/jobs/-1", 400, nil},
		{"nodes", "/api/v1/nodes", 200, func(t *testing.T, b []byte) {
			var l wire.NodeList
			mustJSON(t, b, &l)
			if len(l.Nodes) != 2 {
				t.Errorf("nodes: %+v", l)
			}
		}},
		{"status", "/api/v1/status", 200, func(t *testing.T, b []byte) {
			var s wire.StatusInfo
			mustJSON(t, b, &s)
			if s.Head != "n1" || s.RaftState != "Leader" {
				t.Errorf("status: %+v", s)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := get(t, srv.URL+tc.path)
			if code != tc.code {
				t.Fatalf("GET %s: %d, want %d: %s", tc.path, code, tc.code, body)
			}
			if hdr.Get("Content-Type") != "application/json" {
				t.Errorf("content type %q", hdr.Get("Content-Type"))
			}
			if tc.check != nil {
				tc.check(t, []byte(body))
			}
		})
	}
}

// The dashboard cannot tell who is looking: even when the head answers
// with private parts, the API and the pages never show a service's
// environment or arguments, nor the arguments of work.
func TestAPIHidesPrivateParts(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	for _, path := range []string{"/api/v1/services", "/api/v1/services?service=7", "/api/v1/jobs?all=1", "/api/v1/jobs/2",
		"/services", "/jobs?all=1", "/jobs/2", "/jobs/1"} {
		code, body, _ := get(t, srv.URL+path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: status %d\n%s", path, code, body)
		}
		for _, secret := range []string{"s3cret", "DB_PASSWORD", "sleep 60", "exit 3"} {
			if strings.Contains(body, secret) {
				t.Errorf("GET %s shows %q:\n%s", path, secret, body)
			}
		}
	}
	_, body, _ := get(t, srv.URL+"/api/v1/services")
	var l wire.ServiceList
	mustJSON(t, []byte(body), &l)
	if len(l.Services) != 1 || l.Services[0].Spec.Executable != "/srv/db" ||
		strings.Join(l.Services[0].Redacted, ",") != wire.RedactedEnv+","+wire.RedactedArgs {
		t.Errorf("services: %+v", l.Services)
	}
	_, body, _ = get(t, srv.URL+"/api/v1/jobs/2")
	var w wire.WorkInfo
	mustJSON(t, []byte(body), &w)
	if strings.Join(w.Command, " ") != "sleep" || strings.Join(w.Redacted, ",") != wire.RedactedArgs {
		t.Errorf("show 2: command %q, redacted %q", w.Command, w.Redacted)
	}
}

func TestAPIReadOnly(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/2", "/jobs"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d, want 405", path, resp.StatusCode)
		}
	}
}

func TestAPIHeadUnreachable(t *testing.T) {
	src := newFake()
	src.err = wire.Errorf(wire.CodeUnreachable, "no head elected yet")
	srv, _ := newTestServer(t, src, nil)
	code, body, _ := get(t, srv.URL+"/api/v1/jobs")
	if code != http.StatusBadGateway || !strings.Contains(body, "no head elected yet") || !strings.Contains(body, `"code": 3`) {
		t.Errorf("%d %s", code, body)
	}
}

func TestHealthz(t *testing.T) {
	srv, _ := newTestServer(t, newFake(), nil)
	code, body, _ := get(t, srv.URL+"/healthz?head=1")
	if code != 200 || !strings.Contains(body, `"head": "n1"`) {
		t.Errorf("healthz: %d %s", code, body)
	}
	down := newFake()
	down.err = wire.Errorf(wire.CodeUnreachable, "no head")
	srv2, _ := newTestServer(t, down, nil)
	if code, _, _ := get(t, srv2.URL+"/healthz"); code != 200 {
		t.Errorf("liveness must not depend on the head: %d", code)
	}
	if code, _, _ := get(t, srv2.URL+"/healthz?head=1"); code != http.StatusServiceUnavailable {
		t.Errorf("healthz?head=1 with the head down: %d, want 503", code)
	}
}

func TestPrivate(t *testing.T) {
	h := NewHandler(Config{Source: newFake(), Private: true, Node: "n1"})
	tests := []struct {
		remote, path string
		code         int
	}{
		{"127.0.0.1:5000", "/jobs", 200},
		{"[::1]:5000", "/api/v1/jobs", 200},
		{"10.1.2.3:5000", "/jobs", 403},
		{"10.1.2.3:5000", "/api/v1/status", 403},
		{"10.1.2.3:5000", "/static/live.js", 403},
		{"10.1.2.3:5000", "/metrics", 200},
		{"10.1.2.3:5000", "/healthz", 200},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", tc.path, nil)
		r.RemoteAddr = tc.remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("%s from %s: %d, want %d", tc.path, tc.remote, w.Code, tc.code)
		}
		if w.Code == 403 && !strings.Contains(w.Body.String(), "web.private") {
			t.Errorf("403 must say why: %s", w.Body)
		}
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}
