package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
)

// RaftStreamLayer is a raft.StreamLayer over libp2p streams on ProtoRaft.
// A raft.ServerAddress is a peer ID string (peer.ID.String()); the host
// must know the peer's addresses (a connection or peerstore entry).
type RaftStreamLayer struct {
	h         host.Host
	conns     chan net.Conn
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
}

var _ raft.StreamLayer = (*RaftStreamLayer)(nil)

// NewRaftStreamLayer registers the ProtoRaft handler on h. Close removes it.
func NewRaftStreamLayer(h host.Host) *RaftStreamLayer {
	ctx, cancel := context.WithCancel(context.Background())
	l := &RaftStreamLayer{h: h, conns: make(chan net.Conn), ctx: ctx, cancel: cancel}
	h.SetStreamHandler(wire.ProtoRaft, func(s network.Stream) {
		select {
		case l.conns <- newStreamConn(s):
		case <-l.ctx.Done():
			_ = s.Reset()
		}
	})
	return l
}

// Accept waits for the next inbound Raft connection.
func (l *RaftStreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.ctx.Done():
		return nil, errors.New("raft stream layer closed")
	}
}

// Close stops accepting Raft connections.
func (l *RaftStreamLayer) Close() error {
	l.closeOnce.Do(func() {
		l.h.RemoveStreamHandler(wire.ProtoRaft)
		l.cancel()
	})
	return nil
}

// Addr returns this host's Raft address: its peer ID.
func (l *RaftStreamLayer) Addr() net.Addr { return peerAddr(l.h.ID()) }

// Dial opens a Raft connection to the peer whose ID is address.
func (l *RaftStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	pid, err := peer.Decode(string(address))
	if err != nil {
		return nil, fmt.Errorf("raft dial: address %q is not a peer ID: %w", address, err)
	}
	ctx, cancel := context.WithCancel(l.ctx)
	defer cancel()
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	s, err := l.h.NewStream(ctx, pid, wire.ProtoRaft)
	if err != nil {
		return nil, fmt.Errorf("raft dial %s: %w", pid, ExplainDialError(err))
	}
	return newStreamConn(s), nil
}

// peerAddr is a net.Addr naming a peer.
type peerAddr peer.ID

func (a peerAddr) Network() string { return "libp2p" }
func (a peerAddr) String() string  { return peer.ID(a).String() }

// streamConn adapts a network.Stream to net.Conn.
type streamConn struct {
	network.Stream
}

func newStreamConn(s network.Stream) *streamConn { return &streamConn{Stream: s} }

func (c *streamConn) LocalAddr() net.Addr  { return peerAddr(c.Conn().LocalPeer()) }
func (c *streamConn) RemoteAddr() net.Addr { return peerAddr(c.Conn().RemotePeer()) }

// NewRaftTransport returns a raft.NetworkTransport over libp2p streams on h
// (see RaftStreamLayer). maxPool is the number of pooled connections per
// peer; timeout bounds each I/O (snapshots scale it). Closing the transport
// removes the stream handler.
func NewRaftTransport(h host.Host, logger *slog.Logger, maxPool int, timeout time.Duration) (*raft.NetworkTransport, error) {
	if h == nil {
		return nil, errors.New("raft transport: nil host")
	}
	if maxPool <= 0 {
		maxPool = 3
	}
	layer := NewRaftStreamLayer(h)
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: maxPool,
		Timeout: timeout,
		Logger:  NewHCLogger(componentLogger(logger), "raft-net"),
	}), nil
}

// NewHCLogger adapts a slog.Logger to the hclog.Logger that hashicorp/raft
// wants (raft.Config.Logger, transports). name is added as field "sub".
func NewHCLogger(l *slog.Logger, name string) hclog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return newHCLogger(l, name, nil)
}

func newHCLogger(base *slog.Logger, name string, implied []any) *hcLogger {
	l := base
	if name != "" {
		l = base.With("sub", name)
	}
	return &hcLogger{base: base, l: l, name: name, implied: implied}
}

type hcLogger struct {
	base    *slog.Logger // without the name
	l       *slog.Logger
	name    string
	implied []any
}

var _ hclog.Logger = (*hcLogger)(nil)

func hcToSlog(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	if level == hclog.Warn && expectedRaftWarning(msg, args) {
		level = hclog.Info
	}
	h.l.Log(context.Background(), hcToSlog(level), msg, hcArgs(args)...)
}

// expectedRaftWarning reports whether a warning of Raft's says nothing
// is wrong, so that it is logged as information: every start of a head
// logged two warnings. Raft warns that pre-vote is off because this
// transport does not implement it (a property of ducc's Raft transport,
// not a fault), and that the heartbeat timeout was reached when a member
// that never had a leader starts its first election (with a leader known
// before, the warning stays: the leader was lost).
func expectedRaftWarning(msg string, args []any) bool {
	switch msg {
	case "pre-vote is disabled because it is not supported by the Transport":
		return true
	case "heartbeat timeout reached, starting election":
		for i := 0; i+1 < len(args); i += 2 {
			if args[i] == "last-leader-addr" {
				return fmt.Sprint(args[i+1]) == ""
			}
		}
	}
	return false
}

// hcArgs formats the values hclog formats itself (hclog.Fmt, its number
// formats), which slog would print as their Go structure: Raft logs its
// configuration as hclog.Fmt("%+v", servers), and the line showed a
// literal "%+v".
func hcArgs(args []any) []any {
	var out []any
	for i, a := range args {
		var v any
		switch x := a.(type) {
		case hclog.Format:
			if len(x) == 0 {
				continue
			}
			f, ok := x[0].(string)
			if !ok {
				continue
			}
			v = fmt.Sprintf(f, x[1:]...)
		case hclog.Hex:
			v = fmt.Sprintf("0x%x", int(x))
		case hclog.Octal:
			v = fmt.Sprintf("0%o", int(x))
		case hclog.Binary:
			v = fmt.Sprintf("0b%b", int(x))
		case hclog.Quote:
			v = fmt.Sprintf("%q", string(x))
		default:
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
	}
	if out == nil {
		return args
	}
	return out
}
func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) enabled(level hclog.Level) bool {
	return h.l.Enabled(context.Background(), hcToSlog(level))
}
func (h *hcLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcLogger) ImpliedArgs() []any { return h.implied }
func (h *hcLogger) With(args ...any) hclog.Logger {
	return newHCLogger(h.base.With(args...), h.name, append(append([]any(nil), h.implied...), args...))
}
func (h *hcLogger) Name() string { return h.name }
func (h *hcLogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return newHCLogger(h.base, name, h.implied)
}
func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	return newHCLogger(h.base, name, h.implied)
}

// SetLevel is a no-op: the slog handler decides.
func (h *hcLogger) SetLevel(hclog.Level) {}

func (h *hcLogger) GetLevel() hclog.Level {
	switch {
	case h.IsTrace():
		return hclog.Trace
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.l.Handler(), slog.LevelInfo)
}

func (h *hcLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}
