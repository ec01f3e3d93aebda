package cli

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUnixTransport: a request gets a connection of its own, closed by
// the server after the response (no pool); chunked and plain bodies read
// whole; a stream cut short by the caller's context says so; a missing
// socket is a dial error.
func TestUnixTransport(t *testing.T) {
	dir, err := os.MkdirTemp("", "dt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(append([]byte("got "), b...))
	})
	mux.HandleFunc("GET /chunks", func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			io.WriteString(w, strings.Repeat(string(rune('a'+i)), 5000))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := &http.Server{Handler: mux, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { close(release); srv.Close() })
	hc := &http.Client{Transport: unixTransport(sock)}

	for i := range 3 {
		req, _ := http.NewRequest(http.MethodPost, "http://ducc/echo", strings.NewReader("hello"))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "got hello" || resp.StatusCode != 200 || !resp.Close {
			t.Fatalf("echo %d: %q %v, status %d, close %v", i, b, err, resp.StatusCode, resp.Close)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("3 requests used %d connections, want one each", n)
	}

	resp, err := hc.Get("http://ducc/chunks")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(b) != 15000 || b[0] != 'a' || b[14999] != 'c' {
		t.Fatalf("chunked body: %d bytes, %v", len(b), err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://ducc/stream", nil)
	if resp, err = hc.Do(req); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first\n" {
		t.Fatalf("stream start: %q %v", buf, err)
	}
	time.AfterFunc(10*time.Millisecond, cancel)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stream read after cancel: %v, want context.Canceled", err)
	}

	gone := &http.Client{Transport: unixTransport(filepath.Join(dir, "none"))}
	if _, err := gone.Get("http://ducc/echo"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing socket: %v", err)
	}
}
