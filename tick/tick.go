package tick

import "time"

// Next returns the first multiple of d (in wall-clock time since the zero
// time, as time.Time.Truncate counts) that is at least d/2 after now. The
// half period keeps a loop that woke a little early, or that ran late,
// from ticking twice in a row. Next(now, d) for d <= 0 is now.
func Next(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return now
	}
	return now.Add(d / 2).Truncate(d).Add(d)
}

// Until returns how long from now until Next(now, d): between d/2 and
// 3d/2, d on average.
func Until(now time.Time, d time.Duration) time.Duration {
	return Next(now, d).Sub(now)
}
