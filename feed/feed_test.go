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
