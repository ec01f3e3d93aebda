package agent

import (
	"slices"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// A desired state that replaces a queued one keeps its acknowledgements:
// the head sends each once (orch's delivered).
func TestAcceptDesiredKeepsAcks(t *testing.T) {
	a := &Agent{desire: make(chan wire.DesiredState, 1)}
	a.acceptDesired(wire.DesiredState{Version: 2, Ack: []string{"1.1", "2.1"}})
	a.acceptDesired(wire.DesiredState{Version: 3, Ack: []string{"2.1", "3.1"}})
	a.acceptDesired(wire.DesiredState{Version: 1, Ack: []string{"0.1"}}) // older: kept for its acks only
	ds := <-a.desire
	slices.Sort(ds.Ack)
	if ds.Version != 3 || !slices.Equal(ds.Ack, []string{"0.1", "1.1", "2.1", "3.1"}) {
		t.Errorf("queued %d %v; want version 3 with every acknowledgement", ds.Version, ds.Ack)
	}
}
