package web

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestSocketOwnerOfARealConnection: the kernel's socket tables name this
// process's user as the owner of the client end of a loopback connection,
// over IPv4 and (where the host has it) IPv6.
func TestSocketOwnerOfARealConnection(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				if strings.HasPrefix(addr, "[") {
					t.Skipf("no IPv6 loopback: %v", err)
				}
				t.Fatal(err)
			}
			defer ln.Close()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			srv, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			client := netip.MustParseAddrPort(conn.LocalAddr().String())
			server := netip.MustParseAddrPort(srv.LocalAddr().String())
			uid, err := socketOwner(defaultProcNet, client, server)
			if err != nil {
				t.Fatalf("socketOwner(%v → %v): %v", client, server, err)
			}
			if want := uint32(os.Getuid()); uid != want {
				t.Errorf("owner uid %d, want %d", uid, want)
			}
			// A connection nobody has is not found.
			if _, err := socketOwner(defaultProcNet, netip.AddrPortFrom(client.Addr(), 1), server); err == nil {
				t.Errorf("found a socket for a port nobody uses")
			}
		})
	}
}

// TestSocketTables reads fixed tables: IPv4, IPv6 and IPv4-mapped rows,
// the uid of the right row.
func TestSocketTables(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the fixture is written for a little-endian machine")
	}
	dir := t.TempDir()
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 3 1 0000000000000000 20 4 30 10 -1
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:D432 00000000000000000000000001000000:1F91 01 00000000:00000000 00:00000000 00000000  1002        0 4 1 0 20 4 30 10 -1
   1: 0000000000000000FFFF00000100007F:D433 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1003        0 5 1 0 20 4 30 10 -1
`
	for name, body := range map[string]string{"tcp": tcp, "tcp6": tcp6} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		client, server string
		uid            uint32
		ok             bool
	}{
		{"127.0.0.1:54321", "127.0.0.1:8080", 1001, true},
		{"[::1]:54322", "[::1]:8081", 1002, true},
		{"127.0.0.1:54323", "127.0.0.1:8080", 1003, true}, // a dual-stack client socket
		{"[::ffff:127.0.0.1]:54321", "127.0.0.1:8080", 1001, true},
		{"127.0.0.1:54324", "127.0.0.1:8080", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.client, func(t *testing.T) {
			uid, err := socketOwner(dir, netip.MustParseAddrPort(tc.client), netip.MustParseAddrPort(tc.server))
			if tc.ok != (err == nil) || uid != tc.uid {
				t.Errorf("socketOwner: %d %v, want %d (found %v)", uid, err, tc.uid, tc.ok)
			}
		})
	}
}

// localConfig is a dev dashboard (web.local_users) whose users are this
// process's uid, known as user, and nobody else.
func localConfig(src Source, user string) func(*Config) {
	return func(c *Config) {
		c.LocalUsers = true
		c.LookupUID = func(uid uint32) (wire.Caller, error) {
			if uid == uint32(os.Getuid()) && user != "" {
				return wire.Caller{User: user, UID: 1003}, nil
			}
			return wire.Caller{}, fmt.Errorf("uid %d owns the connection but is unknown on node n1", uid)
		}
		c.Logs = privateConfig(src).Logs
	}
}

// TestLocalUsers: on a dev dashboard a browser on the node is the user
// who owns its connection, with no token: the owner of a job sees its
// work-item table, the results API and its log, and the header and
// /login say who they are and why, with no sign-in text.
func TestLocalUsers(t *testing.T) {
	src := newFake()
	srv, _ := newTestServer(t, src, localConfig(src, "carol"))
	for _, tc := range []struct {
		path      string
		code      int
		want, not []string
	}{
		{"/jobs/5", 200, []string{`id="items-table"`, `id="item-1" data-state="Failed"`, "worker raised ValueError", "2.5 s",
			`id="who"><a href="/login"`, ">carol</a>", `id="results-link"`}, []string{`id="items-private"`, "sign in", "Sign in", "web-token"}},
		{"/api/v1/jobs/5/results", 200, []string{"worker raised ValueError"}, nil},
		{"/login", 200, []string{`id="signed-in"`, "You are <strong>carol</strong>", "owns its connection", "No token or password is needed"},
			[]string{"<textarea", "web-token"}},
	} {
		code, body, _ := get(t, srv.URL+tc.path)
		if code != tc.code {
			t.Errorf("GET %s: %d, want %d\n%s", tc.path, code, tc.code, body)
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
	}
	if n := strings.Count(strings.Join(src.callers, " "), "carol"); n == 0 {
		t.Errorf("the head was never asked for carol: %q", src.callers)
	}
}

// TestAnonymousMessagesAgree: whatever the dashboard's mode, the job
// page, the work-item table, the results API, the log endpoint and
// /login tell an anonymous visitor the same way to see their own.
func TestAnonymousMessagesAgree(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		hint string // in every answer
		not  []string
	}{
		{"public", nil, "this dashboard is public (web.private is off) and knows nobody", []string{"sign in with", "web-token"}},
		{"private", func(c *Config) { *c = privateConfig(c.Source) }, "sign in with a token from `ducc web-token`", []string{"nothing to sign in"}},
		{"dev, unknown uid", func(c *Config) { localConfig(c.Source, "")(c) }, "could not tell who you are (uid", []string{"web-token"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake()
			srv, _ := newTestServer(t, src, func(c *Config) {
				c.Source = src
				if tc.mod != nil {
					tc.mod(c)
				}
				c.Logs = privateConfig(src).Logs
			})
			esc := strings.NewReplacer("`", "&#96;", "'", "&#39;")
			for _, path := range []string{"/jobs/5", "/api/v1/jobs/5/results", "/jobs/2/log", "/login"} {
				code, body, _ := get(t, srv.URL+path)
				if path != "/jobs/5" && path != "/login" && code != 403 {
					t.Errorf("GET %s: %d, want 403", path, code)
				}
				if !strings.Contains(body, tc.hint) && !strings.Contains(body, esc.Replace(tc.hint)) {
					t.Errorf("GET %s: lacks %q:\n%s", path, tc.hint, body)
				}
				for _, n := range tc.not {
					if strings.Contains(body, n) || strings.Contains(body, esc.Replace(n)) {
						t.Errorf("GET %s: contradicts with %q:\n%s", path, n, body)
					}
				}
			}
		})
	}
}

// TestLocalUsersNotForProxiesOrTokens: a trusted proxy's connection is
// not its users', and a token still names its user first.
func TestLocalUsersNotForProxiesOrTokens(t *testing.T) {
	cfg := privateConfig(newFake())
	localConfig(cfg.Source, "carol")(&cfg)
	cfg.TrustedProxies = append(cfg.TrustedProxies, netip.MustParsePrefix("127.0.0.0/8"))
	srv, _ := newTestServer(t, cfg.Source, func(c *Config) { *c = cfg })
	code, body, _ := get(t, srv.URL+"/api/v1/jobs/5/results")
	if code != 403 || strings.Contains(body, "worker raised") {
		t.Errorf("a trusted proxy's connection was taken for its owner: %d %s", code, body)
	}
	cfg.TrustedProxies = cfg.TrustedProxies[:1]
	srv2, _ := newTestServer(t, cfg.Source, func(c *Config) { *c = cfg })
	tok := testToken(t, bob, testNow.Add(time.Hour))
	code, body = webGet(t, srv2.URL+"/api/v1/jobs/5/results", tok)
	if code != 403 || !strings.Contains(body, "private to carol") {
		t.Errorf("a token for bob: %d %s, want the head's refusal for bob", code, body)
	}
}

// webGet GETs url with a bearer token.
func webGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
