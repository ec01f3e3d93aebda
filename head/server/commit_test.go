package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// fakeRaft applies entries to a real FSM in order, as a one-node Raft
// would, and records them. While gate is set, an apply waits for it to be
// closed, as Raft's apply waits while it writes the entries before.
type fakeRaft struct {
	fsm *state.FSM

	mu      sync.Mutex
	gate    chan struct{}
	entries [][]state.Command
	fail    error // every entry fails with it
	calls   int   // applies begun
}

func (f *fakeRaft) apply(data []byte, _ time.Duration) raft.ApplyFuture {
	f.mu.Lock()
	gate := f.gate
	f.calls++
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var b state.Batch
	if err := wire.Unmarshal(data, &b); err != nil {
		return fakeFuture{err: err}
	}
	f.entries = append(f.entries, b.Commands)
	if f.fail != nil {
		return fakeFuture{err: f.fail}
	}
	return fakeFuture{res: f.fsm.Apply(&raft.Log{Index: uint64(len(f.entries)), Type: raft.LogCommand, Data: data})}
}

// open lets the held apply and every later one through.
func (f *fakeRaft) open() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate != nil {
		close(f.gate)
		f.gate = nil
	}
}

// started waits until the first apply has begun (and waits at the gate).
func (f *fakeRaft) started(t *testing.T) {
	wiretest.Eventually(t, "the first entry to start", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.calls > 0
	})
}

func (f *fakeRaft) entrySizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n []int
	for _, e := range f.entries {
		n = append(n, len(e))
	}
	return n
}

type fakeFuture struct {
	res any
	err error
}

func (f fakeFuture) Error() error  { return f.err }
func (f fakeFuture) Response() any { return f.res }
func (f fakeFuture) Index() uint64 { return 0 }

// startCommitter runs a committer over f until the test ends.
func startCommitter(t *testing.T, f *fakeRaft) *committer {
	c := newCommitter(f.apply, wiretest.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.run(ctx) }()
	t.Cleanup(func() { cancel(); f.open(); <-done })
	return c
}

func (c *committer) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

func submitCmd(user string) state.Command {
	return state.Command{Type: state.CmdSubmit, Time: 1, Work: &state.Work{Kind: wire.WorkManaged, User: user, Path: "/bin/true", Memory: 1 << 30}}
}

// cancelMissing is a command that fails on its own: there is no work 999999.
var cancelMissing = state.Command{Type: state.CmdCancel, Time: 1, WorkID: 999999, By: "x"}

// TestCommitterSharesEntries: callers that apply while an entry is being
// written share the next one, and each gets the results of its own
// commands, a failing command failing only itself.
func TestCommitterSharesEntries(t *testing.T) {
	f := &fakeRaft{fsm: state.New(), gate: make(chan struct{})}
	c := startCommitter(t, f)
	type outcome struct {
		res []state.Result
		err error
	}
	const callers = 20
	commands := 1
	outs := make([]outcome, callers+1)
	var wg sync.WaitGroup
	call := func(i int, cmds ...state.Command) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Apply(context.Background(), cmds...)
			outs[i] = outcome{res, err}
		}()
	}
	// The first caller's entry is held in "Raft" while the others queue.
	call(0, submitCmd("first"))
	f.started(t)
	for i := 1; i <= callers; i++ {
		switch i % 3 {
		case 0:
			call(i, cancelMissing)
		case 1:
			call(i, submitCmd(fmt.Sprintf("u%d", i)))
		case 2:
			call(i, cancelMissing, submitCmd(fmt.Sprintf("u%d", i)))
			commands++
		}
		commands++
	}
	wiretest.Eventually(t, "the others to queue", func() bool { return c.queued() == callers })
	f.open()
	wg.Wait()

	if got := f.entrySizes(); len(got) != 2 || got[0] != 1 || got[0]+got[1] != commands {
		t.Fatalf("entries of %v commands, want [1 %d]", got, commands-1)
	}
	check := func(i int, r state.Result, user string) {
		t.Helper()
		if r.Err != nil || r.ID == 0 {
			t.Fatalf("caller %d: %+v", i, r)
		}
		f.fsm.View(func(v *state.View) {
			if w := v.Work(r.ID); w == nil || w.User != user {
				t.Fatalf("caller %d got work %d, which is %+v, not %s's", i, r.ID, w, user)
			}
		})
	}
	for i, o := range outs {
		if o.err != nil {
			t.Fatalf("caller %d: %v", i, o.err)
		}
		user := fmt.Sprintf("u%d", i)
		switch {
		case i == 0:
			if len(o.res) != 1 {
				t.Fatalf("caller 0: %+v", o.res)
			}
			check(i, o.res[0], "first")
		case i%3 == 0:
			if len(o.res) != 1 || o.res[0].Err == nil || !strings.Contains(o.res[0].Err.Error(), "no work 999999") {
				t.Fatalf("caller %d: %+v, want its own error", i, o.res)
			}
		case i%3 == 1:
			if len(o.res) != 1 {
				t.Fatalf("caller %d: %+v", i, o.res)
			}
			check(i, o.res[0], user)
		case i%3 == 2:
			if len(o.res) != 2 || o.res[0].Err == nil {
				t.Fatalf("caller %d: %+v, want an error, then a submission", i, o.res)
			}
			check(i, o.res[1], user)
		}
	}
}

// TestCommitterLimits: a big caller's commands get an entry of their own,
// and an entry holds at most maxEntryCommands commands.
func TestCommitterLimits(t *testing.T) {
	f := &fakeRaft{fsm: state.New(), gate: make(chan struct{})}
	c := startCommitter(t, f)
	var wg sync.WaitGroup
	call := func(cmds ...state.Command) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Apply(context.Background(), cmds...); err != nil {
				t.Error(err)
			}
		}()
	}
	call(submitCmd("first"))
	f.started(t)
	call(submitCmd("small"))
	wiretest.Eventually(t, "queued", func() bool { return c.queued() == 1 })
	big := submitCmd("big")
	big.Work.Description = strings.Repeat("x", aloneBytes)
	call(big)
	wiretest.Eventually(t, "queued", func() bool { return c.queued() == 2 })
	many := make([]state.Command, maxEntryCommands)
	for i := range many {
		many[i] = cancelMissing
	}
	call(submitCmd("small"))
	wiretest.Eventually(t, "queued", func() bool { return c.queued() == 3 })
	call(many...)
	wiretest.Eventually(t, "queued", func() bool { return c.queued() == 4 })
	f.open()
	wg.Wait()
	want := fmt.Sprint([]int{1, 1, 1, 1, maxEntryCommands})
	if got := fmt.Sprint(f.entrySizes()); got != want {
		t.Fatalf("entries of %s commands, want %s", got, want)
	}
}

// TestCommitterFailures: an entry that fails fails each of its callers; a
// caller that gave up before its commands were in an entry has nothing
// applied; a stopped committer refuses.
func TestCommitterFailures(t *testing.T) {
	f := &fakeRaft{fsm: state.New(), gate: make(chan struct{})}
	c := newCommitter(f.apply, wiretest.Logger(t))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.run(ctx) }()
	var once sync.Once
	shutdown := func() { once.Do(func() { stop(); f.open(); <-done }) }
	t.Cleanup(shutdown)

	errs := make(chan error, 3)
	apply := func(ctx context.Context, cmd state.Command) {
		go func() {
			_, err := c.Apply(ctx, cmd)
			errs <- err
		}()
	}
	apply(context.Background(), submitCmd("first"))
	f.started(t)
	gaveUp, giveUp := context.WithCancel(context.Background())
	apply(gaveUp, submitCmd("gave-up"))
	wiretest.Eventually(t, "queued", func() bool { return c.queued() == 1 })
	giveUp()
	f.mu.Lock()
	f.fail = raft.ErrLeadershipLost
	f.mu.Unlock()
	f.open()
	var got []string
	for range 2 {
		err := <-errs
		switch {
		case errors.Is(err, context.Canceled):
			got = append(got, "canceled")
		case wire.ErrorCode(err) == wire.CodeUnreachable:
			got = append(got, "unreachable")
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	if strings.Join(got, ",") != "unreachable,canceled" && strings.Join(got, ",") != "canceled,unreachable" {
		t.Fatalf("errors %v", got)
	}
	if n := f.entrySizes(); len(n) != 1 {
		t.Fatalf("entries %v: the canceled caller's command reached Raft", n)
	}
	shutdown()
	if _, err := c.Apply(context.Background(), submitCmd("late")); wire.ErrorCode(err) != wire.CodeUnreachable {
		t.Fatalf("apply after stop: %v", err)
	}
}

// TestCommitterRaft runs concurrent appliers through a real one-node Raft
// (in memory) into the FSM: every caller gets its own results, and the
// log holds fewer entries than there were calls when they overlapped.
func TestCommitterRaft(t *testing.T) {
	fsm := state.New()
	conf := raft.DefaultConfig()
	conf.LocalID = "one"
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.Logger = p2p.NewHCLogger(wiretest.Logger(t), "raft")
	store := raft.NewInmemStore()
	snaps := raft.NewInmemSnapshotStore()
	_, trans := raft.NewInmemTransport("one")
	if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{Servers: []raft.Server{{ID: "one", Address: "one"}}}); err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(conf, fsm, store, store, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown() })
	wiretest.Eventually(t, "leadership", func() bool { return r.State() == raft.Leader })
	if err := r.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	first := r.LastIndex()
	c := newCommitter(func(d []byte, to time.Duration) raft.ApplyFuture { return r.Apply(d, to) }, wiretest.Logger(t))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.run(ctx) }()
	defer func() { stop(); <-done }()

	const workers, each = 16, 40
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				user := fmt.Sprintf("g%d-%d", g, i)
				res, err := c.Apply(context.Background(), submitCmd(user), cancelMissing)
				if err != nil {
					t.Errorf("%s: %v", user, err)
					return
				}
				if len(res) != 2 || res[0].Err != nil || res[1].Err == nil {
					t.Errorf("%s: results %+v", user, res)
					return
				}
				fsm.View(func(v *state.View) {
					if w := v.Work(res[0].ID); w == nil || w.User != user {
						t.Errorf("%s got work %d: %+v", user, res[0].ID, w)
					}
				})
			}
		}()
	}
	wg.Wait()
	entries := r.LastIndex() - first
	t.Logf("%d calls in %d log entries", workers*each, entries)
	if entries > workers*each {
		t.Fatalf("%d entries for %d calls", entries, workers*each)
	}
}

// TestCommitterObservesEntries: every committed entry is reported with
// its commands (for ducc_raft_commit_seconds and _commands); a failed one
// is not.
func TestCommitterObservesEntries(t *testing.T) {
	f := &fakeRaft{fsm: state.New()}
	c := newCommitter(f.apply, wiretest.Logger(t))
	var mu sync.Mutex
	var seen []int
	c.observe = func(commands int, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if took < 0 {
			t.Errorf("negative commit time %v", took)
		}
		seen = append(seen, commands)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.run(ctx) }()
	defer func() { cancel(); <-done }()

	if _, err := c.Apply(context.Background(), submitCmd("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(context.Background(), submitCmd("b"), cancelMissing); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.fail = raft.ErrLeadershipLost
	f.mu.Unlock()
	if _, err := c.Apply(context.Background(), submitCmd("c")); err == nil {
		t.Fatal("an entry Raft refused succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[1 2]" {
		t.Errorf("observed entries of %v commands, want [1 2]", seen)
	}
}

// TestCommitterApplyLater: commands applied later wait for the next entry
// an Apply starts and go first in it; alone, they get an entry of their
// own once due; when the committer stops they are told so.
func TestCommitterApplyLater(t *testing.T) {
	type told struct {
		res []state.Result
		err error
	}
	tell := func(ch chan told) func([]state.Result, error) {
		return func(res []state.Result, err error) { ch <- told{res, err} }
	}
	wait := func(t *testing.T, ch chan told) told {
		t.Helper()
		select {
		case got := <-ch:
			return got
		case <-time.After(10 * time.Second):
			t.Fatal("ApplyLater's caller was never told")
			return told{}
		}
	}

	t.Run("rides with the next Apply", func(t *testing.T) {
		f := &fakeRaft{fsm: state.New()}
		c := startCommitter(t, f)
		later := make(chan told, 1)
		c.ApplyLater([]state.Command{submitCmd("later")}, time.Hour, tell(later))
		wiretest.Eventually(t, "the later command to queue", func() bool { return c.queued() == 1 })
		if got := f.entrySizes(); len(got) != 0 {
			t.Fatalf("a command applied later started entries %v before it was due", got)
		}
		res, err := c.Apply(context.Background(), submitCmd("now"))
		if err != nil || len(res) != 1 {
			t.Fatalf("Apply: %v %+v", err, res)
		}
		got := wait(t, later)
		if got.err != nil || len(got.res) != 1 || got.res[0].ID == 0 || got.res[0].ID >= res[0].ID {
			t.Fatalf("later: %+v; now: %+v (want the later command first)", got, res)
		}
		if sizes := f.entrySizes(); len(sizes) != 1 || sizes[0] != 2 {
			t.Fatalf("entries of %v commands, want one of 2", sizes)
		}
	})

	t.Run("alone once due", func(t *testing.T) {
		f := &fakeRaft{fsm: state.New()}
		c := startCommitter(t, f)
		later := make(chan told, 1)
		c.ApplyLater([]state.Command{submitCmd("later")}, time.Millisecond, tell(later))
		if got := wait(t, later); got.err != nil || len(got.res) != 1 || got.res[0].Err != nil {
			t.Fatalf("later: %+v", got)
		}
		if sizes := f.entrySizes(); len(sizes) != 1 || sizes[0] != 1 {
			t.Fatalf("entries of %v commands, want one of 1", sizes)
		}
	})

	t.Run("told when the committer stops", func(t *testing.T) {
		f := &fakeRaft{fsm: state.New()}
		c := newCommitter(f.apply, wiretest.Logger(t))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); c.run(ctx) }()
		queued := make(chan told, 1)
		c.ApplyLater([]state.Command{submitCmd("queued")}, time.Hour, tell(queued))
		wiretest.Eventually(t, "the later command to queue", func() bool { return c.queued() == 1 })
		cancel()
		<-done
		if got := wait(t, queued); got.err == nil || !strings.Contains(got.err.Error(), "no longer the head") {
			t.Fatalf("queued at the stop: %+v", got)
		}
		after := make(chan told, 1)
		c.ApplyLater([]state.Command{submitCmd("after")}, time.Hour, tell(after))
		if got := wait(t, after); got.err == nil || !strings.Contains(got.err.Error(), "no longer the head") {
			t.Fatalf("after the stop: %+v", got)
		}
		if sizes := f.entrySizes(); len(sizes) != 0 {
			t.Fatalf("entries %v after a stop", sizes)
		}
	})
}
