package feed

import (
	"context"
	"testing"
)

func TestFeeders(t *testing.T) {
	s := New(Config{})
	f := &s.feeders
	ctx, cancel := context.WithCancel(context.Background())
	if !f.add("1.1", cancel) || f.add("1.1", func() {}) {
		t.Error("add twice")
	}
	f.stop("1.2") // none: nothing happens
	if ctx.Err() != nil {
		t.Error("stopped the wrong feeder")
	}
	f.stop("1.1")
	if ctx.Err() == nil {
		t.Error("the feeder was not stopped")
	}
	if !f.add("1.1", func() {}) {
		t.Error("add after stop")
	}
}

// TestPumps: a driver's pump is registered once; one that will never run
// is forgotten; the exit of a driver whose pump ended returns its log's
// owner, once.
func TestPumps(t *testing.T) {
	s := New(Config{})
	p := s.RegisterPump("1.1", 1000)
	if p == nil || s.RegisterPump("1.1", 1000) != nil {
		t.Fatal("registered twice")
	}
	p.Cancel() // its driver did not start
	if _, ok := s.DriverExited("1.1"); ok {
		t.Error("a cancelled pump is still registered")
	}
	if p = s.RegisterPump("1.1", 1000); p == nil {
		t.Fatal("not registered again after a cancel")
	}
	close(p.done) // as a pump that ended
	if uid, ok := s.DriverExited("1.1"); !ok || uid != 1000 {
		t.Errorf("driver exited: uid %d, %v; want 1000, true", uid, ok)
	}
	if _, ok := s.DriverExited("1.1"); ok {
		t.Error("a driver's exit finished its pump twice")
	}
}
