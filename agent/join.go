package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/sec"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/multiformats/go-multiaddr"

	"github.com/ducc-project/ducc/wire/p2p"
)

// joinTarget is one configured join address and what we learned of it.
type joinTarget struct {
	addr    multiaddr.Multiaddr // transport part, without /p2p
	id      peer.ID             // from the address, or learned on first contact
	learned bool                // id was learned, not configured: learn it again if the address answers with another
}

// joiner keeps this agent connected to the agents listed under join.
type joiner struct {
	a       *Agent
	targets []*joinTarget

	mu      sync.Mutex
	lastErr error // the last failure when no join peer is connected
}

func newJoiner(a *Agent) (*joiner, error) {
	j := &joiner{a: a}
	for _, s := range a.cfg.Join {
		ma, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("join %q: %w", s, err)
		}
		t := &joinTarget{addr: ma}
		if info, err := peer.AddrInfoFromP2pAddr(ma); err == nil {
			t.addr, t.id = info.Addrs[0], info.ID
		}
		if t.id == a.host.ID() {
			continue // our own address in a shared config
		}
		j.targets = append(j.targets, t)
	}
	return j, nil
}

// err is the reason this agent is cut off from the cluster, or nil.
func (j *joiner) err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lastErr
}

// run dials every join target that is not connected: quickly until one
// answers, then every few seconds, so that a node that was down, or a
// cluster that started after this agent, is found again.
func (j *joiner) run(ctx context.Context) {
	if len(j.targets) == 0 {
		return
	}
	for {
		connected := j.round(ctx)
		wait := 5 * time.Second
		if connected == 0 {
			wait = 500 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// round dials the unconnected targets in parallel and returns how many
// targets are connected.
func (j *joiner) round(ctx context.Context) int {
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		connected int
		errs      []error
	)
	for _, t := range j.targets {
		if t.id != "" && j.a.host.Network().Connectedness(t.id) == network.Connected {
			connected++
			continue
		}
		wg.Add(1)
		go func(t *joinTarget) {
			defer wg.Done()
			err := j.dial(ctx, t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			connected++
		}(t)
	}
	wg.Wait()
	j.mu.Lock()
	prev := j.lastErr
	if connected == 0 && len(errs) > 0 {
		j.lastErr = errs[0]
		// A warning: the joiner keeps trying, and agents that stop (an
		// upgrade, a restart of the head) are unreachable for a while.
		// Dials cut short by this agent's own stop are not worth a line.
		if (prev == nil || prev.Error() != errs[0].Error()) && ctx.Err() == nil {
			j.a.log.Warn("cannot reach any agent to join through; retrying", "join", j.a.cfg.Join, "err", errs[0])
		}
	} else {
		j.lastErr = nil
		if prev != nil {
			j.a.log.Info("joined the cluster", "connected", connected)
		}
	}
	j.mu.Unlock()
	return connected
}

// dial connects to one target, learning its peer id first if the address
// did not name one.
func (j *joiner) dial(ctx context.Context, t *joinTarget) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if t.id == "" {
		id, err := j.learnID(ctx, t.addr)
		if err != nil {
			return err
		}
		if id == j.a.host.ID() {
			return nil
		}
		t.id, t.learned = id, true
	}
	if sw, ok := j.a.host.Network().(*swarm.Swarm); ok {
		sw.Backoff().Clear(t.id) // the agent may just have come back
	}
	err := j.a.host.Connect(ctx, peer.AddrInfo{ID: t.id, Addrs: []multiaddr.Multiaddr{t.addr}})
	if err != nil {
		var mismatch sec.ErrPeerIDMismatch
		if t.learned && errors.As(err, &mismatch) {
			t.id = "" // another agent answers there now (a reinstalled node): learn it again
		}
		return fmt.Errorf("join %s: %w", t.addr, p2p.ExplainJoinError(ctx, t.addr, err))
	}
	j.a.host.Peerstore().AddAddr(t.id, t.addr, peerstore.PermanentAddrTTL)
	return nil
}

// learnID finds the peer id of the agent at addr: a dial that names a peer
// id nobody has fails the Noise handshake with the real id in the error.
// Each call uses a fresh probe id: the targets are dialled in parallel,
// and dials of one peer id are merged by libp2p (every address in its
// peerstore entry is tried), so a shared probe could learn one agent's id
// for another agent's address.
func (j *joiner) learnID(ctx context.Context, addr multiaddr.Multiaddr) (peer.ID, error) {
	probe, err := newProbeID()
	if err != nil {
		return "", err
	}
	defer j.a.host.Peerstore().RemovePeer(probe)
	err = j.a.host.Connect(ctx, peer.AddrInfo{ID: probe, Addrs: []multiaddr.Multiaddr{addr}})
	var mismatch sec.ErrPeerIDMismatch
	if errors.As(err, &mismatch) {
		return mismatch.Actual, nil
	}
	if err == nil {
		return "", fmt.Errorf("join %s: the probe dial unexpectedly succeeded", addr)
	}
	return "", fmt.Errorf("join %s: %w", addr, p2p.ExplainJoinError(ctx, addr, err))
}

// newProbeID makes a peer id that nobody has.
func newProbeID() (peer.ID, error) {
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("join: probe identity: %w", err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("join: probe identity: %w", err)
	}
	return id, nil
}
