package head

import (
	"sync"
	"time"
)

// rateWindow is how far back the items/s estimate looks.
const rateWindow = 10 * time.Second

// rates estimates items per second per job from samples taken whenever a
// job is shown.
type rates struct {
	mu   sync.Mutex
	jobs map[uint64][]rateSample
}

type rateSample struct {
	at    time.Time
	count int
}

func (r *rates) sample(id uint64, count int, now time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.jobs == nil {
		r.jobs = map[uint64][]rateSample{}
	}
	s := append(r.jobs[id], rateSample{now, count})
	for len(s) > 2 && now.Sub(s[1].at) > rateWindow {
		s = s[1:]
	}
	if len(s) > 64 {
		s = s[len(s)-64:]
	}
	r.jobs[id] = s
	first := s[0]
	if dt := now.Sub(first.at).Seconds(); dt > 0.2 {
		return float64(count-first.count) / dt
	}
	return 0
}

// forget drops the samples of a job.
func (r *rates) forget(id uint64) {
	r.mu.Lock()
	delete(r.jobs, id)
	r.mu.Unlock()
}

// rate estimates a job's items per second from the last few samples.
func (h *Head) rate(id uint64, done int) float64 {
	return h.rates.sample(id, done, h.cfg.Now())
}
