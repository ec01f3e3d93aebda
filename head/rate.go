package head

import "time"

// rateWindow is how far back the items/s estimate looks.
const rateWindow = 10 * time.Second

// rate estimates a job's items per second at now from the chart samples
// the head takes of every live job on its own ticker (sampleCharts): the
// items finished since the newest sample at least rateWindow old, over
// the time since; a job without a sample that old is measured from its
// oldest sample, and one without samples from its start. The estimate
// depends on the job, not on who asks or how often: it used to come from
// samples taken whenever the job was shown, and read 0.0/s at the first
// look at a running job and when looks came close together.
func (h *Head) rate(id uint64, done int, startedAt int64) float64 {
	now := h.cfg.Now()
	at, base, ok := h.charts.before(id, now.Add(-rateWindow).UnixMilli())
	if !ok || startedAt > at {
		if startedAt == 0 {
			return 0
		}
		at, base = startedAt, 0
	}
	dt := now.Sub(time.UnixMilli(at)).Seconds()
	if dt < 0.2 || done < base {
		return 0 // too short to tell
	}
	return float64(done-base) / dt
}
