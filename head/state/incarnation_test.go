package state

import (
	"testing"
)

// TestIncarnationAndIDFloor: the first name of an incarnation sticks, the
// id floor only raises the next id, and both survive a snapshot.
func TestIncarnationAndIDFloor(t *testing.T) {
	f := New()
	apply(t, f, 1, Command{Type: CmdIncarnation, Incarnation: "a1"}, Command{Type: CmdIncarnation, Incarnation: "b2"})
	apply(t, f, 2, Command{Type: CmdIDFloor, IDFloor: 18})
	apply(t, f, 3, Command{Type: CmdIDFloor, IDFloor: 5}) // lower: no effect
	res := apply(t, f, 4, Command{Type: CmdSubmit, Time: 4, Work: managed()})
	if res[0].Err != nil || res[0].ID != 18 {
		t.Fatalf("submission after the floor got %+v, want id 18", res[0])
	}
	g := roundTrip(t, f)
	for name, s := range map[string]*FSM{"applied": f, "restored": g} {
		s.View(func(v *View) {
			if v.Incarnation() != "a1" || v.NextID() != 19 {
				t.Errorf("%s: incarnation %q, next id %d; want a1, 19", name, v.Incarnation(), v.NextID())
			}
		})
	}
}
