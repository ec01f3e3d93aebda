package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

var testTokenKey = wire.WebTokenKey([]byte("test cluster key"))

func testToken(t *testing.T, c wire.Caller, exp time.Time) string {
	t.Helper()
	tok, err := wire.MintWebToken(testTokenKey, c, exp)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var (
	alice = wire.Caller{User: "alice", UID: 1001, GID: 1001}
	bob   = wire.Caller{User: "bob", UID: 1002, GID: 1002}
)

// privateConfig is a private dashboard that accepts test tokens and
// X-Forwarded-User from 10.9.0.0/24, and serves logs of work 2 to alice.
func privateConfig(src Source) Config {
	return Config{
		Source: src, Private: true, Node: "n1", Now: func() time.Time { return testNow },
		TokenKey: testTokenKey, UserHeader: "X-Forwarded-User",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/24")},
		LookupUser: func(name string) (wire.Caller, error) {
			switch name {
			case "alice":
				return alice, nil
			case "bob":
				return bob, nil
			}
			return wire.Caller{}, fmt.Errorf("no user %q on this node", name)
		},
		Logs: func(_ context.Context, c wire.Caller, id uint64, proc string, w io.Writer) error {
			if c.User != "alice" || id != 2 {
				return wire.Errorf(wire.CodeUsage, "the logs of work %d are private to alice", id)
			}
			_, err := fmt.Fprintf(w, "log of %d process %s\n", id, proc)
			return err
		},
	}
}

func TestIdentify(t *testing.T) {
	valid := testNow.Add(time.Hour)
	aliceTok, bobTok := testToken(t, alice, valid), testToken(t, bob, valid)
	rootTok := testToken(t, wire.Caller{User: "root"}, valid)
	expired := testToken(t, alice, testNow)
	otherCluster, err := wire.MintWebToken(wire.WebTokenKey([]byte("another cluster")), alice, valid)
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	cookie := func(tok string) http.Header { return http.Header{"Cookie": {tokenCookie + "=" + tok}} }
	header := func(user string) http.Header { return http.Header{"X-Forwarded-User": {user}} }

	tests := []struct {
		name    string
		public  bool // web.private off
		remote  string
		path    string
		hdr     http.Header
		code    int
		has     []string // in the body
		hasNot  []string
		asUser  string // the caller the head saw last ("" anonymous)
		clearCk bool   // answer clears the login cookie
	}{
		// Nothing private without credentials (the must-show).
		{name: "anonymous work", remote: "127.0.0.1:1", path: "/api/v1/jobs/2", code: 200,
			has: []string{`"sleep"`, `"arguments"`}, hasNot: []string{`"60"`}},
		{name: "anonymous list", remote: "127.0.0.1:1", path: "/api/v1/jobs?all=1", code: 200,
			hasNot: []string{`"60"`, "exit 3", "<b>x</b>"}},
		{name: "anonymous services", remote: "127.0.0.1:1", path: "/api/v1/services", code: 200,
			hasNot: []string{"s3cret"}},
		{name: "anonymous results", remote: "127.0.0.1:1", path: "/api/v1/jobs/5/results", code: 403,
			hasNot: []string{"secret result"}},
		{name: "anonymous log", remote: "127.0.0.1:1", path: "/jobs/2/log?process=2.1", code: 403,
			hasNot: []string{"log of"}},
		{name: "anonymous page", remote: "127.0.0.1:1", path: "/jobs/2", code: 200,
			has: []string{"sign in"}, hasNot: []string{"sleep 60", "/jobs/2/log"}},

		// A token: the owner sees her own, another user does not.
		{name: "owner's token", remote: "127.0.0.1:1", path: "/api/v1/jobs/2", hdr: bearer(aliceTok), code: 200,
			has: []string{`"60"`}, asUser: "alice"},
		{name: "other's token", remote: "127.0.0.1:1", path: "/api/v1/jobs/2", hdr: bearer(bobTok), code: 200,
			hasNot: []string{`"60"`}, asUser: "bob"},
		{name: "root's token", remote: "[::1]:1", path: "/api/v1/jobs/2", hdr: bearer(rootTok), code: 200,
			has: []string{`"60"`}, asUser: "root"},
		{name: "owner's services", remote: "127.0.0.1:1", path: "/api/v1/services", hdr: bearer(aliceTok), code: 200,
			has: []string{"DB_PASSWORD=s3cret"}, asUser: "alice"},
		{name: "other's services", remote: "127.0.0.1:1", path: "/api/v1/services", hdr: bearer(bobTok), code: 200,
			hasNot: []string{"s3cret"}, asUser: "bob"},
		{name: "owner's results", remote: "127.0.0.1:1", path: "/api/v1/jobs/5/results", hdr: bearer(testToken(t, wire.Caller{User: "carol", UID: 1003}, valid)),
			code: 200, has: []string{"secret result of carol"}, asUser: "carol"},
		{name: "other's results", remote: "127.0.0.1:1", path: "/api/v1/jobs/5/results", hdr: bearer(bobTok), code: 403,
			hasNot: []string{"secret result"}, asUser: "bob"},
		{name: "owner's log", remote: "127.0.0.1:1", path: "/jobs/2/log?process=2.1", hdr: bearer(aliceTok), code: 200,
			has: []string{"log of 2 process 2.1"}},
		{name: "other's log", remote: "127.0.0.1:1", path: "/jobs/2/log?process=2.1", hdr: bearer(bobTok), code: 403,
			hasNot: []string{"log of"}},
		{name: "owner's page", remote: "127.0.0.1:1", path: "/jobs/2", hdr: cookie(aliceTok), code: 200,
			has: []string{"sleep 60", "/jobs/2/log?process=2.1", ">alice</a>"}, asUser: "alice"},

		// Bad credentials are refused, not taken for anonymous, on the API.
		{name: "expired token", remote: "127.0.0.1:1", path: "/api/v1/jobs/2", hdr: bearer(expired), code: 401,
			has: []string{"expired"}, hasNot: []string{`"60"`}},
		{name: "other cluster's token", remote: "127.0.0.1:1", path: "/api/v1/jobs", hdr: bearer(otherCluster), code: 401},
		{name: "not bearer", remote: "127.0.0.1:1", path: "/api/v1/jobs", hdr: http.Header{"Authorization": {"Basic YWxpY2U6eA=="}}, code: 401},
		{name: "stale cookie on a page", remote: "127.0.0.1:1", path: "/jobs/2", hdr: cookie(expired), code: 200,
			hasNot: []string{"sleep 60"}, clearCk: true},

		// The proxy's header, only from a trusted proxy.
		{name: "proxy names the owner", remote: "10.9.0.5:1", path: "/api/v1/jobs/2", hdr: header("alice"), code: 200,
			has: []string{`"60"`}, asUser: "alice"},
		{name: "proxy names another", remote: "10.9.0.5:1", path: "/api/v1/jobs/2", hdr: header("bob"), code: 200,
			hasNot: []string{`"60"`}, asUser: "bob"},
		{name: "proxy without the header", remote: "10.9.0.5:1", path: "/api/v1/jobs/2", code: 200,
			hasNot: []string{`"60"`}},
		{name: "proxy names an unknown user", remote: "10.9.0.5:1", path: "/api/v1/jobs/2", hdr: header("mallory"), code: 401},
		{name: "header from loopback is ignored", remote: "127.0.0.1:1", path: "/api/v1/jobs/2", hdr: header("alice"), code: 200,
			hasNot: []string{`"60"`}},
		{name: "header from elsewhere is refused", remote: "10.1.2.3:1", path: "/api/v1/jobs/2", hdr: header("alice"), code: 403},
		{name: "token from elsewhere is refused", remote: "10.1.2.3:1", path: "/api/v1/jobs/2", hdr: bearer(aliceTok), code: 403},

		// Without web.private nobody is identified.
		{name: "public ignores tokens", public: true, remote: "10.1.2.3:1", path: "/api/v1/jobs/2", hdr: bearer(aliceTok), code: 200,
			hasNot: []string{`"60"`}},
		{name: "public ignores the header", public: true, remote: "10.9.0.5:1", path: "/api/v1/services", hdr: header("alice"), code: 200,
			hasNot: []string{"s3cret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFake()
			src.redact = true
			cfg := privateConfig(src)
			if tt.public {
				cfg.Private = false
			}
			h := NewHandler(cfg)
			r := httptest.NewRequest("GET", tt.path, nil)
			r.RemoteAddr = tt.remote
			for k, v := range tt.hdr {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			body := w.Body.String()
			if w.Code != tt.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.code, body)
			}
			for _, s := range tt.has {
				if !strings.Contains(body, s) {
					t.Errorf("missing %q in %s", s, body)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(body, s) {
					t.Errorf("%q shown: %s", s, body)
				}
			}
			if tt.asUser != "" {
				src.mu.Lock()
				last := src.callers[len(src.callers)-1]
				src.mu.Unlock()
				if last != tt.asUser {
					t.Errorf("the head was asked for %q, want %q", last, tt.asUser)
				}
			}
			if tt.code == 200 && tt.asUser == "" && strings.HasPrefix(tt.path, "/api/") {
				src.mu.Lock()
				for _, u := range src.callers {
					if u != "" {
						t.Errorf("an anonymous request reached the head as %q", u)
					}
				}
				src.mu.Unlock()
			}
			cleared := strings.Contains(w.Header().Get("Set-Cookie"), tokenCookie+"=;")
			if cleared != tt.clearCk {
				t.Errorf("cookie cleared %v, want %v (Set-Cookie %q)", cleared, tt.clearCk, w.Header().Get("Set-Cookie"))
			}
		})
	}
}

func TestLogin(t *testing.T) {
	aliceTok := testToken(t, alice, testNow.Add(time.Hour))
	tests := []struct {
		name     string
		public   bool
		token    string
		origin   string
		code     int
		location string // prefix
		cookie   bool
	}{
		{name: "valid", token: aliceTok, code: 303, location: "/jobs", cookie: true},
		{name: "same origin", token: aliceTok, origin: "http://example.test", code: 303, location: "/jobs", cookie: true},
		{name: "bad token", token: "ducc1.nope", code: 303, location: "/login?failed="},
		{name: "expired", token: testToken(t, alice, testNow), code: 303, location: "/login?failed="},
		{name: "from another site", token: aliceTok, origin: "http://evil.test", code: 403},
		{name: "public dashboard", public: true, token: aliceTok, code: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := privateConfig(newFake())
			cfg.Private = !tt.public
			h := NewHandler(cfg)
			r := httptest.NewRequest("POST", "http://example.test/login", strings.NewReader(url.Values{"token": {tt.token}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.RemoteAddr = "127.0.0.1:1"
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.code, w.Body)
			}
			if loc := w.Header().Get("Location"); !strings.HasPrefix(loc, tt.location) {
				t.Errorf("location %q, want %q…", loc, tt.location)
			}
			ck := w.Result().Cookies()
			got := len(ck) == 1 && ck[0].Name == tokenCookie && ck[0].Value == tt.token
			if got != tt.cookie {
				t.Fatalf("cookie set %v, want %v: %v", got, tt.cookie, ck)
			}
			if got && (!ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != "/" ||
				!ck[0].Expires.Equal(testNow.Add(time.Hour))) {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, expiring with the token", ck[0])
			}
		})
	}

	// Through a trusted TLS proxy the cookie is Secure.
	h0 := NewHandler(privateConfig(newFake()))
	r0 := httptest.NewRequest("POST", "http://example.test/login", strings.NewReader(url.Values{"token": {aliceTok}}.Encode()))
	r0.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r0.Header.Set("X-Forwarded-Proto", "https")
	r0.RemoteAddr = "10.9.0.5:1"
	w0 := httptest.NewRecorder()
	h0.ServeHTTP(w0, r0)
	if ck := w0.Result().Cookies(); w0.Code != 303 || len(ck) != 1 || !ck[0].Secure {
		t.Errorf("sign-in through a TLS proxy: %d %v", w0.Code, ck)
	}

	// Sign out clears the cookie.
	h := NewHandler(privateConfig(newFake()))
	r := httptest.NewRequest("POST", "/logout", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("Cookie", tokenCookie+"="+aliceTok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 303 || !strings.Contains(w.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: %d %q", w.Code, w.Header().Get("Set-Cookie"))
	}

	// The login page names who is signed in.
	r = httptest.NewRequest("GET", "/login", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("Cookie", tokenCookie+"="+aliceTok)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "Signed in as <strong>alice</strong>") {
		t.Errorf("login page: %d %s", w.Code, w.Body)
	}
}
