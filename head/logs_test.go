package head_test

import (
	"testing"

	"github.com/ducc-project/ducc/wire"
)

func TestLogAccess(t *testing.T) {
	f := newFixture(t, options{})
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
	for _, c := range []wire.Caller{alice, root, carol} {
		var acc wire.LogAccess
		f.mustCall(t, wire.MethodLogAccess, c, wire.IDRequest{ID: id}, &acc)
		if acc.Work.ID != id || acc.Work.User != "alice" || acc.UID != alice.UID {
			t.Errorf("%s: got work %d of %s, uid %d; want work %d of alice, uid %d", c.User, acc.Work.ID, acc.Work.User, acc.UID, id, alice.UID)
		}
	}
	err := call(t, f.h, wire.MethodLogAccess, bob, wire.IDRequest{ID: id}, &wire.LogAccess{})
	wantErr(t, err, wire.CodeUsage, "private to alice", "only alice, root and the administrators (carol) may read them")
	// A user of the same uid on another node with another name is not the owner.
	err = call(t, f.h, wire.MethodLogAccess, wire.Caller{UID: alice.UID, User: "mallory"}, wire.IDRequest{ID: id}, &wire.LogAccess{})
	wantErr(t, err, wire.CodeUsage, "private to alice")
	err = call(t, f.h, wire.MethodLogAccess, alice, wire.IDRequest{ID: 99}, &wire.LogAccess{})
	wantErr(t, err, wire.CodeUsage, "no work with id 99")
}
