package server

import "time"

// headStopWarn is how long the head of an ended term may take to wind
// down before the member says that it is stuck.
const headStopWarn = 30 * time.Second

// awaitHead waits until the head of the term that ended has stopped
// (done closed). Until then this member cannot become head again, so a
// head that does not stop is said in the log, every warn (headStopWarn):
// silence would look like a cluster without a head for no reason.
func (c *candidate) awaitHead(done <-chan struct{}, warn time.Duration) {
	t := time.NewTicker(warn)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			c.log.Error("the head of the last term has not stopped; this node cannot become head again until it does. "+
				"This is a bug: `kill -QUIT` on the agent prints where it is stuck (and restarts it under systemd)",
				"waiting", time.Since(start).Round(time.Second))
		}
	}
}
