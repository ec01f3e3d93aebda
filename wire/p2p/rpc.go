package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
)

// The RPC protocol on a ProtoRPC stream: the client opens a stream, writes
// one Request frame (WriteMsg) and keeps its write side open; the server
// answers with one Response frame and closes. The client resets the stream
// to cancel the call, which cancels the handler's context. One call per
// stream; yamux makes streams cheap.

// Server-side time limits for the parts of a call that do not depend on
// the handler: reading the request and writing the response.
const (
	rpcRequestTimeout  = 30 * time.Second
	rpcResponseTimeout = time.Minute
)

// Handler serves one RPC. The returned value is encoded as the response
// body (nil means no body); an error becomes Response{Error, Code} (the
// code of a *CodedError, else CodeError). ctx is cancelled when the caller
// goes away (its context ends, the stream is reset or the host closes).
type Handler func(ctx context.Context, from peer.ID, req *wire.Request) (any, error)

// ServeOption configures Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	logger *slog.Logger
}

// WithServeLogger sets the logger of Serve (component=wire is added).
func WithServeLogger(l *slog.Logger) ServeOption {
	return func(c *serveConfig) { c.logger = l }
}

// Serve registers handler for ProtoRPC streams on h, replacing any previous
// handler. Each call runs in its own goroutine, owned by its stream. Use
// StopServing (or close the host) to stop. A host cannot call itself:
// whoever needs to uses CallLocal with the same handler.
func Serve(h host.Host, handler Handler, opts ...ServeOption) {
	cfg := serveConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	logger := componentLogger(cfg.logger)
	h.SetStreamHandler(wire.ProtoRPC, func(s network.Stream) {
		serveStream(s, handler, logger)
	})
}

// StopServing removes the ProtoRPC handler from h.
func StopServing(h host.Host) {
	h.RemoveStreamHandler(wire.ProtoRPC)
}

// CallLocal runs handler in process for a call from self, with the same
// encoding, size limits, panic recovery and error mapping as Call to a
// remote peer, so that both paths behave the same.
func CallLocal(ctx context.Context, handler Handler, self peer.ID, method string, caller wire.Caller, req, resp any, opts ...ServeOption) error {
	cfg := serveConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if err := ctx.Err(); err != nil {
		return &wire.CodedError{Code: wire.CodeUnreachable, Msg: fmt.Sprintf("%s: %v", method, err), Err: err}
	}
	r, err := newRequest(method, caller, req)
	if err != nil {
		return err
	}
	if err := checkFrameSize(&r); err != nil {
		return err
	}
	out := handle(ctx, handler, self, &r, componentLogger(cfg.logger))
	if err := ctx.Err(); err != nil {
		return &wire.CodedError{Code: wire.CodeUnreachable, Msg: fmt.Sprintf("%s: %v", method, err), Err: err}
	}
	if size, err := encodedSize(&out, &out.Body); err == nil && size > wire.MaxMessageSize {
		out = wire.Response{Error: fmt.Sprintf("%s: reply too large: %v", method, &wire.TooLargeError{Size: uint64(size), Limit: wire.MaxMessageSize}), Code: wire.CodeError}
	}
	return decodeResponse(method, self, &out, resp)
}

// newRequest encodes req into the envelope of a call.
func newRequest(method string, caller wire.Caller, req any) (wire.Request, error) {
	r := wire.Request{Method: method, Caller: caller}
	if req != nil {
		raw, err := wire.Marshal(req)
		if err != nil {
			return r, &wire.CodedError{Code: wire.CodeUsage, Msg: fmt.Sprintf("%s: %v", method, err), Err: err}
		}
		r.Body = raw
	}
	return r, nil
}

// checkFrameSize refuses, as a remote head would, a request whose frame is
// over wire.MaxMessageSize.
func checkFrameSize(r *wire.Request) error {
	size, err := encodedSize(r, &r.Body)
	if err != nil {
		return &wire.CodedError{Code: wire.CodeUsage, Msg: fmt.Sprintf("%s: %v", r.Method, err), Err: err}
	}
	if size > wire.MaxMessageSize {
		tl := &wire.TooLargeError{Size: uint64(size), Limit: wire.MaxMessageSize}
		return &wire.CodedError{Code: wire.CodeUsage, Msg: fmt.Sprintf("%s: request too large: %v", r.Method, tl), Err: tl}
	}
	return nil
}

func serveStream(s network.Stream, handler Handler, logger *slog.Logger) {
	from := s.Conn().RemotePeer()
	_ = s.SetReadDeadline(time.Now().Add(rpcRequestTimeout))
	var req wire.Request
	if err := wire.ReadMsg(s, &req, wire.MaxMessageSize); err != nil {
		logger.Debug("rpc: bad request", "peer", from.String(), "err", err)
		resp := wire.Response{Error: fmt.Sprintf("bad request: %v", err), Code: wire.CodeUsage}
		_ = s.SetWriteDeadline(time.Now().Add(rpcResponseTimeout))
		if wire.WriteMsg(s, &resp) == nil {
			_ = s.Close()
		} else {
			_ = s.Reset()
		}
		return
	}
	_ = s.SetReadDeadline(time.Time{})

	// The client keeps its write side open until it has the response, so
	// a read that fails means it went away (stream reset, connection lost,
	// host closed): the handler's context ends. A clean half-close (EOF)
	// only ends the watch. Closing the stream below unblocks the read, so
	// the watcher never outlives this function.
	ctx, cancel := context.WithCancel(context.Background())
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		var b [1]byte
		if _, err := s.Read(b[:]); !errors.Is(err, io.EOF) {
			cancel() // reset, or bytes after the request: a protocol violation
		}
	}()
	defer func() {
		cancel()
		<-watcherDone
	}()

	start := time.Now()
	resp := handle(ctx, handler, from, &req, logger)
	if ctx.Err() != nil {
		logger.Debug("rpc: caller went away", "peer", from.String(), "method", req.Method, "duration", time.Since(start))
		_ = s.Reset()
		return
	}
	_ = s.SetWriteDeadline(time.Now().Add(rpcResponseTimeout))
	if werr := wire.WriteMsg(s, &resp); werr != nil {
		var tl *wire.TooLargeError
		if errors.As(werr, &tl) {
			resp = wire.Response{Error: fmt.Sprintf("%s: reply too large: %v", req.Method, tl), Code: wire.CodeError}
			werr = wire.WriteMsg(s, &resp)
		}
		if werr != nil {
			logger.Debug("rpc: writing response", "peer", from.String(), "method", req.Method, "err", werr)
			_ = s.Reset()
			return
		}
	}
	_ = s.Close()
	logger.Debug("rpc: served", "peer", from.String(), "method", req.Method, "duration", time.Since(start), "err", resp.Error)
}

// handle runs handler and builds the Response.
func handle(ctx context.Context, handler Handler, from peer.ID, req *wire.Request, logger *slog.Logger) wire.Response {
	body, err := callHandler(ctx, handler, from, req, logger)
	var resp wire.Response
	if err == nil && body != nil {
		raw, merr := wire.Marshal(body)
		if merr != nil {
			err = wire.Errorf(wire.CodeError, "%s: encoding the reply: %v", req.Method, merr)
		} else {
			resp.Body = raw
		}
	}
	if err != nil {
		resp = wire.Response{Error: err.Error(), Code: wire.ErrorCode(err)}
	}
	return resp
}

func callHandler(ctx context.Context, handler Handler, from peer.ID, req *wire.Request, logger *slog.Logger) (body any, err error) {
	defer func() {
		if r := recover(); r != nil {
			logger.Error("rpc: handler panicked", "method", req.Method, "peer", from.String(), "panic", r, "stack", string(debug.Stack()))
			body, err = nil, wire.Errorf(wire.CodeError, "%s: internal error in the handler (see the head's log)", req.Method)
		}
	}()
	return handler(ctx, from, req)
}

// Call sends one request for method to peer to and decodes the reply body
// into resp (a pointer; nil to ignore the body). req is encoded into the
// Request body (nil for none). The call lasts as long as ctx: its deadline
// applies and cancelling it resets the stream, which cancels the handler's
// context on the other side. Every error is (or wraps) a *CodedError:
// a failure reported by the handler keeps its code, a failure to reach the
// peer has CodeUnreachable.
func Call(ctx context.Context, h host.Host, to peer.ID, method string, caller wire.Caller, req any, resp any) error {
	if err := ctx.Err(); err != nil {
		return &wire.CodedError{Code: wire.CodeUnreachable, Msg: fmt.Sprintf("%s to %s: %v", method, shortID(to), err), Err: err}
	}
	r, err := newRequest(method, caller, req)
	if err != nil {
		return err
	}
	s, err := h.NewStream(ctx, to, wire.ProtoRPC)
	if err != nil {
		err = ExplainDialError(err)
		return &wire.CodedError{Code: wire.CodeUnreachable, Msg: fmt.Sprintf("%s: cannot reach %s: %v", method, shortID(to), err), Err: errors.Join(wire.ErrNotDelivered, err)}
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if d, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(d)
	}

	fail := func(what string, err error) error {
		_ = s.Reset()
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		} else if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			// the stream deadline fired a moment before ctx's timer
			err = context.DeadlineExceeded
		}
		return &wire.CodedError{Code: wire.CodeUnreachable, Msg: fmt.Sprintf("%s to %s: %s: %v", method, shortID(to), what, err), Err: err}
	}
	if err := wire.WriteMsg(s, &r); err != nil {
		var tl *wire.TooLargeError
		if errors.As(err, &tl) {
			_ = s.Reset()
			return &wire.CodedError{Code: wire.CodeUsage, Msg: fmt.Sprintf("%s: request too large: %v", method, tl), Err: err}
		}
		return fail("sending request", err)
	}
	var out wire.Response
	if err := wire.ReadMsg(s, &out, wire.MaxMessageSize); err != nil {
		return fail("reading response", err)
	}
	_ = s.Close()
	return decodeResponse(method, to, &out, resp)
}

func decodeResponse(method string, to peer.ID, out *wire.Response, resp any) error {
	if out.Error != "" || out.Code != 0 {
		code := out.Code
		if code == 0 {
			code = wire.CodeError
		}
		msg := out.Error
		if msg == "" {
			msg = fmt.Sprintf("%s failed with code %d", method, code)
		}
		return &wire.CodedError{Code: code, Msg: msg}
	}
	if resp != nil && len(out.Body) > 0 {
		if err := wire.Unmarshal(out.Body, resp); err != nil {
			return &wire.CodedError{Code: wire.CodeError, Msg: fmt.Sprintf("%s: reply from %s: %v", method, shortID(to), err), Err: err}
		}
	}
	return nil
}

func shortID(p peer.ID) string { return p.String() }

// encodedSize is len(wire.Marshal(v)) for an envelope v whose raw body is
// *body, without encoding the body again: the CBOR library copies a raw
// body and checks it is well formed on every encoding, which for a local
// call's batch of items cost as much as encoding it. v is encoded with a
// one-byte body in its place, then the body's length is added.
func encodedSize(v any, body *cbor.RawMessage) (int, error) {
	if len(*body) == 0 {
		raw, err := wire.Marshal(v)
		return len(raw), err
	}
	saved := *body
	*body = cbor.RawMessage{0xf6} // CBOR null, one byte
	raw, err := wire.Marshal(v)
	*body = saved
	return len(raw) - 1 + len(saved), err
}
