package state_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
)

// history applies jobs jobs of items items (statetest.JobHistory) to a new
// state and returns it.
func history(tb testing.TB, jobs, items int) *state.FSM {
	tb.Helper()
	f := state.New()
	a := &statetest.Applier{FSM: f}
	for _, cmds := range statetest.JobHistory(jobs, items) {
		res, err := a.Apply(tb.Context(), cmds...)
		if err != nil || len(res) != 1 || res[0].Err != nil {
			tb.Fatalf("apply %+v: %v %+v", cmds[0].Type, err, res)
		}
	}
	return f
}

type bufSink struct{ bytes.Buffer }

func (s *bufSink) ID() string    { return "bench" }
func (s *bufSink) Cancel() error { return nil }
func (s *bufSink) Close() error  { return nil }

func persist(tb testing.TB, f *state.FSM) []byte {
	tb.Helper()
	b, _ := persistTimed(tb, f)
	return b
}

// persistTimed also returns how long Snapshot took: the time the state's
// lock is held (Persist runs beside applies).
func persistTimed(tb testing.TB, f *state.FSM) ([]byte, time.Duration) {
	tb.Helper()
	start := time.Now()
	snap, err := f.Snapshot()
	locked := time.Since(start)
	if err != nil {
		tb.Fatal(err)
	}
	var s bufSink
	if err := snap.Persist(&s); err != nil {
		tb.Fatal(err)
	}
	snap.Release()
	return s.Bytes(), locked
}

// BenchmarkSnapshot600k takes and writes a snapshot of a state that holds
// 30 finished jobs of 20,000 items (600,000 items of history).
//
//	go test -run XXX -bench Snapshot600k -benchtime 10x ./head/state/
func BenchmarkSnapshot600k(b *testing.B) {
	f := history(b, 30, 20_000)
	var n int
	var locked time.Duration
	for b.Loop() {
		data, d := persistTimed(b, f)
		n, locked = len(data), locked+d
	}
	b.ReportMetric(float64(n)/1e6, "MB")
	b.ReportMetric(float64(locked.Microseconds())/1e3/float64(b.N), "locked-ms")
}

// BenchmarkRestore600k restores that snapshot into a new state.
func BenchmarkRestore600k(b *testing.B) {
	data := persist(b, history(b, 30, 20_000))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := state.New().Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			b.Fatal(err)
		}
	}
}

var _ raft.SnapshotSink = (*bufSink)(nil)
