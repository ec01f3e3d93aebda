package rm

import (
	"fmt"
	"math"
)

// computeWant sets w.want, the most processes the work could use now
// (docs/scheduling.md, step 1), and w.capNote, what limited it (only when
// tracing: the note is read by the trace alone).
func (s *sched) computeWant(w *work) {
	if w.class == nil {
		w.want = max(1, w.cur)
		return
	}
	if w.w.Kind != Job {
		w.want = 1
		return
	}
	j := w.w
	pipes := max(j.Pipelines, 1)
	want := (max(j.ItemsRemaining, 0) + pipes - 1) / pipes
	note := ""
	if s.trace {
		note = fmt.Sprintf("%d items left / %d pipelines", j.ItemsRemaining, pipes)
	}
	if want < w.cur {
		want = w.cur
	}
	if j.DeploymentsMax > 0 && want > j.DeploymentsMax {
		want = max(j.DeploymentsMax, 0)
		if s.trace {
			note = fmt.Sprintf("process_deployments_max %d", j.DeploymentsMax)
		}
	}
	w.capMax, w.capCode = want, WaitNone
	initialized := j.EverInitialized
	for _, p := range w.live {
		if p.p.State == ProcRunning || !p.p.InitializedAt.IsZero() {
			initialized = true
		}
	}
	cl := w.class
	if initialized && cl.UsePrediction != nil && *cl.UsePrediction && j.MeanItemTime > 0 && w.cur > 0 {
		horizon := j.MeanInitTime + s.cfg.Cycle.D() + cl.PredictionFudge.D()
		rate := float64(w.cur*pipes) / j.MeanItemTime.Seconds() // items per second
		left := float64(j.ItemsRemaining) - rate*horizon.Seconds()
		need := 0
		if left > 0 {
			need = int(math.Ceil(left / float64(pipes)))
		}
		need = max(need, w.cur)
		if need < want {
			want = need
			w.capCode, w.horizon = HeldPrediction, horizon
			if s.trace {
				note = fmt.Sprintf("prediction: %d processes finish the rest within %s", need, horizon)
			}
		}
	}
	if !initialized {
		if c := max(cl.InitializationCap, w.cur); c < want {
			want = c
			w.capCode, w.capArg = HeldInitialization, cl.InitializationCap
			if s.trace {
				note = fmt.Sprintf("initialization_cap %d until a process initializes", cl.InitializationCap)
			}
		}
	} else if cl.ExpandByDoubling != nil && *cl.ExpandByDoubling {
		if c := max(2*w.cur, 1); c < want {
			want = c
			w.capCode = HeldDoubling
			if s.trace {
				note = fmt.Sprintf("expand_by_doubling from %d", w.cur)
			}
		}
	}
	if j.InitFailuresCap > 0 && j.InitFailures >= j.InitFailuresCap && want > w.cur {
		want = w.cur
		w.capCode, w.capArg = HeldInitFailures, j.InitFailuresCap
		if s.trace {
			note = fmt.Sprintf("growth frozen: %d initialization failures reached the cap of %d", j.InitFailures, j.InitFailuresCap)
		}
	}
	w.want, w.capNote = want, note
}
