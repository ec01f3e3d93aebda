package main

import (
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

func TestVoterState(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tests := []struct {
		v    wire.VoterInfo
		want string
	}{
		{wire.VoterInfo{State: "Leader", Voter: true}, "Leader"},
		{wire.VoterInfo{State: "Follower"}, "Follower (non-voter)"},
		{wire.VoterInfo{State: wire.VoterUnreachable, Voter: true, LastHeartbeat: now.Add(-90 * time.Second).UnixMilli()}, "Unreachable, last heartbeat 1m30s ago"},
		{wire.VoterInfo{State: wire.VoterUnreachable, Voter: true}, "Unreachable, no heartbeat since this head started"},
	}
	for _, tc := range tests {
		if got := voterState(tc.v, now); got != tc.want {
			t.Errorf("voterState(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := voterNames([]wire.VoterInfo{{Node: "h1", State: "Leader"}, {Peer: "12D3", State: wire.VoterUnreachable}}); got != "h1 (Leader), 12D3 (Unreachable)" {
		t.Errorf("voterNames: %q", got)
	}
}
