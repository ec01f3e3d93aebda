package tick

import (
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	base := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	tests := []struct {
		now  time.Duration // after base
		d    time.Duration
		want time.Duration // after base
	}{
		{0, time.Second, time.Second},
		{100 * ms, time.Second, time.Second},
		{499 * ms, time.Second, time.Second},
		{500 * ms, time.Second, 2 * time.Second}, // less than half a period left: the one after
		{999 * ms, time.Second, 2 * time.Second},
		{time.Second, time.Second, 2 * time.Second},
		{1200 * ms, 5 * time.Second, 5 * time.Second},
		{3 * time.Second, 5 * time.Second, 10 * time.Second},
		{700 * ms, 0, 700 * ms},
	}
	for _, tt := range tests {
		now := base.Add(tt.now)
		got := Next(now, tt.d)
		if want := base.Add(tt.want); !got.Equal(want) {
			t.Errorf("Next(base+%v, %v) = base+%v, want base+%v", tt.now, tt.d, got.Sub(base), tt.want)
		}
		if u := Until(now, tt.d); tt.d > 0 && (u < tt.d/2 || u > 3*tt.d/2) {
			t.Errorf("Until(base+%v, %v) = %v, outside [d/2, 3d/2]", tt.now, tt.d, u)
		}
	}
}

// TestCommonInstants checks the point of the package: loops that started
// at different moments, and whose work takes different times, wake on the
// same instants (whole seconds here), one period apart.
func TestCommonInstants(t *testing.T) {
	base := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	for _, l := range []struct{ start, work time.Duration }{
		{130 * time.Millisecond, 3 * time.Millisecond},
		{870 * time.Millisecond, 40 * time.Millisecond},
		{999 * time.Millisecond, 0},
	} {
		at := base.Add(l.start)
		for i := 0; i < 5; i++ {
			next := Next(at.Add(l.work), time.Second)
			if next.Sub(base)%time.Second != 0 {
				t.Fatalf("loop started at %v wakes at %v", l.start, next.Sub(base))
			}
			if i > 0 && next.Sub(at) != time.Second {
				t.Fatalf("loop started at %v: %v after its last tick", l.start, next.Sub(at))
			}
			at = next
		}
	}
}
