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
	"os"
	"path/filepath"

	"github.com/ducc-project/ducc/cmd/internal/sockhttp"
	"github.com/ducc-project/ducc/wire"
)

// client talks to the local agent over its Unix socket.
type client struct {
	socket string
	as     string
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
	}
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

// jsonAppender is a request that writes its own JSON, as json.Marshal
// would (wire.RunRequest): without the reflection that building
// encoding/json's encoder for its type costs on every CLI call.
type jsonAppender interface{ AppendJSON([]byte) []byte }

// do sends one request to the agent (sockhttp: the small ducc does not
// link net/http) and returns its answer if it is 200 OK; any other status
// is the agent's error.
func (c *client) do(ctx context.Context, method, path string, body any) (*sockhttp.Response, error) {
	var b []byte
	if a, ok := body.(jsonAppender); ok {
		b = a.AppendJSON(nil)
	} else if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	var h sockhttp.Header
	if c.as != "" {
		h = sockhttp.Header{{wire.AsHeader, c.as}}
	}
	resp, err := sockhttp.Do(ctx, c.socket, method, path, h, b)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, c.unreachable(err)
		}
		if errors.Is(err, sockhttp.ErrMalformedRequest) {
			return nil, usageErr("cannot send this to the agent: %v (a line break in --as?)", err)
		}
		return nil, &exitError{code: exitUnreachable, msg: fmt.Sprintf("the agent at %s did not answer: %v", c.socket, err)}
	}
	if resp.StatusCode != 200 {
		defer resp.Body.Close()
		return nil, apiError(resp)
	}
	return resp, nil
}

func apiError(resp *sockhttp.Response) error {
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
	r, err := c.do(ctx, "POST", wire.PathCall+method, req)
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
	sc.Buffer(nil, 4<<20) // grows from 4 KiB as long lines need: most streams are short
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
