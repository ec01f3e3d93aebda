package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// The Raft fixture (testdata/raft-fixture) is a data directory's Raft
// state written by an older ducc: a raft.db (bbolt: the log and the stable
// store) and one snapshot, taken in the middle of a history that applies
// every command type, with more of the history in the log after it.
// state.json is that ducc's dump of its state at the end (fixtureDump).
// TestRaftFixtureRestore checks that today's code restores it to the same
// state and goes on from there, and TestRaftFixtureBytes that today's code
// decodes and encodes its log entries and its snapshot to the same bytes:
// the on-disk format has not changed.
//
// The fixture was written by the code of a4c9605, before the command
// and state types were named (issue 24), with the first version of this
// file (the commit that added testdata/raft-fixture). To write it again
// with that code, check that commit out in a worktree of its own and run
// there
//
//	go test ./head/server -run TestRaftFixtureRestore -fixture.write
//
// then copy its testdata/raft-fixture here. The same command here
// rewrites the fixture with the code at hand: do that only on purpose (a
// new command type, a deliberate format change with a way to read the old
// one), never to make the test pass, since the point of the fixture is
// that older code wrote it.
var fixtureWrite = flag.Bool("fixture.write", false, "rewrite testdata/raft-fixture with this code (see fixture_test.go)")

const (
	fixtureDir      = "testdata/raft-fixture"
	fixtureServerID = "fixture"
	// fixtureT0 is the time of the fixture's first entry (unix ms).
	fixtureT0 = 1_764_000_000_000
)

// fixtureHistory returns the fixture's log entries: before the snapshot
// and after it. Each entry is one batch; every command type is applied
// in both parts.
func fixtureHistory() (before, after [][]state.Command) {
	l := &fixtureLog{now: fixtureT0, out: &before}
	end100 := fixtureBefore(l)
	l.out = &after
	fixtureAfter(l, end100)
	return before, after
}

// fixtureLog collects the fixture's entries, one second apart.
type fixtureLog struct {
	now int64              // the time of the next entry (unix ms)
	out *[][]state.Command // where entries go
}

// add appends one entry of cmds, stamped with its time, and returns it.
func (l *fixtureLog) add(cmds ...state.Command) int64 {
	for i := range cmds {
		cmds[i].Time = l.now
	}
	*l.out = append(*l.out, cmds)
	t := l.now
	l.now += 1000
	return t
}

// running is a process's start as its agent reports it.
func (l *fixtureLog) running(id string, work uint64, pid int) state.Command {
	return state.Command{Type: state.CmdProc, Proc: &wire.ProcStatus{ID: id, WorkID: work, State: wire.ProcRunning, PID: pid,
		StartedAt: l.now - 10, LogPath: "/home/alice/ducc/logs/" + id + ".log", Node: "n1"}}
}

// exited is a process's end as its agent reports it.
func (l *fixtureLog) exited(id string, work uint64, code int, reason string) state.Command {
	return state.Command{Type: state.CmdProc, Proc: &wire.ProcStatus{ID: id, WorkID: work, State: wire.ProcExited, ExitCode: code,
		Reason: reason, EndedAt: l.now - 5, MaxRSS: 300 << 20, CPUSeconds: 12.5}}
}

// fixtureJob is a job of user's with items.
func fixtureJob(user string, items ...string) *state.Work {
	w := &state.Work{Kind: wire.WorkJob, User: user, UID: 1000, GID: 1000, Groups: []uint32{1000, 27}, Home: "/home/" + user,
		Class: "normal", Memory: 1 << 30, Dir: "/home/" + user, LogDir: "/home/" + user + "/ducc/logs", Description: "fixture job",
		Umask: "0022",
		Job: &state.Job{Spec: wire.JobSpec{Executable: "/usr/bin/python3", Args: []string{"worker.py"}, Memory: 1 << 30,
			MaxJobErrors: 15, FailuresLimit: 3, MaxItemRetries: 1, Pipelines: 1, WorkerProtocol: "jsonl"}}}
	for _, it := range items {
		w.Job.Items = append(w.Job.Items, state.Item{Data: it})
	}
	return w
}

// fixtureEndpoint is the fixture's service.
const fixtureEndpoint = "UIMA-AS:fixture.queue"

// fixtureBefore adds the entries before the snapshot and returns the time
// job 100 ended.
func fixtureBefore(l *fixtureLog) (end100 int64) {
	svc := wire.ServiceSpec{Endpoint: fixtureEndpoint, Description: "fixture service", Executable: "/opt/svc/run", Args: []string{"--port", "0"},
		Memory: 2 << 30, Class: "fixed", Instances: 1, MaxInstances: 3, FailuresLimit: 2, FailuresWindowMS: 600_000,
		InitFailuresLimit: 1, LingerMS: 30_000, PingIntervalMS: 60_000, PingTimeoutMS: 5_000}
	l.add(state.Command{Type: state.CmdIncarnation, Incarnation: "3f9c2a7e-fixture"}, state.Command{Type: state.CmdIDFloor, IDFloor: 100})
	l.add(state.Command{Type: state.CmdConfig, Config: []byte("classes:\n  normal: {policy: FAIR_SHARE, weight: 1}\n")})
	l.add(state.Command{Type: state.CmdNodeAdmin, Node: "n2", NodeState: state.NodeVariedOff},
		state.Command{Type: state.CmdNodeAdmin, Node: "n3", NodeState: state.NodeQuiescing})
	// Job 100: three items, one retried, ends EndOfJob.
	l.add(state.Command{Type: state.CmdSubmit, Work: fixtureJob("alice", "a", "b", "c"), Last: true})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 100, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}})
	l.add(l.running("100.1", 100, 4100))
	l.add(state.Command{Type: state.CmdReady, WorkID: 100, ProcID: "100.1", InitMS: 250})
	l.add(state.Command{Type: state.CmdOutcomes, WorkID: 100, ProcID: "100.1", Outcomes: []wire.ItemOutcome{
		{Index: 0, OK: true, Millis: 12, Result: `{"n": 0}`}, {Index: 1, Error: "boom", Millis: 3}, {Index: 2, OK: true, Millis: 9}}})
	end100 = l.add(state.Command{Type: state.CmdOutcomes, WorkID: 100, ProcID: "100.1", Outcomes: []wire.ItemOutcome{{Index: 1, OK: true, Millis: 11}}})
	l.add(l.exited("100.1", 100, 0, ""))
	// Job 101: items in two chunks, two processes, one lost.
	l.add(state.Command{Type: state.CmdSubmit, Work: fixtureJob("alice", "1", "2")})
	l.add(state.Command{Type: state.CmdItems, WorkID: 101, Items: []string{"3", "4"}, Last: true})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 101, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}},
		state.Command{Type: state.CmdAssign, WorkID: 101, Assign: &state.Assignment{Node: "n4", Shares: 2, MemoryLimit: 1 << 30}})
	l.add(l.running("101.1", 101, 4200), l.running("101.2", 101, 4201))
	l.add(state.Command{Type: state.CmdReady, WorkID: 101, ProcID: "101.1", InitMS: 300},
		state.Command{Type: state.CmdReady, WorkID: 101, ProcID: "101.2", InitMS: 320})
	l.add(state.Command{Type: state.CmdOutcomes, WorkID: 101, ProcID: "101.1", Outcomes: []wire.ItemOutcome{{Index: 0, OK: true, Millis: 40}}})
	l.add(state.Command{Type: state.CmdProc, Proc: &wire.ProcStatus{ID: "101.2", WorkID: 101, State: wire.ProcLost, ExitCode: -1, Reason: "node n4 is down"}},
		state.Command{Type: state.CmdRequeued, WorkID: 101, Requeued: 1})
	// Managed reservation 102: its program exits 3.
	l.add(state.Command{Type: state.CmdSubmit, Work: &state.Work{Kind: wire.WorkManaged, User: "bob", UID: 1001, GID: 1001, Class: "normal",
		Memory: 512 << 20, Path: "/bin/sh", Args: []string{"-c", "exit 3"}, Env: []string{"A=1"}, Dir: "/tmp", Description: "fixture managed"}})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 102, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 512 << 20}},
		l.running("102.1", 102, 4300))
	end102 := l.add(l.exited("102.1", 102, 3, "exit code 3"))
	// Reservation 103.
	l.add(state.Command{Type: state.CmdSubmit, Work: &state.Work{Kind: wire.WorkReservation, User: "carol", UID: 1002, GID: 1002,
		Class: "reserve", Memory: 8 << 30, MachineList: []string{"n3"}}})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 103, Assign: &state.Assignment{Node: "n3", Shares: 8, MemoryLimit: 8 << 30}})
	// Service 104.
	l.add(state.Command{Type: state.CmdSvcRegister, Work: &state.Work{Kind: wire.WorkService, User: "alice", UID: 1000, GID: 1000,
		Class: "fixed", Memory: 2 << 30, Path: svc.Executable, Args: svc.Args, Description: svc.Description,
		Env: state.ServiceEnv("alice", "/home/alice", nil), Service: &state.Service{Spec: svc}}})
	l.add(state.Command{Type: state.CmdSvcChange, WorkID: 104, Service: &state.ServiceChange{Op: state.SvcOpStart}})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 104, Assign: &state.Assignment{Node: "n1", Shares: 2, MemoryLimit: 2 << 30}},
		l.running("104.1", 104, 4400))
	l.add(state.Command{Type: state.CmdSvcChange, WorkID: 104, ProcID: "104.1", Service: &state.ServiceChange{Op: state.SvcOpReady}})
	l.add(state.Command{Type: state.CmdSvcChange, WorkID: 104, Service: &state.ServiceChange{Op: state.SvcOpModify,
		Spec: &wire.ServiceSpec{Endpoint: fixtureEndpoint, Description: "fixture service, modified"}, Keys: []string{"description"}}})
	l.add(state.Command{Type: state.CmdSvcChange, WorkID: 104, Service: &state.ServiceChange{Op: state.SvcOpLastUse, N: l.now - 500}})
	// Job 105 waits for the service.
	j105 := fixtureJob("dave", "x")
	j105.Deps = []string{fixtureEndpoint}
	j105.Job.Spec.ServiceDependency = j105.Deps
	l.add(state.Command{Type: state.CmdSubmit, Work: j105, Last: true})
	l.add(state.Command{Type: state.CmdDepsMet, WorkID: 105})
	// Job 106 with a driver process.
	j106 := fixtureJob("erin")
	j106.Job.Spec.DriverExecutable, j106.Job.Spec.DriverMemory, j106.Job.DriverClass = "/opt/drv/run", 512<<20, "fixed"
	l.add(state.Command{Type: state.CmdSubmit, Work: j106, Last: true})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 106, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 512 << 20, Kind: wire.ProcDriver}})
	l.add(l.running("106.1", 106, 4600))
	l.add(state.Command{Type: state.CmdReady, WorkID: 106, ProcID: "106.1", InitMS: 40})
	l.add(state.Command{Type: state.CmdDriverItems, WorkID: 106, ProcID: "106.1", FirstItem: 0, Items: []string{"d0", "d1"}, Total: 5})
	l.add(state.Command{Type: state.CmdDriverItems, WorkID: 106, ProcID: "106.1", FirstItem: 2, Items: []string{"d2", "d3"}})
	// Job 107, canceled by an administrator.
	l.add(state.Command{Type: state.CmdSubmit, Work: fixtureJob("alice", "q"), Last: true},
		state.Command{Type: state.CmdAssign, WorkID: 107, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}})
	l.add(state.Command{Type: state.CmdCancel, WorkID: 107, By: "root"})
	l.add(l.exited("107.1", 107, -1, "killed by signal 15"))
	// Job 108, refused at once.
	j108 := fixtureJob("frank", "z")
	j108.Deps = []string{"UIMA-AS:gone"}
	l.add(state.Command{Type: state.CmdSubmit, Work: j108, Last: true, Completion: state.CompletionServicesUnavail,
		Reason: "service UIMA-AS:gone is not registered"})
	l.add(state.Command{Type: state.CmdStopProc, WorkID: 101, ProcID: "101.1", Reason: "work item 1 timed out", Counts: true})
	l.add(state.Command{Type: state.CmdFinish, WorkID: 105, Completion: state.CompletionCanceledBySystem, Reason: "fixture: finished by the system"})
	// Work that ended by 102's end leaves the state; its items are held.
	l.add(state.Command{Type: state.CmdPurge, Purge: &state.Purge{Work: end102 + 1}})

	return end100
}

// fixtureAfter adds the entries after the snapshot.
func fixtureAfter(l *fixtureLog, end100 int64) {
	l.add(state.Command{Type: state.CmdIncarnation, Incarnation: "not-this-one"}) // named already: ignored
	l.add(state.Command{Type: state.CmdIDFloor, IDFloor: 50})                     // below the next id: ignored
	l.add(state.Command{Type: state.CmdConfig, Config: []byte("classes:\n  normal: {policy: FAIR_SHARE, weight: 2}\n")})
	l.add(state.Command{Type: state.CmdNodeAdmin, Node: "n3"}, state.Command{Type: state.CmdNodeAdmin, Node: "n2", NodeState: state.NodeQuiescing})
	// Job 109: one item fails for good, the job ends Error.
	j109 := fixtureJob("alice", "p", "q")
	j109.Job.Spec.MaxItemRetries = 0
	l.add(state.Command{Type: state.CmdSubmit, Work: j109})
	l.add(state.Command{Type: state.CmdItems, WorkID: 109, Items: []string{"r"}, Last: true})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 109, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}})
	l.add(l.running("109.1", 109, 4900))
	l.add(state.Command{Type: state.CmdReady, WorkID: 109, ProcID: "109.1", InitMS: 500})
	l.add(state.Command{Type: state.CmdOutcomes, WorkID: 109, ProcID: "109.1", Outcomes: []wire.ItemOutcome{
		{Index: 0, OK: true, Millis: 5}, {Index: 1, OK: true, Millis: 7}, {Index: 2, Error: "bad input", Millis: 1}}})
	l.add(l.exited("109.1", 109, 0, ""))
	// Job 101 goes on: the stopped process ends (a failure), its item is
	// re-queued, a new process is placed and stopped again.
	l.add(l.exited("101.1", 101, -1, "killed by signal 15"), state.Command{Type: state.CmdRequeued, WorkID: 101, Requeued: 1})
	l.add(state.Command{Type: state.CmdAssign, WorkID: 101, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}})
	l.add(l.running("101.3", 101, 4203))
	l.add(state.Command{Type: state.CmdStopProc, WorkID: 101, ProcID: "101.3", Reason: "shrink"})
	l.add(state.Command{Type: state.CmdCancel, WorkID: 103, By: "carol"})
	l.add(state.Command{Type: state.CmdSvcRegister, Work: &state.Work{Kind: wire.WorkService, User: "bob", UID: 1001, GID: 1001, Class: "fixed",
		Service: &state.Service{Spec: wire.ServiceSpec{Endpoint: "CUSTOM:ping-only", PingExecutable: "/opt/ping", MaxInstances: 1}}}})
	l.add(state.Command{Type: state.CmdSvcChange, WorkID: 104, Service: &state.ServiceChange{Op: state.SvcOpDisable, Reason: "maintenance"}})
	j111 := fixtureJob("dave", "y")
	j111.Deps = []string{fixtureEndpoint}
	l.add(state.Command{Type: state.CmdSubmit, Work: j111, Last: true})
	l.add(state.Command{Type: state.CmdDepsMet, WorkID: 111})
	// Job 106: a chunk sent again adds nothing; the last one commits.
	l.add(state.Command{Type: state.CmdDriverItems, WorkID: 106, ProcID: "106.1", FirstItem: 2, Items: []string{"d2", "d3"}})
	l.add(state.Command{Type: state.CmdDriverItems, WorkID: 106, ProcID: "106.1", FirstItem: 4, Items: []string{"d4"}, Last: true})
	l.add(state.Command{Type: state.CmdFinish, WorkID: 110, Completion: state.CompletionCanceledByUser, Reason: "unregistered"})
	// All work ended (and stopped) by l.now leaves the state; 100's held
	// items and its record are dropped.
	l.add(state.Command{Type: state.CmdPurge, Purge: &state.Purge{Work: l.now, Results: end100 + 1, History: end100 + 1}})
	// Job 112, refused at once, stays in the state for l.now.
	j112 := fixtureJob("frank", "z")
	j112.Deps = []string{"UIMA-AS:gone"}
	l.add(state.Command{Type: state.CmdSubmit, Work: j112, Last: true, Completion: state.CompletionServicesUnavail,
		Reason: "service UIMA-AS:gone is not registered"})
}

// fixtureDump is what the fixture's golden file records of the state.
type fixtureDump struct {
	NextID      uint64
	Index       uint64
	Incarnation string
	Scheduler   string
	NodeAdmin   map[string]state.NodeAdminState
	Work        []*state.Work
	// Records and Held, by work id, of purged work.
	Records map[uint64]*state.Record
	Held    map[uint64][]state.Item
}

func dumpFixture(f *state.FSM) []byte {
	d := fixtureDump{Records: map[uint64]*state.Record{}, Held: map[uint64][]state.Item{}}
	var out []byte
	f.View(func(v *state.View) {
		d.NextID, d.Index, d.Incarnation = v.NextID(), v.Index(), v.Incarnation()
		d.Scheduler, d.NodeAdmin = string(v.SchedulerConfig()), v.NodeAdmin()
		d.Work = v.All()
		for id := uint64(1); id < v.NextID(); id++ {
			if r := v.Record(id); r != nil {
				d.Records[id] = r
			}
			if it := v.HeldItems(id); it != nil {
				d.Held[id] = it
			}
		}
		var err error
		if out, err = json.MarshalIndent(d, "", "  "); err != nil {
			panic(err)
		}
	})
	return append(out, '\n')
}

// fixtureRaft is a lone Raft member on a data directory, as newCandidate
// opens it (openRaftStore, the file snapshot store, the write guard and
// raftFSM) but on an in-memory transport with a fixed server id, so that
// it elects itself on the fixture's configuration.
type fixtureRaft struct {
	raft  *raft.Raft
	fsm   *raftFSM
	store *raftboltdb.BoltStore
	guard *writeGuard
	// last is the log's last index before Raft started.
	last uint64
}

func openFixtureRaft(t *testing.T, dataDir string) *fixtureRaft {
	t.Helper()
	log := wiretest.Logger(t)
	store, err := openRaftStore(dataDir, false, log)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dataDir, raftDirName), 2, p2p.NewHCLogger(log, "raft"))
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport(fixtureServerID)
	rc := raft.DefaultConfig()
	rc.LocalID = fixtureServerID
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold, rc.SnapshotInterval = 1<<40, 24*time.Hour // snapshots only when asked
	rc.Logger = p2p.NewHCLogger(log, "raft")
	fr := &fixtureRaft{fsm: newRaftFSM(log), store: store, guard: newWriteGuard(store, dataDir, log, nil)}
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		t.Fatal(err)
	}
	if !has {
		conf := raft.Configuration{Servers: []raft.Server{{ID: fixtureServerID, Address: fixtureServerID}}}
		if err := raft.BootstrapCluster(rc, fr.guard, fr.guard, snaps, trans, conf); err != nil {
			t.Fatal(err)
		}
	}
	if fr.last, err = store.LastIndex(); err != nil {
		t.Fatal(err)
	}
	if fr.raft, err = raft.NewRaft(rc, fr.fsm, fr.guard, fr.guard, snaps, trans); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fr.close)
	wiretest.Eventually(t, "the election", func() bool { return fr.raft.State() == raft.Leader })
	return fr
}

func (fr *fixtureRaft) close() {
	if fr.raft == nil {
		return
	}
	fr.guard.close()
	fr.raft.Shutdown().Error()
	fr.store.Close()
	fr.raft = nil
}

// apply commits one entry and fails the test on any command's error.
func (fr *fixtureRaft) apply(t *testing.T, cmds ...state.Command) []state.Result {
	t.Helper()
	data, err := state.Encode(cmds...)
	if err != nil {
		t.Fatal(err)
	}
	f := fr.raft.Apply(data, 10*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	res := f.Response().([]state.Result)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("command %d (type %v) of entry %d: %v", i, cmds[i].Type, f.Index(), r.Err)
		}
	}
	return res
}

// writeFixture writes testdata/raft-fixture with the code at hand.
func writeFixture(t *testing.T) {
	if err := os.RemoveAll(fixtureDir); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(fixtureDir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	fr := openFixtureRaft(t, data)
	before, after := fixtureHistory()
	for _, e := range before {
		fr.apply(t, e...)
	}
	if err := fr.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for _, e := range after {
		fr.apply(t, e...)
	}
	golden := dumpFixture(fr.fsm.FSM)
	fr.close()
	if err := os.WriteFile(filepath.Join(fixtureDir, "state.json"), golden, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", fixtureDir)
}

// copyFixture copies the fixture's data directory into a temporary one
// (Raft writes to what it opens).
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join(fixtureDir, "data")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestRaftFixtureRestore restores the fixture written by an older ducc
// (its snapshot, then the log entries after it), checks the state against
// the old code's dump, and applies more.
func TestRaftFixtureRestore(t *testing.T) {
	if *fixtureWrite {
		writeFixture(t)
	}
	golden, err := os.ReadFile(filepath.Join(fixtureDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := copyFixture(t)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, raftDirName), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := snaps.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("the fixture holds %d snapshots (%v), want 1", len(list), err)
	}
	fr := openFixtureRaft(t, dir)
	if in := fr.fsm.info(); in.RestoredIndex != list[0].Index || in.RestoredIndex >= fr.last {
		t.Fatalf("restored the snapshot at %d (on disk: %d); the log ends at %d", in.RestoredIndex, list[0].Index, fr.last)
	}
	// The replay of the log after the snapshot: a barrier returns once
	// the FSM applied everything before it (AppliedIndex may run ahead of
	// the FSM).
	if err := fr.raft.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if fr.fsm.info().RestoredIndex == 0 || dumpIndex(fr.fsm.FSM) != fr.last {
		t.Fatalf("applied up to %d, the log ends at %d", dumpIndex(fr.fsm.FSM), fr.last)
	}
	// Compare through the golden file's decoding, so that a field added
	// to the state since (zero in the fixture) changes nothing.
	var want fixtureDump
	if err := json.Unmarshal(golden, &want); err != nil {
		t.Fatal(err)
	}
	wantJSON, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if got := dumpFixture(fr.fsm.FSM); !bytes.Equal(bytes.TrimSpace(got), wantJSON) {
		os.WriteFile(filepath.Join(t.TempDir(), "got.json"), got, 0o644)
		t.Fatalf("the restored state differs from the old code's:\n%s", diffLines(string(wantJSON), string(got)))
	}

	// The state runs on: a submission gets the next id and waits for
	// resources; a process is placed for it; a purge and a snapshot work.
	w := &state.Work{Kind: wire.WorkJob, User: "alice", Class: "normal", Memory: 1 << 30,
		Job: &state.Job{Spec: wire.JobSpec{Executable: "/bin/true"}, Items: []state.Item{{Data: "new"}}}}
	res := fr.apply(t, state.Command{Type: state.CmdSubmit, Time: fixtureT0 + 1e6, Work: w, Last: true})
	if res[0].ID != want.NextID {
		t.Errorf("the new submission got id %d, want %d", res[0].ID, want.NextID)
	}
	res = fr.apply(t, state.Command{Type: state.CmdAssign, Time: fixtureT0 + 1e6 + 1, WorkID: res[0].ID,
		Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}})
	fr.fsm.View(func(v *state.View) {
		nw := v.Work(want.NextID)
		if nw == nil || nw.State != state.StateAssigned || len(nw.Procs) != 1 || nw.Procs[0].ID != res[0].ProcID {
			t.Errorf("the new submission: %+v", nw)
		}
		if v.Work(101) == nil || v.Work(101).Ended() {
			t.Error("job 101 of the fixture is gone or ended")
		}
	})
	if err := fr.raft.Snapshot().Error(); err != nil {
		t.Errorf("snapshot after the restore: %v", err)
	}
}

func dumpIndex(f *state.FSM) (i uint64) {
	f.View(func(v *state.View) { i = v.Index() })
	return i
}

// diffLines returns the first lines where a and b differ, with context.
func diffLines(a, b string) string {
	al, bl := bytes.Split([]byte(a), []byte("\n")), bytes.Split([]byte(b), []byte("\n"))
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y []byte
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if !bytes.Equal(x, y) {
			lo := max(i-5, 0)
			var s bytes.Buffer
			for j := lo; j < i; j++ {
				s.Write(al[j])
				s.WriteByte('\n')
			}
			s.WriteString("- " + string(x) + "\n+ " + string(y) + "\n")
			return s.String()
		}
	}
	return "(no difference)"
}

// TestRaftFixtureBytes: the fixture's log entries and its snapshot decode
// with today's code and encode again to the same bytes, and the fixture's
// history as today's code writes it is the log the old code wrote.
func TestRaftFixtureBytes(t *testing.T) {
	dir := copyFixture(t)
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, raftDirName, raftDBName))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	before, after := fixtureHistory()
	history := append(before, after...)
	n := 0
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		var b state.Batch
		if err := wire.UnmarshalLimit(l.Data, &b, wire.MaxMessageSize*4); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		again, err := state.Encode(b.Commands...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, l.Data) {
			t.Errorf("entry %d decodes and encodes to other bytes:\n%x\n%x", i, l.Data, again)
		}
		if n < len(history) {
			if mine, _ := state.Encode(history[n]...); !bytes.Equal(mine, l.Data) {
				t.Errorf("entry %d (history entry %d, %v...) is written differently today:\n%x\n%x", i, n, history[n][0].Type, l.Data, mine)
			}
		}
		n++
	}
	if n != len(history) {
		t.Errorf("the fixture's log holds %d command entries, the history %d", n, len(history))
	}

	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, raftDirName), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("no snapshot: %v", err)
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	old, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	f := state.New()
	if err := f.Restore(io.NopCloser(bytes.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufSink{}
	if err := s.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sink.Bytes(), old) {
		t.Errorf("the snapshot restores and persists to other bytes (%d, was %d)", sink.Len(), len(old))
	}
}

// bufSink is a raft.SnapshotSink into memory.
type bufSink struct{ bytes.Buffer }

func (*bufSink) ID() string    { return "mem" }
func (*bufSink) Cancel() error { return nil }
func (*bufSink) Close() error  { return nil }
