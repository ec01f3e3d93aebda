package agent

import (
	"os"
	"testing"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// TestAgentLeftoversOfAnEarlierIncarnation: a process started for one
// cluster incarnation is, once the agent follows another, a leftover:
// not stopped as unwanted (unless the administrator said so with
// --stop-leftovers), kept out of the heartbeat's processes and reported
// as a leftover; processes of the new incarnation are recorded with it.
func TestAgentLeftoversOfAnEarlierIncarnation(t *testing.T) {
	for _, stop := range []bool{false, true} {
		name := map[bool]string{false: "left alone", true: "stopped with --stop-leftovers"}[stop]
		t.Run(name, func(t *testing.T) {
			psk := wiretest.Key(t)
			fh := newFakeHead(t, psk, "fake-head", 1)
			cfg := workerConfig(t, psk, fh)
			cfg.StopLeftovers = stop
			a := startAgent(t, cfg)
			self := a.peerID(t)
			logs := logDir(t)
			me := currentUser(t)
			uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
			spec := func(id string, work uint64) wire.ProcSpec {
				return wire.ProcSpec{ID: id, WorkID: work, Kind: "POP", User: me, UID: uid, GID: gid,
					Path: "/bin/sh", Args: []string{"-c", "exec sleep 600"}, LogDir: logs, MemoryLimit: 256 << 20}
			}
			fh.push(t, self, wire.DesiredState{Node: "n1", Version: 5 << 20, Incarnation: "0ld", Procs: []wire.ProcSpec{spec("1.1", 1)}})
			fh.waitFor("1.1 running", func() bool {
				r, ok := fh.lastReport("1.1")
				return ok && r.State == wire.ProcRunning
			})

			// The Raft state is lost; a new cluster (versions start anew)
			// wants 2.1 and knows nothing of 1.1.
			fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Incarnation: "new", Procs: []wire.ProcSpec{spec("2.1", 2)}})
			fh.waitFor("2.1 running", func() bool {
				r, ok := fh.lastReport("2.1")
				return ok && r.State == wire.ProcRunning
			})
			if st, _ := a.procs.Status("2.1"); st.Incarnation != "new" {
				t.Errorf("2.1 recorded for incarnation %q, want new", st.Incarnation)
			}
			if stop {
				wiretest.Eventually(t, "1.1 stopped", func() bool {
					st, ok := a.procs.Status("1.1")
					return !ok || st.State.Ended()
				})
				return
			}
			fh.waitFor("1.1 a leftover in a heartbeat, not a process", func() bool {
				hb := fh.beats["n1"]
				for _, p := range hb.Procs {
					if p.ID == "1.1" {
						return false
					}
				}
				return hb.DesiredVersion == 1 && len(hb.Leftovers) == 1 && hb.Leftovers[0].ID == "1.1" &&
					hb.Leftovers[0].Incarnation == "0ld" && hb.Leftovers[0].WorkID == 1 && hb.Leftovers[0].PID > 0
			})
			if st, ok := a.procs.Status("1.1"); !ok || st.State.Ended() {
				t.Errorf("the leftover 1.1 was stopped without the administrator's decision: %+v", st)
			}
		})
	}
}
