package p2p

import (
	"context"
	"errors"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"

	"github.com/ducc-project/ducc/wire"
)

func newTestPubSub(t *testing.T, ctx context.Context, h host.Host) *pubsub.PubSub {
	t.Helper()
	ps, err := NewPubSub(ctx, h, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestPubSubLocalDelivery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := newTestHost(t, testKey(t))
	ps := newTestPubSub(t, ctx, h)
	topic, err := JoinTopic[wire.LeaderAnnounce](ps, wire.TopicLeader, wire.MaxAnnounceSize, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := topic.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	ann := wire.LeaderAnnounce{PeerID: h.ID().String(), Node: "n1", Term: 3, Time: 1}
	if err := topic.Publish(ctx, ann); err != nil {
		t.Fatal(err)
	}
	got, from, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if from != h.ID() || got.Term != 3 || got.Node != "n1" {
		t.Fatalf("got %+v from %s", got, from)
	}
	// Oversized values are refused at publish.
	big := wire.LeaderAnnounce{Node: string(make([]byte, wire.MaxAnnounceSize))}
	var tl *wire.TooLargeError
	if err := topic.Publish(ctx, big); !errors.As(err, &tl) {
		t.Fatalf("oversized publish: %v", err)
	}
	// Garbage published raw is rejected by the validator and never seen.
	if err := topic.Topic().Publish(ctx, []byte{0xff, 0x00}); err == nil {
		t.Fatal("garbage passed validation")
	}
	sub.Cancel()
	if _, _, err := sub.Next(ctx); !errors.Is(err, ErrSubscriptionCancelled) {
		t.Fatalf("after cancel: %v", err)
	}
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPubSubTwoHosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	psk := testKey(t)
	a, b := newTestHost(t, psk), newTestHost(t, psk)
	psA, psB := newTestPubSub(t, ctx, a), newTestPubSub(t, ctx, b)
	ta, err := JoinTopic[wire.Heartbeat](psA, wire.TopicHeartbeat, wire.MaxHeartbeatSize, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := JoinTopic[wire.Heartbeat](psB, wire.TopicHeartbeat, wire.MaxHeartbeatSize, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := tb.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	subA, err := ta.Subscribe() // a must be in the topic mesh too
	if err != nil {
		t.Fatal(err)
	}
	defer subA.Cancel()
	connect(t, a, b)
	waitTopicPeer(t, ctx, ta.Topic()) // a sees b in the topic
	hb := sampleHeartbeat()
	hb.Node = "a"
	if err := ta.Publish(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if _, _, err := subA.Next(ctx); err != nil {
		t.Fatal("local:", err)
	}
	got, from, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if from != a.ID() || got.Node != "a" || len(got.Procs) != 1 {
		t.Fatalf("got %+v from %s", got, from)
	}
}

// A peer without our validator publishes garbage, an oversized value and a
// signed message (as a node of a version that signs would): our side drops
// all three and still receives the valid message after them.
func TestPubSubRejectsRemoteGarbage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	psk := testKey(t)
	a, b := newTestHost(t, psk), newTestHost(t, psk)
	// LaxNoSign lets this peer publish one signed message below.
	psA, err := pubsub.NewGossipSub(ctx, a, pubsub.WithFloodPublish(true),
		pubsub.WithMessageSignaturePolicy(pubsub.LaxNoSign),
		pubsub.WithNoAuthor(), pubsub.WithMessageIdFn(contentID))
	if err != nil {
		t.Fatal(err)
	}
	psB := newTestPubSub(t, ctx, b)
	raw, err := psA.Join(wire.TopicLeader)
	if err != nil {
		t.Fatal(err)
	}
	rawSub, err := raw.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer rawSub.Cancel()
	tb, err := JoinTopic[wire.LeaderAnnounce](psB, wire.TopicLeader, wire.MaxAnnounceSize, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := tb.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	connect(t, a, b)
	waitTopicPeer(t, ctx, raw)
	good, _ := wire.Marshal(wire.LeaderAnnounce{Node: "good", Term: 1})
	signed, _ := wire.Marshal(wire.LeaderAnnounce{Node: "signed", Term: 1})
	big, _ := wire.Marshal(wire.LeaderAnnounce{Node: string(make([]byte, wire.MaxAnnounceSize))})
	sign := pubsub.WithSecretKeyAndPeerId(a.Peerstore().PrivKey(a.ID()), a.ID())
	for _, m := range []struct {
		data []byte
		opts []pubsub.PubOpt
	}{{data: []byte{0xff, 0x01}}, {data: big}, {data: signed, opts: []pubsub.PubOpt{sign}}, {data: good}} {
		if err := raw.Publish(ctx, m.data, m.opts...); err != nil {
			t.Fatal(err)
		}
	}
	got, from, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != "good" || from != a.ID() {
		t.Fatalf("got %+v from %s", got, from)
	}
}

func sampleHeartbeat() wire.Heartbeat {
	return wire.Heartbeat{
		Node: "n1", PeerID: "12D3KooW", Addrs: []string{"/ip4/127.0.0.1/tcp/4001"}, Seq: 7, Time: 1700000000000,
		MemTotal: 64 << 30, MemSchedulable: 60 << 30, MemUsed: 3 << 30, CPUs: 16, Load1: 0.5, DesiredVersion: 3,
		Procs:        []wire.ProcStatus{{ID: "17.1", WorkID: 17, State: wire.ProcRunning, PID: 1234, RSS: 1 << 30, ExitCode: 0}},
		HeadEligible: true, Version: "0.1",
	}
}

// waitTopicPeer waits until topic has a peer, until ctx ends.
func waitTopicPeer(t *testing.T, ctx context.Context, topic *pubsub.Topic) {
	t.Helper()
	for len(topic.ListPeers()) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("peers never joined the topic")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
