package p2p

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/wire"
)

// Gossipsub queue sizes. Gossipsub drops messages silently when a queue is
// full (the default is 32), and a head receives a heartbeat from every
// agent each interval.
const (
	pubsubPeerQueueSize     = 1024
	pubsubValidateQueueSize = 4096
	subscriptionBufferSize  = 4096
	// pubsubEnvelopeOverhead is room for the pubsub envelope around the
	// largest payload (topic, framing).
	pubsubEnvelopeOverhead = 64 << 10
)

// ducc topics all start with "ducc/"; a peer cannot make us track others.
var topicFilter = regexp.MustCompile(`^ducc/[a-z0-9/_.-]{1,64}$`)

// NewPubSub starts gossipsub on h with raised queue sizes, unsigned and
// anonymous messages identified by their content, a message size limit fit
// for heartbeats and a subscription filter that only admits ducc topics.
// It stops when ctx ends.
//
// Messages carry no author, sequence number or signature
// (pubsub.StrictNoSign with no author; messages that carry any of them are
// dropped). Membership is authenticated below gossipsub: only holders of
// the cluster key pass the private network's handshake, and Noise
// authenticates the peer id of every connection. What that leaves an
// attacker who holds the cluster key is in docs/decisions.md ("Unsigned
// gossip"). Every node of a cluster must use the same policy: a node that
// signs and one that does not drop each other's messages.
func NewPubSub(ctx context.Context, h host.Host, logger *slog.Logger) (*pubsub.PubSub, error) {
	logger = componentLogger(logger)
	// The router's heartbeat (mesh upkeep, gossip) ticks on the same
	// instants as ducc's own loops (package tick): an idle daemon then
	// wakes once a second for all of them.
	params := pubsub.DefaultGossipSubParams()
	params.HeartbeatInitialDelay = tick.Until(time.Now(), params.HeartbeatInterval)
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithGossipSubParams(params),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign),
		pubsub.WithNoAuthor(),
		pubsub.WithMessageIdFn(contentID),
		pubsub.WithPeerOutboundQueueSize(pubsubPeerQueueSize),
		pubsub.WithValidateQueueSize(pubsubValidateQueueSize),
		pubsub.WithMaxMessageSize(wire.MaxHeartbeatSize+pubsubEnvelopeOverhead),
		pubsub.WithSubscriptionFilter(pubsub.NewRegexpSubscriptionFilter(topicFilter)),
		pubsub.WithPeerExchange(false),
		// Send our own messages to every peer in the topic, not only to the
		// mesh: a freshly joined node has an empty mesh until the first
		// gossipsub heartbeat, and the head is connected to every agent.
		pubsub.WithFloodPublish(true),
		pubsub.WithLogger(slog.New(demoteTagBumps{logger.Handler()}).With("sub", "pubsub")),
	)
	if err != nil {
		return nil, fmt.Errorf("start gossipsub: %w", err)
	}
	return ps, nil
}

// demoteTagBumps logs gossipsub's "error bumping delivery tag" at debug
// level. Gossipsub raises a peer's connection-manager score for every
// message it delivers through a bounded queue; at a few thousand
// heartbeats a second the queue is full most of the time and each drop
// was a warning (about 4,000 a minute at 10,000 simulated nodes). A lost
// bump only makes a score lag, which nothing in ducc depends on.
type demoteTagBumps struct{ slog.Handler }

func (h demoteTagBumps) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug && r.Message == "error bumping delivery tag" {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoteTagBumps) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteTagBumps{h.Handler.WithAttrs(as)}
}

func (h demoteTagBumps) WithGroup(name string) slog.Handler {
	return demoteTagBumps{h.Handler.WithGroup(name)}
}

// contentID identifies a message by a hash of its topic and data: with no
// author and sequence number, the content is what tells two messages
// apart (every ducc message carries a sequence number or a time of its
// own). It must be the same function on every node, since gossip names
// messages by it.
func contentID(m *pb.Message) string {
	d := sha256.New()
	d.Write([]byte(m.GetTopic()))
	d.Write([]byte{0})
	d.Write(m.GetData())
	var sum [sha256.Size]byte
	return string(d.Sum(sum[:0])[:20])
}

// Topic is a gossipsub topic carrying CBOR-encoded values of type T, each at
// most a fixed size. Its validator rejects oversized or undecodable
// messages before they are forwarded to other peers.
type Topic[T any] struct {
	ps     *pubsub.PubSub
	topic  *pubsub.Topic
	name   string
	limit  int
	logger *slog.Logger
}

// JoinTopic joins topic name on ps for values of type T encoded in at most
// limit bytes (MaxHeartbeatSize for TopicHeartbeat, MaxAnnounceSize for
// TopicLeader) and registers its validator. A topic can be joined once per
// PubSub; Close leaves it.
func JoinTopic[T any](ps *pubsub.PubSub, name string, limit int, logger *slog.Logger) (*Topic[T], error) {
	logger = componentLogger(logger).With("topic", name)
	validator := func(_ context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
		if len(msg.Data) > limit {
			logger.Debug("pubsub: rejecting oversized message", "from", from.String(), "size", len(msg.Data), "limit", limit)
			return pubsub.ValidationReject
		}
		v := new(T)
		if err := wire.UnmarshalLimit(msg.Data, v, limit); err != nil {
			logger.Debug("pubsub: rejecting undecodable message", "from", from.String(), "err", err)
			return pubsub.ValidationReject
		}
		// Hand the decoded value on to one subscriber (Next), so that a
		// message is decoded once on the common path.
		msg.ValidatorData = &decoded[T]{v: v}
		return pubsub.ValidationAccept
	}
	if err := ps.RegisterTopicValidator(name, pubsub.ValidatorEx(validator), pubsub.WithValidatorInline(true)); err != nil {
		return nil, fmt.Errorf("topic %s: register validator: %w", name, err)
	}
	t, err := ps.Join(name)
	if err != nil {
		_ = ps.UnregisterTopicValidator(name)
		return nil, fmt.Errorf("topic %s: join: %w", name, err)
	}
	return &Topic[T]{ps: ps, topic: t, name: name, limit: limit, logger: logger}, nil
}

// Name returns the topic's name.
func (t *Topic[T]) Name() string { return t.name }

// Topic returns the underlying gossipsub topic (for ListPeers, events).
func (t *Topic[T]) Topic() *pubsub.Topic { return t.topic }

// Publish encodes v and publishes it. Values over the topic's limit are
// refused. Local subscribers receive it too.
func (t *Topic[T]) Publish(ctx context.Context, v T) error {
	data, err := wire.Marshal(v)
	if err != nil {
		return fmt.Errorf("publish on %s: %w", t.name, err)
	}
	if len(data) > t.limit {
		return fmt.Errorf("publish on %s: %w", t.name, &wire.TooLargeError{Size: uint64(len(data)), Limit: t.limit})
	}
	if err := t.topic.Publish(ctx, data); err != nil {
		return fmt.Errorf("publish on %s: %w", t.name, err)
	}
	return nil
}

// Subscribe subscribes to the topic. Cancel the subscription when done.
func (t *Topic[T]) Subscribe() (*Subscription[T], error) {
	sub, err := t.topic.Subscribe(pubsub.WithBufferSize(subscriptionBufferSize))
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", t.name, err)
	}
	return &Subscription[T]{sub: sub, limit: t.limit, logger: t.logger}, nil
}

// Close leaves the topic and unregisters its validator. All subscriptions
// must have been cancelled first.
func (t *Topic[T]) Close() error {
	err := t.topic.Close()
	if uerr := t.ps.UnregisterTopicValidator(t.name); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("close topic %s: %w", t.name, err)
	}
	return nil
}

// decoded is a value the topic's validator decoded; the first subscriber
// to take it owns it, any other decodes the message afresh.
type decoded[T any] struct {
	v     *T
	taken atomic.Bool
}

// take returns the decoded value to the first caller only.
func (d *decoded[T]) take() (*T, bool) {
	if d == nil || !d.taken.CompareAndSwap(false, true) {
		return nil, false
	}
	return d.v, true
}

// Subscription receives the values published on a Topic.
type Subscription[T any] struct {
	sub    *pubsub.Subscription
	limit  int
	logger *slog.Logger
}

// ErrSubscriptionCancelled is returned by Next after Cancel.
var ErrSubscriptionCancelled = errors.New("subscription cancelled")

// Next returns the next value and the peer that delivered it to this host
// (the connection's peer, authenticated by Noise): the publisher when it
// sent the message directly, else a peer that forwarded it, and this
// host's own id for a message published here. Messages are anonymous, so
// the publisher itself is not known. Undecodable or oversized
// messages are skipped (logged at debug level). It returns ctx's error when
// ctx ends and ErrSubscriptionCancelled after Cancel.
func (s *Subscription[T]) Next(ctx context.Context) (T, peer.ID, error) {
	var zero T
	for {
		msg, err := s.sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return zero, "", ctx.Err()
			}
			if errors.Is(err, pubsub.ErrSubscriptionCancelled) {
				return zero, "", ErrSubscriptionCancelled
			}
			return zero, "", fmt.Errorf("subscription to %s: %w", s.sub.Topic(), err)
		}
		// The validator's decoded value goes to one subscription; any
		// other decodes afresh, so that subscribers never share slices or
		// maps.
		if d, ok := msg.ValidatorData.(*decoded[T]); ok {
			if v, ok := d.take(); ok {
				return *v, msg.ReceivedFrom, nil
			}
		}
		var v T
		if err := wire.UnmarshalLimit(msg.Data, &v, s.limit); err != nil {
			s.logger.Debug("pubsub: skipping undecodable message", "from", msg.ReceivedFrom.String(), "size", len(msg.Data), "err", err)
			continue
		}
		return v, msg.ReceivedFrom, nil
	}
}

// Cancel ends the subscription.
func (s *Subscription[T]) Cancel() { s.sub.Cancel() }

// JoinHeartbeatTopic joins TopicHeartbeat (Heartbeat values, at most
// MaxHeartbeatSize bytes).
func JoinHeartbeatTopic(ps *pubsub.PubSub, logger *slog.Logger) (*Topic[wire.Heartbeat], error) {
	return JoinTopic[wire.Heartbeat](ps, wire.TopicHeartbeat, wire.MaxHeartbeatSize, logger)
}

// JoinLeaderTopic joins TopicLeader (LeaderAnnounce values, at most
// MaxAnnounceSize bytes).
func JoinLeaderTopic(ps *pubsub.PubSub, logger *slog.Logger) (*Topic[wire.LeaderAnnounce], error) {
	return JoinTopic[wire.LeaderAnnounce](ps, wire.TopicLeader, wire.MaxAnnounceSize, logger)
}
