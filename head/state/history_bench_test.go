package state

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/wire"
)

// finishedShortJobs returns a state that ran n short managed reservations
// (submit, assign, running, exited), the i-th ending at i ms.
func finishedShortJobs(tb testing.TB, n int) *FSM {
	f := New()
	var idx uint64
	entry := func(cmds ...Command) {
		data, err := Encode(cmds...)
		if err != nil {
			tb.Fatal(err)
		}
		idx++
		f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data})
	}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		pid := strconv.FormatUint(id, 10) + ".1"
		t := int64(i)
		entry(Command{Type: CmdSubmit, Time: t, Work: &Work{Kind: wire.WorkManaged, User: "alice", Class: "normal",
			Memory: 1 << 20, Path: "/usr/bin/true", Args: []string{"--flag", "value"}, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/alice"},
			Dir: "/home/alice", LogDir: "/home/alice/ducc/logs", Description: "a short job"}})
		entry(Command{Type: CmdAssign, Time: t, WorkID: id, Assign: &Assignment{Node: "n" + strconv.Itoa(i%10), Shares: 1, MemoryLimit: 1 << 20}})
		entry(Command{Type: CmdProc, Time: t, Proc: &wire.ProcStatus{ID: pid, WorkID: id, State: wire.ProcRunning, PID: 7,
			LogPath: "/home/alice/ducc/logs/" + pid + ".log"}})
		entry(Command{Type: CmdProc, Time: t, Proc: &wire.ProcStatus{ID: pid, WorkID: id, State: wire.ProcExited, MaxRSS: 1 << 20, CPUSeconds: 0.01}})
	}
	return f
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func snapshotSize(tb testing.TB, f *FSM) int {
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		tb.Fatal(err)
	}
	return sink.Len()
}

// BenchmarkPurge purges 10,000 finished short jobs in one command (what
// the head applies after head.retention.work), and reports the heap and
// snapshot bytes per job before (finished work) and after (records).
func BenchmarkPurge(b *testing.B) {
	const n = 10_000
	var before, after uint64
	var snapBefore, snapAfter int
	for b.Loop() {
		b.StopTimer()
		f := finishedShortJobs(b, n)
		snapBefore = snapshotSize(b, f)
		h0 := heapInUse()
		b.StartTimer()
		data, err := Encode(Command{Type: CmdPurge, Time: n + 1, Purge: &Purge{Work: n + 1, Results: n + 1, History: 0}})
		if err != nil {
			b.Fatal(err)
		}
		res, _ := f.Apply(&raft.Log{Index: 1 << 40, Type: raft.LogCommand, Data: data}).([]Result)
		b.StopTimer()
		if len(res) != 1 || res[0].Count != n {
			b.Fatalf("purge: %+v", res)
		}
		h1 := heapInUse()
		before, after = h0, h1
		snapAfter = snapshotSize(b, f)
		runtime.KeepAlive(f)
		b.StartTimer()
	}
	b.ReportMetric(float64(before-after)/n, "heap-B-freed/job")
	b.ReportMetric(float64(snapBefore)/n, "snap-B/finished-job")
	b.ReportMetric(float64(snapAfter)/n, "snap-B/record")
}

// BenchmarkHistoryPage is one `ducc history` page (5,000 records) out of
// 100,000, started by a binary search on the end time.
func BenchmarkHistoryPage(b *testing.B) {
	const n = 100_000
	f := finishedShortJobs(b, n)
	data, _ := Encode(Command{Type: CmdPurge, Time: n + 1, Purge: &Purge{Work: n + 1, Results: n + 1}})
	f.Apply(&raft.Log{Index: 1 << 40, Type: raft.LogCommand, Data: data})
	b.ReportAllocs()
	for b.Loop() {
		f.View(func(v *View) {
			recs, _, _, _ := v.History(HistoryQuery{Since: n / 2, Limit: 5000, Scan: 100_000})
			if len(recs) != 5000 {
				b.Fatalf("%d records", len(recs))
			}
		})
	}
}
