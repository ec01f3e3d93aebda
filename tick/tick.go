package tick

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Next returns the first instant that is a whole number of periods d past
// phase (in wall-clock time since the zero time, as time.Time.Truncate
// counts) and at least d/2 after now. The half period keeps a loop that
// woke a little early, or that ran late, from ticking twice in a row.
// Next(now, d, phase) for d <= 0 is now.
func Next(now time.Time, d, phase time.Duration) time.Time {
	if d <= 0 {
		return now
	}
	p := phase % d
	if p < 0 {
		p += d
	}
	return now.Add(d/2 - p).Truncate(d).Add(d + p)
}

// Until returns how long from now until this process's next tick of
// period d: Next(now, d, the process's phase), between d/2 and 3d/2 away,
// d on average.
func Until(now time.Time, d time.Duration) time.Duration {
	return Next(now, d, processPhase()).Sub(now)
}

// processPhase is this process's offset from whole periods, drawn once.
// The loops of one process share it and wake together; other processes,
// on other nodes, draw their own, so that a thousand agents whose clocks
// NTP keeps in step do not all send their heartbeat in the same
// millisecond of every second (the head would get them in one burst).
// It is a whole number of milliseconds below an hour: for periods that
// divide each other (1 s and 5 s), the longer one's ticks fall on the
// shorter one's.
var processPhase = sync.OnceValue(func() time.Duration {
	return time.Duration(rand.Int64N(3600*1000)) * time.Millisecond
})
