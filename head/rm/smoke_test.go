package rm

import (
	"strings"
	"testing"
)

func TestSmoke(t *testing.T) {
	cfg := flat(DefaultConfig())
	in := Input{Now: t0, Config: cfg, Nodes: mkNodes("n", 4, 16*GiB), Work: []Work{
		job(1, "alice", "normal", 4*GiB, 100),
		job(2, "bob", "normal", 2*GiB, 100),
		{ID: 3, Kind: Service, User: "carol", Class: "fixed", Memory: 8 * GiB, ServiceID: "db"},
		{ID: 4, Kind: Reservation, User: "dave", Class: "reserve", Memory: 16 * GiB},
		{ID: 5, Kind: ManagedReservation, User: "eve", Class: "fixed", Memory: 64 * GiB},
	}}
	p := Schedule(in)
	t.Log(strings.Join(p.Trace, "\n"))
	for _, x := range p.Pending {
		t.Logf("pending %d: %s", x.WorkID, x.Reason)
	}
}
