package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/wire"
)

// The members of the head group: what `ducc status` shows of them,
// `ducc admin remove-server`, and the removal of dead members once others
// stand in for them (the dead-server cleanup of Consul's and Nomad's
// autopilot).
//
// Whether a member is reachable is judged from its heartbeats, which every
// head-eligible agent publishes with its Raft state: a member not heard
// from for unreachableAfter is Unreachable.

// unreachableAfter is how long a member of the head group may be silent
// before it counts as unreachable: the node timeout, and at least a few
// heartbeats.
func (s *Server) unreachableAfter() time.Duration {
	return max(s.cfg.NodeTimeout, 3*s.cfg.Heartbeat+time.Second)
}

// member is a member of the head group and how long this server has not
// heard from it.
type member struct {
	wire.VoterInfo
	silent time.Duration
}

// voters lists the members of the head group with their state as this
// server sees them, in the order of the Raft configuration; nil when the
// configuration cannot be read.
func (s *Server) voters() []wire.VoterInfo {
	ms := s.members()
	out := make([]wire.VoterInfo, len(ms))
	for i, m := range ms {
		out[i] = m.VoterInfo
	}
	return out
}

// members is voters with the time each member has been silent: since its
// last heartbeat, or, when this server never heard from it, since it first
// saw it in the group's configuration.
func (s *Server) members() []member {
	fut := s.cand.Raft().GetConfiguration()
	if fut.Error() != nil {
		return nil
	}
	f := s.former
	now := f.now()
	self := s.cfg.Host.ID()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []member
	for _, srv := range fut.Configuration().Servers {
		m := member{VoterInfo: wire.VoterInfo{Peer: string(srv.ID), Voter: srv.Suffrage == raft.Voter, State: wire.VoterUnreachable}}
		p, _ := peer.Decode(m.Peer)
		first, ok := f.known[p]
		if !ok {
			first = now
			f.known[p] = now
		}
		e, heard := f.peers[p]
		switch {
		case p == self:
			m.Node, m.State, m.LastHeartbeat = s.cfg.Node, s.cand.Raft().State().String(), now.UnixMilli()
		case heard:
			m.Node, m.LastHeartbeat, m.silent = e.node, e.seen.UnixMilli(), now.Sub(e.seen)
			if m.silent <= s.unreachableAfter() {
				m.State = e.raft
			}
		default:
			m.silent = now.Sub(first)
		}
		out = append(out, m)
	}
	return out
}

// removeServer removes a member of the head group, named by node name or
// peer id, for `ducc admin remove-server`. It refuses what would leave the
// cluster without a head or remove a member that still runs.
func (s *Server) removeServer(h *head.Head, c wire.Caller, name string) (wire.RemoveServerReply, error) {
	if !h.IsAdmin(c) {
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage, "only root or an administrator may remove a member of the head group")
	}
	if name == "" {
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage, "name the member to remove: its node name or peer id (see 'ducc status')")
	}
	var all, match []wire.VoterInfo
	var silent time.Duration
	voters := 0
	for _, m := range s.members() {
		all = append(all, m.VoterInfo)
		if m.Peer == name || m.Node == name {
			match, silent = append(match, m.VoterInfo), m.silent
		}
		if m.Voter {
			voters++
		}
	}
	switch {
	case len(match) == 0:
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage,
			"%q is not a member of the head group; its members are %s (see 'ducc status'; a member the head has not heard from since it started is known by its peer id only)",
			name, describeMembers(all))
	case len(match) > 1:
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage,
			"several members of the head group are named %s (%s); give the peer id of the one to remove", name, describeMembers(match))
	}
	v := match[0]
	what := describeMember(v)
	if v.Voter && voters == 1 {
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage,
			"%s is the last voter of the head group; removing it would leave the cluster without a head. Add another head-eligible agent first", what)
	}
	if v.Peer == s.cfg.Host.ID().String() {
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage,
			"%s is the head; stop its agent so that another member becomes head, then run remove-server again", what)
	}
	if v.State != wire.VoterUnreachable {
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage,
			"%s is alive (its last heartbeat came %s ago); stop its agent first, then remove it (to start it again, set head.eligible: false or clear its data_dir/raft)",
			what, silent.Round(100*time.Millisecond))
	}
	if err := s.cand.RemoveServer(v.Peer); err != nil {
		return wire.RemoveServerReply{}, err
	}
	s.log.Info("removed a member from the head group on request", "member", what, "by", c.User)
	return wire.RemoveServerReply{Removed: v, Voters: s.voters()}, nil
}

// describeMember names a member for messages: "node (peer id)".
func describeMember(v wire.VoterInfo) string {
	if v.Node == "" {
		return v.Peer
	}
	return fmt.Sprintf("%s (%s)", v.Node, v.Peer)
}

func describeMembers(vs []wire.VoterInfo) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = describeMember(v)
	}
	return strings.Join(names, ", ")
}

// cleanupDeadServers removes, while this server leads, the voters that
// have been unreachable for longer than DeadServerCleanup, once others
// stand in for them: at least bootstrap_expect voters stay, and no more
// than a minority of the voters is removed at once. It runs when an agent
// joins the group and periodically (autopilot).
func (s *Server) cleanupDeadServers() {
	if s.cand.Head() == nil {
		return
	}
	self := s.cfg.Host.ID().String()
	var dead []member
	voters := 0
	for _, m := range s.members() {
		if !m.Voter {
			continue
		}
		voters++
		if m.Peer != self && m.State == wire.VoterUnreachable && m.silent > s.cfg.DeadServerCleanup {
			dead = append(dead, m)
		}
	}
	if len(dead) == 0 {
		return
	}
	if voters-len(dead) < s.cfg.BootstrapExpect {
		return // wait for a replacement to join
	}
	if len(dead) > (voters-1)/2 {
		s.log.Warn("too many members of the head group are unreachable to remove them automatically; remove them with 'ducc admin remove-server'",
			"unreachable", len(dead), "voters", voters)
		return
	}
	for _, m := range dead {
		if err := s.cand.RemoveServer(m.Peer); err != nil {
			s.log.Warn("cannot remove a dead member of the head group", "member", describeMember(m.VoterInfo), "err", err)
			return
		}
		s.log.Info("removed a dead member of the head group", "member", describeMember(m.VoterInfo),
			"silent_for", m.silent.Round(time.Second), "dead_server_cleanup", s.cfg.DeadServerCleanup)
	}
}

// autopilot runs cleanupDeadServers every so often until ctx ends, so a
// member that dies after its replacement joined is removed too.
func (s *Server) autopilot(ctx context.Context) {
	every := min(max(s.cfg.DeadServerCleanup/10, time.Second), 30*time.Second)
	t := time.NewTimer(tick.Until(time.Now(), every))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(tick.Until(time.Now(), every))
			s.cleanupDeadServers()
		}
	}
}
