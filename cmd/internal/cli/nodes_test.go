package cli

import (
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
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

func TestSnapshotLine(t *testing.T) {
	tests := []struct {
		in   wire.SnapshotInfo
		want string
	}{
		{wire.SnapshotInfo{}, "none yet; 0 entries (0 B) since"},
		{wire.SnapshotInfo{Index: 17092, Size: 14359302, SinceEntries: 1190, SinceBytes: 1445888},
			"index 17092, 13.7 MiB; 1190 entries (1.4 MiB) since"},
		{wire.SnapshotInfo{Index: 9, Size: 2048, RestoredIndex: 9, RestoreMS: 152},
			"index 9, 2 KiB; 0 entries (0 B) since; restored index 9 in 152 ms"},
		{wire.SnapshotInfo{Index: 9, Size: 2048, SinceEntries: 1}, "index 9, 2 KiB; 1 entry (0 B) since"},
	}
	for _, tc := range tests {
		if got := snapshotLine(&tc.in); got != tc.want {
			t.Errorf("snapshotLine(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Counts of one are singular: "1 error", "1 instance", not "1 errors".
func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		word string
		want string
	}{
		{1, "error", "1 error"}, {0, "error", "0 errors"}, {2, "instance", "2 instances"}, {1, "instance", "1 instance"},
		{3, "process", "3 processes"}, {1, "class", "1 class"}, {2, "class", "2 classes"}, {2, "entry", "2 entries"}, {2, "key", "2 keys"},
	} {
		if got := units.Plural(tc.n, tc.word); got != tc.want {
			t.Errorf("units.Plural(%d, %q) = %q, want %q", tc.n, tc.word, got, tc.want)
		}
	}
}
