package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
)

// incarnationFile keeps, in the data dir, the cluster incarnation this
// agent last followed, so that a restarted agent tells leftovers of an
// earlier incarnation before the head's first desired state.
const incarnationFile = "incarnation"

// incarnation is the cluster incarnation the agent follows (the one the
// head's desired states carry) and the leftovers of others it has logged.
// A process belongs to another incarnation when it was started for one
// (proc.Status.Incarnation) that is not the current one; processes
// started before incarnations existed (none recorded) belong to the
// current one.
type incarnation struct {
	path string

	mu     sync.Mutex
	cur    string
	logged map[string]bool // leftover process ids logged
}

func newIncarnation(dataDir string) *incarnation {
	inc := &incarnation{path: filepath.Join(dataDir, incarnationFile), logged: map[string]bool{}}
	if b, err := os.ReadFile(inc.path); err == nil {
		inc.cur = strings.TrimSpace(string(b))
	}
	return inc
}

// current returns the incarnation followed, "" if none is known yet.
func (i *incarnation) current() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cur
}

// follow records the incarnation of a desired state; it reports whether
// it changed (a new cluster), and an error if it could not be kept on
// disk.
func (i *incarnation) follow(id string) (changed bool, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if id == "" || id == i.cur {
		return false, nil
	}
	i.cur = id
	tmp := i.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return true, err
	}
	return true, os.Rename(tmp, i.path)
}

// leftover reports whether st belongs to another incarnation.
func (i *incarnation) leftover(st proc.Status) bool {
	cur := i.current()
	return cur != "" && st.Incarnation != "" && st.Incarnation != cur
}

// firstLog reports whether the leftover id is to be logged (once).
func (i *incarnation) firstLog(id string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.logged[id] {
		return false
	}
	i.logged[id] = true
	return true
}

// leftovers splits the process records into those of the current
// incarnation and the leftovers of others.
func (a *Agent) leftovers(all []proc.Status) (ours, left []proc.Status) {
	for _, st := range all {
		if a.inc.leftover(st) {
			left = append(left, st)
		} else {
			ours = append(ours, st)
		}
	}
	return ours, left
}

// tendLeftovers handles the leftovers of another incarnation during a
// reconcile: it logs each once, forgets those that ended (the head never
// knew them, so nobody acknowledges them), and stops the running ones
// only if the administrator said so (ducc agent --stop-leftovers).
func (a *Agent) tendLeftovers(ctx context.Context, left []proc.Status) {
	for _, st := range left {
		if ended(st) {
			if err := a.procs.Forget(st.ID); err != nil && !errors.Is(err, fs.ErrNotExist) {
				a.log.Warn("cannot forget an ended process of an earlier cluster incarnation", "proc", st.ID, "err", err)
			}
			continue
		}
		if a.inc.firstLog(st.ID) {
			a.log.Warn("a process of an earlier cluster incarnation still runs here; it is left alone until an administrator "+
				"stops it (restart this agent with --stop-leftovers, or kill it; docs/operations.md)",
				"proc", st.ID, "pid", st.PID, "its_incarnation", st.Incarnation, "incarnation", a.inc.current())
		}
		if a.cfg.StopLeftovers {
			a.stop(ctx, st.ID, 15*time.Second, "a leftover of an earlier cluster incarnation, stopped on the administrator's decision (--stop-leftovers)")
		}
	}
}

// wireLeftovers is what heartbeats say of the leftovers (at most
// wire.MaxLeftovers of the running ones).
func wireLeftovers(left []proc.Status) []wire.Leftover {
	var out []wire.Leftover
	for _, st := range left {
		if ended(st) || len(out) == wire.MaxLeftovers {
			continue
		}
		out = append(out, wire.Leftover{ID: st.ID, WorkID: workIDOf(st.ID), Incarnation: st.Incarnation, PID: st.PID})
	}
	return out
}
