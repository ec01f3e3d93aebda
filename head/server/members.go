package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/head"
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

// voters lists the members of the head group with their state as this
// server sees them, in the order of the Raft configuration; nil when the
// configuration cannot be read.
func (s *Server) voters() []wire.VoterInfo {
	fut := s.cand.Raft().GetConfiguration()
	if fut.Error() != nil {
		return nil
	}
	f := s.former
	now := f.now()
	self := s.cfg.Host.ID()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wire.VoterInfo
	for _, srv := range fut.Configuration().Servers {
		v := wire.VoterInfo{Peer: string(srv.ID), Voter: srv.Suffrage == raft.Voter, State: wire.VoterUnreachable}
		if p, err := peer.Decode(v.Peer); err == nil && p == self {
			v.Node, v.State, v.LastHeartbeat = s.cfg.Node, s.cand.Raft().State().String(), now.UnixMilli()
		} else if e, ok := f.peers[p]; err == nil && ok {
			v.Node, v.LastHeartbeat = e.node, e.seen.UnixMilli()
			if now.Sub(e.seen) <= s.unreachableAfter() {
				v.State = e.raft
			}
		}
		out = append(out, v)
	}
	return out
}

// silentFor is how long this server has not heard from a member: since
// its last heartbeat, or since the server started when it never heard
// from it.
func (s *Server) silentFor(v wire.VoterInfo, now time.Time) time.Duration {
	if v.LastHeartbeat == 0 {
		return now.Sub(s.former.started)
	}
	return now.Sub(time.UnixMilli(v.LastHeartbeat))
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
	all := s.voters()
	var match []wire.VoterInfo
	voters := 0
	for _, v := range all {
		if v.Peer == name || v.Node == name {
			match = append(match, v)
		}
		if v.Voter {
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
	now := s.former.now()
	if v.State != wire.VoterUnreachable {
		return wire.RemoveServerReply{}, wire.Errorf(wire.CodeUsage,
			"%s is alive (its last heartbeat came %s ago); stop its agent first, then remove it (to start it again, set head.eligible: false or clear its data_dir/raft)",
			what, s.silentFor(v, now).Round(100*time.Millisecond))
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
	now := s.former.now()
	self := s.cfg.Host.ID().String()
	var dead []wire.VoterInfo
	voters := 0
	for _, v := range s.voters() {
		if !v.Voter {
			continue
		}
		voters++
		if v.Peer != self && v.State == wire.VoterUnreachable && s.silentFor(v, now) > s.cfg.DeadServerCleanup {
			dead = append(dead, v)
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
			"unreachable", describeMembers(dead), "voters", voters)
		return
	}
	for _, v := range dead {
		if err := s.cand.RemoveServer(v.Peer); err != nil {
			s.log.Warn("cannot remove a dead member of the head group", "member", describeMember(v), "err", err)
			return
		}
		s.log.Info("removed a dead member of the head group", "member", describeMember(v),
			"silent_for", s.silentFor(v, now).Round(time.Second), "dead_server_cleanup", s.cfg.DeadServerCleanup)
	}
}

// autopilot runs cleanupDeadServers every so often until ctx ends, so a
// member that dies after its replacement joined is removed too.
func (s *Server) autopilot(ctx context.Context) {
	every := min(max(s.cfg.DeadServerCleanup/10, time.Second), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.cleanupDeadServers()
		}
	}
}
