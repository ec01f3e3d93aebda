package head

import "time"

// SampleCharts takes one round of chart samples at now, as the term's
// ticker does.
func (h *Head) SampleCharts(now time.Time) { h.sampleOnce(now) }
