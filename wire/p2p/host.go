package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/x/rate"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/ducc-project/ducc/wire"
)

// Connection-manager watermarks: a head keeps a connection to every agent of
// a 5,000-node cluster, so trimming only starts well above that.
const (
	DefaultConnsLow  = 6000
	DefaultConnsHigh = 8000
)

// HostConfig configures NewHost.
type HostConfig struct {
	// Identity is the node's private key (LoadOrCreateIdentity). Nil means
	// an ephemeral identity (CLI tools, tests).
	Identity crypto.PrivKey
	// ClusterKey is the cluster pre-shared key; required.
	ClusterKey pnet.PSK
	// ListenAddrs are explicit TCP multiaddrs, e.g. /ip4/10.0.0.5/tcp/4001
	// or /ip4/127.0.0.1/tcp/0. Empty means the host only dials out.
	ListenAddrs []string
	// Logger; nil means slog.Default(). component=wire is added.
	Logger *slog.Logger
	// ConnsLow and ConnsHigh are the connection manager's watermarks;
	// zero means DefaultConnsLow / DefaultConnsHigh.
	ConnsLow, ConnsHigh int
	// DialTimeout bounds one dial including the security handshake; zero
	// means 10 s.
	DialTimeout time.Duration
}

func componentLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return l.With("component", "wire")
}

// NewHost starts a libp2p host for the cluster: TCP only (a private network
// rules out QUIC), Noise security, yamux, the cluster's private network, no
// default listen addresses, no relays, NAT port mapping, hole punching,
// AutoNAT probing or mDNS, fixed resource-manager limits and a connection
// manager. The host only dials addresses it is given.
func NewHost(ctx context.Context, cfg HostConfig) (host.Host, error) {
	if len(cfg.ClusterKey) != wire.ClusterKeySize {
		return nil, fmt.Errorf("new host: a cluster key of %d bytes is required (got %d bytes)", wire.ClusterKeySize, len(cfg.ClusterKey))
	}
	logger := componentLogger(cfg.Logger)
	low, high := cfg.ConnsLow, cfg.ConnsHigh
	if low <= 0 {
		low = DefaultConnsLow
	}
	if high <= low {
		high = max(DefaultConnsHigh, low+low/4)
	}
	dialTimeout := cfg.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 10 * time.Second
	}
	rm, err := newResourceManager()
	if err != nil {
		return nil, fmt.Errorf("new host: resource manager: %w", err)
	}
	cm, err := connmgr.NewConnManager(low, high, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("new host: connection manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.PrivateNetwork(cfg.ClusterKey),
		// No SO_REUSEPORT: with it every outbound connection leaves from
		// the listen port, and two agents dialing each other at once
		// collide on one 4-tuple (TCP simultaneous open), which libp2p
		// does not untangle; seen as Raft RPCs hanging between heads.
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()),
		libp2p.Security(noise.ID, noise.New),
		libp2p.DefaultMuxers,
		libp2p.ResourceManager(rm),
		libp2p.ConnectionManager(cm),
		libp2p.DisableRelay(),
		libp2p.ForceReachabilityPrivate(),
		libp2p.DisableIdentifyAddressDiscovery(),
		libp2p.DisableMetrics(),
		libp2p.WithDialTimeout(dialTimeout),
		libp2p.UserAgent("ducc"),
	}
	if cfg.Identity != nil {
		opts = append(opts, libp2p.Identity(cfg.Identity))
	}
	if len(cfg.ListenAddrs) == 0 {
		opts = append(opts, libp2p.NoListenAddrs)
	} else {
		opts = append(opts, libp2p.ListenAddrStrings(cfg.ListenAddrs...))
	}
	if err := ctx.Err(); err != nil {
		rm.Close()
		cm.Close()
		return nil, fmt.Errorf("new host: %w", err)
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		rm.Close()
		cm.Close()
		return nil, fmt.Errorf("new host (listen %v): %w", cfg.ListenAddrs, err)
	}
	logger.Info("libp2p host started", "peer", h.ID().String(), "addrs", h.Addrs())
	return h, nil
}

// newResourceManager builds generous fixed limits suitable for a cluster
// head with thousands of agents connected, instead of libp2p's defaults
// (sized from host memory, 8 connections per IP address).
func newResourceManager() (network.ResourceManager, error) {
	scaling := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&scaling)
	base := scaling.Scale(8<<30, 65536)
	lim := func(conns, streams, fd int, mem int64) rcmgr.ResourceLimits {
		return rcmgr.ResourceLimits{
			Conns: rcmgr.LimitVal(conns), ConnsInbound: rcmgr.LimitVal(conns), ConnsOutbound: rcmgr.LimitVal(conns),
			Streams: rcmgr.LimitVal(streams), StreamsInbound: rcmgr.LimitVal(streams), StreamsOutbound: rcmgr.LimitVal(streams),
			FD: rcmgr.LimitVal(fd), Memory: rcmgr.LimitVal64(mem),
		}
	}
	streamsOnly := func(streams int) rcmgr.ResourceLimits {
		return rcmgr.ResourceLimits{
			Streams: rcmgr.LimitVal(streams), StreamsInbound: rcmgr.LimitVal(streams), StreamsOutbound: rcmgr.LimitVal(streams),
		}
	}
	partial := rcmgr.PartialLimitConfig{
		System:              lim(20000, 200000, 60000, 4<<30),
		Transient:           lim(4000, 20000, 4000, 1<<30),
		PeerDefault:         lim(16, 8192, 16, 256<<20),
		ProtocolDefault:     streamsOnly(200000),
		ProtocolPeerDefault: streamsOnly(8192),
	}
	limits := partial.Build(base)
	return rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits),
		rcmgr.WithConnRateLimiters(newConnRateLimiter()),
		rcmgr.WithLimitPerSubnet(
			[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 32, ConnCount: 256}},
			[]rcmgr.ConnLimitPerSubnet{{PrefixLength: 56, ConnCount: 256}, {PrefixLength: 48, ConnCount: 4096}},
		))
}

// newConnRateLimiter bounds how fast one address may open connections
// (before the private network's handshake, so an outsider cannot make a
// host spend CPU on handshakes at will). libp2p's default, made for public
// networks, lets an address open 0.2 connections a second after a burst of
// 16: an agent that lost its connections and redials its join peers (each
// join probe is a connection of its own), Raft's dials and the RPC dials
// to a new head used it up, and the node then stayed cut off for minutes
// (seen in the namespace harness after the head was killed). Members of
// a cluster reconnect in bursts by design, so the bound is far above that.
func newConnRateLimiter() *rate.Limiter {
	perAddr := rate.Limit{RPS: 20, Burst: 400}
	return &rate.Limiter{
		// Loopback is never limited (dev clusters, ducc sim).
		NetworkPrefixLimits: []rate.PrefixLimit{
			{Prefix: netip.MustParsePrefix("127.0.0.0/8")},
			{Prefix: netip.MustParsePrefix("::1/128")},
		},
		SubnetRateLimiter: rate.SubnetLimiter{
			IPv4SubnetLimits: []rate.SubnetLimit{{PrefixLength: 32, Limit: perAddr}},
			IPv6SubnetLimits: []rate.SubnetLimit{{PrefixLength: 56, Limit: perAddr}},
			GracePeriod:      time.Minute,
		},
	}
}

// ErrClusterKeyMismatch is wrapped by ExplainDialError when a failure
// looks like a cluster key mismatch.
var ErrClusterKeyMismatch = errors.New("cannot join cluster: cluster key mismatch?")

type keyMismatchError struct{ cause error }

func (e *keyMismatchError) Error() string {
	return fmt.Sprintf("%v (%v)", ErrClusterKeyMismatch, e.cause)
}
func (e *keyMismatchError) Unwrap() []error { return []error{ErrClusterKeyMismatch, e.cause} }

// ExplainDialError turns the obscure errors that a wrong or missing cluster
// key causes (a failed security negotiation, an EOF or a timeout during the
// connection upgrade) into "cannot join cluster: cluster key mismatch?
// (<original error>)". Other errors, and nil, are returned unchanged.
func ExplainDialError(err error) error {
	if err == nil || errors.Is(err, ErrClusterKeyMismatch) {
		return err
	}
	if looksLikeKeyMismatch(err) {
		return &keyMismatchError{cause: err}
	}
	return err
}

// ExplainJoinError is ExplainDialError for a dial to a known address. A
// wrong cluster key often makes the dial hang until its deadline rather
// than fail: the private network's cipher turns the first bytes into
// garbage that the other side waits on. When the dial timed out but a
// plain TCP connection to addr succeeds at once, the host is there and
// the handshake is what fails, so the error says the key may be wrong.
func ExplainJoinError(ctx context.Context, addr multiaddr.Multiaddr, err error) error {
	err = ExplainDialError(err)
	if err == nil || errors.Is(err, ErrClusterKeyMismatch) ||
		!(errors.Is(err, context.DeadlineExceeded) || strings.Contains(strings.ToLower(err.Error()), "deadline exceeded")) {
		return err
	}
	na, nerr := manet.ToNetAddr(addr)
	if nerr != nil || na.Network() != "tcp" && na.Network() != "tcp4" && na.Network() != "tcp6" {
		return err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	var d net.Dialer
	c, derr := d.DialContext(pctx, na.Network(), na.String())
	if derr != nil {
		return err
	}
	c.Close()
	return &keyMismatchError{cause: fmt.Errorf("%s accepts TCP connections but the secure handshake did not finish: %w", addr, err)}
}

func looksLikeKeyMismatch(err error) bool {
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "failed to negotiate") || strings.Contains(msg, "message authentication failed") {
		return true
	}
	if strings.Contains(msg, "connection refused") || strings.Contains(msg, "no addresses") ||
		strings.Contains(msg, "no route to host") || strings.Contains(msg, "no good addresses") {
		return false
	}
	upgrading := strings.Contains(msg, "upgrade") || strings.Contains(msg, "security") ||
		strings.Contains(msg, "handshake") || strings.Contains(msg, "noise") ||
		strings.Contains(msg, "multistream")
	failed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(msg, "eof") || strings.Contains(msg, "timeout") ||
		strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "connection reset") ||
		strings.Contains(msg, "failed")
	return upgrading && failed
}

// LearnAddrs adds the listen addresses a peer published (in a heartbeat or
// a leader announcement) to h's peerstore for a while, so that h can dial
// it. Unparsable addresses are skipped; h's own addresses are not stored.
func LearnAddrs(h host.Host, p peer.ID, addrs []string) {
	if p == h.ID() {
		return
	}
	for _, s := range addrs {
		if ma, err := multiaddr.NewMultiaddr(s); err == nil {
			h.Peerstore().AddAddr(p, ma, learnedAddrTTL)
		}
	}
}

// learnedAddrTTL is how long a learned address is kept; peers publish
// theirs every heartbeat.
const learnedAddrTTL = 10 * time.Minute
