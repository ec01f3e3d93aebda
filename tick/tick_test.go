package tick

import (
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	base := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	tests := []struct {
		now   time.Duration // after base
		d     time.Duration
		phase time.Duration
		want  time.Duration // after base
	}{
		{0, time.Second, 0, time.Second},
		{100 * ms, time.Second, 0, time.Second},
		{499 * ms, time.Second, 0, time.Second},
		{500 * ms, time.Second, 0, 2 * time.Second}, // less than half a period left: the one after
		{999 * ms, time.Second, 0, 2 * time.Second},
		{time.Second, time.Second, 0, 2 * time.Second},
		{1200 * ms, 5 * time.Second, 0, 5 * time.Second},
		{3 * time.Second, 5 * time.Second, 0, 10 * time.Second},
		{700 * ms, 0, 0, 700 * ms},
		{0, time.Second, 300 * ms, 1300 * ms}, // 300 ms is less than half a period away
		{0, time.Second, 800 * ms, 800 * ms},
		{900 * ms, time.Second, 300 * ms, 2300 * ms}, // 1.3 s is 400 ms away: the one after
		{0, time.Second, 2300 * ms, 1300 * ms},       // the phase counts modulo the period
		{0, time.Second, -200 * ms, 800 * ms},
		{0, 5 * time.Second, 3300 * ms, 3300 * ms},
	}
	for _, tt := range tests {
		now := base.Add(tt.now)
		got := Next(now, tt.d, tt.phase)
		if want := base.Add(tt.want); !got.Equal(want) {
			t.Errorf("Next(base+%v, %v, %v) = base+%v, want base+%v", tt.now, tt.d, tt.phase, got.Sub(base), tt.want)
		}
		if u := got.Sub(now); tt.d > 0 && (u < tt.d/2 || u > 3*tt.d/2) {
			t.Errorf("Next(base+%v, %v, %v) is %v away, outside [d/2, 3d/2]", tt.now, tt.d, tt.phase, u)
		}
	}
}

// TestCommonInstants checks the point of the package: loops that started
// at different moments, and whose work takes different times, wake on the
// same instants (whole seconds past the phase), one period apart; a loop
// of five seconds wakes on some of them.
func TestCommonInstants(t *testing.T) {
	base := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	phase := 1234567 * time.Millisecond
	onTick := func(at time.Time) bool { return (at.Sub(base)-phase%time.Second)%time.Second == 0 }
	for _, l := range []struct{ start, work, d time.Duration }{
		{130 * time.Millisecond, 3 * time.Millisecond, time.Second},
		{870 * time.Millisecond, 40 * time.Millisecond, time.Second},
		{999 * time.Millisecond, 0, time.Second},
		{420 * time.Millisecond, 10 * time.Millisecond, 5 * time.Second},
	} {
		at := base.Add(l.start)
		for i := 0; i < 5; i++ {
			next := Next(at.Add(l.work), l.d, phase)
			if !onTick(next) {
				t.Fatalf("loop of %v started at %v wakes at %v, not on the phase's seconds", l.d, l.start, next.Sub(base))
			}
			if i > 0 && next.Sub(at) != l.d {
				t.Fatalf("loop of %v started at %v: %v after its last tick", l.d, l.start, next.Sub(at))
			}
			at = next
		}
	}
}

// TestUntilSharesThePhase checks that Until gives one process's loops the
// same instants.
func TestUntilSharesThePhase(t *testing.T) {
	now := time.Now()
	a := now.Add(Until(now, time.Second))
	b := now.Add(Until(now, time.Second))
	later := now.Add(300 * time.Millisecond)
	c := later.Add(Until(later, time.Second))
	if !a.Equal(b) || (!c.Equal(a) && !c.Equal(a.Add(time.Second))) {
		t.Fatalf("Until gave %v, %v and %v (from 300 ms later)", a, b, c)
	}
	if p := processPhase(); p < 0 || p >= time.Hour || p%time.Millisecond != 0 {
		t.Fatalf("process phase %v", p)
	}
}
