package sockhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestDo against net/http's server, which the agent runs: a request gets a
// connection of its own, closed after the response; header fields and the
// body arrive; chunked and plain bodies read whole; a stream cut short by
// the caller's context says so; a missing socket is a dial error.
func TestDo(t *testing.T) {
	dir := t.TempDir()
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
		w.Header().Set("X-Ct", r.Header.Get("Content-Type"))
		io.WriteString(w, "got "+string(b)+" as "+r.Header.Get("X-Ducc-As"))
	})
	mux.HandleFunc("GET /chunks", func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			io.WriteString(w, strings.Repeat(string(rune('a'+i)), 5000))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("GET /missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such thing", http.StatusNotFound)
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
	ctx := context.Background()

	for i := range 3 {
		resp, err := Do(ctx, sock, "POST", "/echo", Header{{"X-Ducc-As", "alice"}}, []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "got hello as alice" || resp.StatusCode != 200 || resp.Status != "200 OK" ||
			resp.Header.Get("X-Ct") != "application/json" {
			t.Fatalf("echo %d: %q %v, status %d %q, header %v", i, b, err, resp.StatusCode, resp.Status, resp.Header)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("3 requests used %d connections, want one each", n)
	}

	resp, err := Do(ctx, sock, "GET", "/chunks", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(b) != 15000 || b[0] != 'a' || b[14999] != 'c' {
		t.Fatalf("chunked body: %d bytes, %v", len(b), err)
	}

	resp, err = Do(ctx, sock, "GET", "/missing", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Status != "404 Not Found" || string(b) != "no such thing\n" {
		t.Fatalf("404: %d %q %q", resp.StatusCode, resp.Status, b)
	}

	cctx, cancel := context.WithCancel(ctx)
	if resp, err = Do(cctx, sock, "GET", "/stream", nil, nil); err != nil {
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

	_, err = Do(ctx, filepath.Join(dir, "none"), "GET", "/", nil, nil)
	var op *net.OpError
	if !errors.As(err, &op) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("missing socket: %v, want a *net.OpError with ENOENT", err)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
}

// TestReadResponse: how each kind of answer ends, and what malformed ones
// say.
func TestReadResponse(t *testing.T) {
	tests := []struct {
		name, method, in string
		code             int
		body             string
		err              string // in ReadResponse's error, or else the body's
	}{
		{name: "length", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", code: 200, body: "hello"},
		{name: "length stops there", in: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhello", code: 200, body: "he"},
		{name: "length cut", in: "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello", code: 200, err: "unexpected EOF"},
		{name: "until close", in: "HTTP/1.0 200 OK\r\n\r\nall of it", code: 200, body: "all of it"},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1 \r\n!\r\n0\r\nTrailer: v\r\n\r\n", code: 200, body: "hello!"},
		{name: "chunked cut", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", code: 200, err: "unexpected EOF"},
		{name: "chunked no last chunk", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", code: 200, err: "unexpected EOF"},
		{name: "chunked bad size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", code: 200, err: "malformed chunk size"},
		{name: "chunked huge size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", code: 200, err: "malformed chunk size"},
		{name: "chunked no CRLF", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", code: 200, err: "no CRLF"},
		{name: "interim skipped", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", code: 201, body: "ok"},
		{name: "no content", in: "HTTP/1.1 204 No Content\r\n\r\nignored", code: 204, body: ""},
		{name: "head", method: "HEAD", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", code: 200, body: ""},
		{name: "not http", in: "SSH-2.0-OpenSSH\r\n\r\n", err: "malformed status line"},
		{name: "bad code", in: "HTTP/1.1 2x0 OK\r\n\r\n", err: "malformed status line"},
		{name: "empty", in: "", err: "unexpected EOF"},
		{name: "header cut", in: "HTTP/1.1 200 OK\r\nContent-Le", err: "read the answer's header"},
		{name: "conflicting lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", err: "conflicting Content-Length"},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: "malformed Content-Length"},
		{name: "gzip coding", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", err: "unsupported transfer coding"},
		{name: "header too long", in: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxHeaderBytes) + "\r\n\r\n", err: "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			resp, err := ReadResponse(strings.NewReader(tt.in), method)
			var body []byte
			if err == nil {
				if resp.StatusCode != tt.code {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.code)
				}
				body, err = io.ReadAll(resp.Body)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v, want body %q", err, tt.body)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one with %q", err, tt.err)
			case tt.err == "" && string(body) != tt.body:
				t.Fatalf("body %q, want %q", body, tt.body)
			}
		})
	}
}

// TestRequest: the request line and header the agent's server reads.
func TestRequest(t *testing.T) {
	r := request("POST", "/v1/call/run", Header{{"X-Ducc-As", "bob"}}, []byte(`{"a":1}`))
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(r)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(req.Body)
	if req.Method != "POST" || req.URL.Path != "/v1/call/run" || !req.Close || req.Header.Get("X-Ducc-As") != "bob" ||
		req.ContentLength != 7 || string(b) != `{"a":1}` || req.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("request read back as %+v, body %q", req, b)
	}
	if r := request("GET", "/v1/id", nil, nil); strings.Contains(string(r), "Content-Length") {
		t.Fatalf("a request without a body says %q", r)
	}
	// What would break the request line or smuggle a header field is
	// refused before anything is sent.
	for _, c := range []struct {
		method, path string
		h            Header
	}{
		{"GET", "/v1/logs?process=a b", nil},
		{"GET", "/v1/logs?process=a\r\nX-Ducc-As: root", nil},
		{"GET", "v1/id", nil},
		{"GET", "", nil},
		{"G T", "/", nil},
		{"GET", "/", Header{{"X-Ducc-As", "bob\r\nX-Other: 1"}}},
		{"GET", "/", Header{{"X:Y", "v"}}},
		{"GET", "/", Header{{"", "v"}}},
	} {
		_, err := Do(context.Background(), "/nonexistent/socket", c.method, c.path, c.h, nil)
		if !errors.Is(err, ErrMalformedRequest) || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("Do(%q, %q, %q): %v, want it refused as malformed", c.method, c.path, c.h, err)
		}
	}
}

// FuzzChunked: whatever a chunked writer makes of data, the reader gives
// back; on any input the reader ends without panicking, and where net/http's
// reader also succeeds they agree.
func FuzzChunked(f *testing.F) {
	f.Add([]byte("hello, world"), uint8(3), []byte("5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte(""), uint8(1), []byte("1;ext\r\na\r\n0\r\nT: x\r\n\r\n"))
	f.Add([]byte{0, 1, 2}, uint8(0), []byte("ffffffffffffffff\r\n"))
	f.Fuzz(func(t *testing.T, data []byte, split uint8, raw []byte) {
		var enc bytes.Buffer
		w := httputil.NewChunkedWriter(&enc)
		step := int(split) + 1
		for i := 0; i < len(data); i += step {
			w.Write(data[i:min(i+step, len(data))])
		}
		w.Close()
		enc.WriteString("\r\n")
		got, err := io.ReadAll(&chunkedReader{r: bufio.NewReader(&enc)})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round trip of %q: %q, %v", data, got, err)
		}

		ours, oerr := io.ReadAll(&chunkedReader{r: bufio.NewReader(bytes.NewReader(raw))})
		theirs, terr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(raw)))
		if oerr == nil && terr == nil && !bytes.Equal(ours, theirs) {
			t.Fatalf("%q: read %q, net/http %q", raw, ours, theirs)
		}
	})
}

// FuzzReadResponse: any answer, however garbled, is read or refused
// without a panic, and a body never yields more than was sent.
func FuzzReadResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 Not Found\r\n\r\nx"))
	f.Fuzz(func(t *testing.T, in []byte) {
		resp, err := ReadResponse(bytes.NewReader(in), "GET")
		if err != nil {
			return
		}
		b, _ := io.ReadAll(resp.Body)
		if len(b) > len(in) {
			t.Fatalf("%d bytes of body from %d of input", len(b), len(in))
		}
	})
}
