package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/ducc-project/ducc/wire"
)

// client talks to the local agent over its Unix socket.
type client struct {
	socket string
	as     string
	http   *http.Client
}

// findSocket picks the agent socket: --socket, $DUCC_SOCKET,
// /run/ducc/ducc.sock, else the default dev data dir.
func findSocket(flag string) string {
	if flag != "" {
		return flag
	}
	if s := os.Getenv("DUCC_SOCKET"); s != "" {
		return s
	}
	const system = wire.SystemSocket
	if _, err := os.Stat(system); err == nil {
		return system
	}
	return filepath.Join(wire.DefaultDevDataDir(), wire.SocketName)
}

func newClient(g *globals) *client {
	sock := findSocket(g.socket)
	return &client{
		socket: sock,
		as:     g.as,
		http:   &http.Client{Transport: unixTransport(sock)},
	}
}

// unixTransport sends each request on a connection of its own to the
// agent's socket and reads the response on the caller's goroutine. A CLI
// call makes one or a few requests: http.Transport's pool, and the two
// goroutines it runs per connection, cost more to set up than they save
// (about a tenth of a short `ducc run --detach`'s CPU, docs/performance.md).
type unixTransport string

// RoundTrip implements http.RoundTripper. The response body's Close
// closes the connection; so does the end of the request's context.
func (t unixTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(req.Context(), "unix", string(t))
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, err
	}
	stop := context.AfterFunc(req.Context(), func() { conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		if cerr := req.Context().Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	out := *req
	out.Close = true // the agent closes after the response: no pool to return to
	if err := out.Write(conn); err != nil {
		return fail(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fail(err)
	}
	resp.Body = &connBody{ReadCloser: resp.Body, ctx: req.Context(), conn: conn, stop: stop}
	return resp, nil
}

// connBody is a response body that closes its connection with it. A read
// cut short by the end of the request's context returns the context's
// error, as http.Transport's bodies do.
type connBody struct {
	io.ReadCloser
	ctx  context.Context
	conn net.Conn
	stop func() bool
}

func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
	}
	return n, err
}

func (b *connBody) Close() error {
	b.stop()
	err := b.ReadCloser.Close()
	b.conn.Close()
	return err
}

func (c *client) unreachable(err error) error {
	return &exitError{code: exitUnreachable, msg: fmt.Sprintf("no ducc agent answers at %s (%v); start one with 'ducc agent --dev' or set DUCC_SOCKET", c.socket, rootCause(err))}
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func (c *client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://ducc"+path, rd)
	if err != nil {
		return nil, err
	}
	if c.as != "" {
		req.Header.Set(wire.AsHeader, c.as)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.unreachable(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, apiError(resp)
	}
	return resp, nil
}

func apiError(resp *http.Response) error {
	var e wire.APIError
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("agent answered %s: %s", resp.Status, bytes.TrimSpace(b))}
	}
	if e.Code == 0 {
		e.Code = exitFailed
	}
	return &exitError{code: e.Code, msg: e.Error}
}

// call does one JSON call: POST /v1/<method>.
func (c *client) call(ctx context.Context, method string, req, resp any) error {
	r, err := c.do(ctx, http.MethodPost, wire.PathCall+method, req)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(resp); err != nil {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("bad answer from agent: %v", err)}
	}
	return nil
}

// stream reads an NDJSON event stream.
func (c *client) stream(ctx context.Context, method, path string, body any, fn func(wire.AttachEvent) error) error {
	r, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 0, 256<<10), 4<<20)
	for sc.Scan() {
		var ev wire.AttachEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return &exitError{code: exitFailed, msg: fmt.Sprintf("bad event from agent: %v", err)}
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return &exitError{code: exitUnreachable, msg: fmt.Sprintf("lost the agent while streaming: %v", err)}
	}
	return ctx.Err()
}

// PrintJSON writes v as indented JSON, as every --json answer.
func PrintJSON(w io.Writer, v any) error { return printJSON(w, v) }

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
