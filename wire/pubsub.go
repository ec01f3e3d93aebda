package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Gossipsub queue sizes. Gossipsub drops messages silently when a queue is
// full (the default is 32), and a head receives a heartbeat from every
// agent each interval.
const (
	pubsubPeerQueueSize     = 1024
	pubsubValidateQueueSize = 4096
	subscriptionBufferSize  = 4096
	// pubsubEnvelopeOverhead is room for the pubsub envelope around the
	// largest payload (signature, key, seqno, topic).
	pubsubEnvelopeOverhead = 64 << 10
)

// ducc topics all start with "ducc/"; a peer cannot make us track others.
var topicFilter = regexp.MustCompile(`^ducc/[a-z0-9/_.-]{1,64}$`)

// NewPubSub starts gossipsub on h with raised queue sizes, strict message
// signing, a message size limit fit for heartbeats and a subscription
// filter that only admits ducc topics. It stops when ctx ends.
func NewPubSub(ctx context.Context, h host.Host, logger *slog.Logger) (*pubsub.PubSub, error) {
	logger = componentLogger(logger)
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithPeerOutboundQueueSize(pubsubPeerQueueSize),
		pubsub.WithValidateQueueSize(pubsubValidateQueueSize),
		pubsub.WithMaxMessageSize(MaxHeartbeatSize+pubsubEnvelopeOverhead),
		pubsub.WithSubscriptionFilter(pubsub.NewRegexpSubscriptionFilter(topicFilter)),
		pubsub.WithPeerExchange(false),
		// Send our own messages to every peer in the topic, not only to the
		// mesh: a freshly joined node has an empty mesh until the first
		// gossipsub heartbeat, and the head is connected to every agent.
		pubsub.WithFloodPublish(true),
		pubsub.WithLogger(logger.With("sub", "pubsub")),
	)
	if err != nil {
		return nil, fmt.Errorf("start gossipsub: %w", err)
	}
	return ps, nil
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
		if err := UnmarshalLimit(msg.Data, v, limit); err != nil {
			logger.Debug("pubsub: rejecting undecodable message", "from", from.String(), "err", err)
			return pubsub.ValidationReject
		}
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
	data, err := Marshal(v)
	if err != nil {
		return fmt.Errorf("publish on %s: %w", t.name, err)
	}
	if len(data) > t.limit {
		return fmt.Errorf("publish on %s: %w", t.name, &TooLargeError{Size: uint64(len(data)), Limit: t.limit})
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

// Subscription receives the values published on a Topic.
type Subscription[T any] struct {
	sub    *pubsub.Subscription
	limit  int
	logger *slog.Logger
}

// ErrSubscriptionCancelled is returned by Next after Cancel.
var ErrSubscriptionCancelled = errors.New("subscription cancelled")

// Next returns the next value and the peer that published it (its signed
// author, not the peer that forwarded it). Undecodable or oversized
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
		// Decoded afresh for each subscription, so that subscribers never
		// share slices or maps.
		var v T
		if err := UnmarshalLimit(msg.Data, &v, s.limit); err != nil {
			s.logger.Debug("pubsub: skipping undecodable message", "from", msg.GetFrom().String(), "size", len(msg.Data), "err", err)
			continue
		}
		return v, msg.GetFrom(), nil
	}
}

// Cancel ends the subscription.
func (s *Subscription[T]) Cancel() { s.sub.Cancel() }

// JoinHeartbeatTopic joins TopicHeartbeat (Heartbeat values, at most
// MaxHeartbeatSize bytes).
func JoinHeartbeatTopic(ps *pubsub.PubSub, logger *slog.Logger) (*Topic[Heartbeat], error) {
	return JoinTopic[Heartbeat](ps, TopicHeartbeat, MaxHeartbeatSize, logger)
}

// JoinLeaderTopic joins TopicLeader (LeaderAnnounce values, at most
// MaxAnnounceSize bytes).
func JoinLeaderTopic(ps *pubsub.PubSub, logger *slog.Logger) (*Topic[LeaderAnnounce], error) {
	return JoinTopic[LeaderAnnounce](ps, TopicLeader, MaxAnnounceSize, logger)
}
