package feed

import (
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// fullFile is a journal file on a disk that fills up: it writes the first
// room bytes of what it is given, then fails with ENOSPC.
type fullFile struct {
	*os.File
	room int
}

func (f *fullFile) Write(b []byte) (int, error) {
	if len(b) <= f.room {
		f.room -= len(b)
		return f.File.Write(b)
	}
	n, _ := f.File.Write(b[:f.room])
	f.room = 0
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// TestJournalDiskFull: a write that fails part way (a full disk) leaves the
// file a journal of the state before it, and once the disk has room the
// next commit rewrites the whole current state.
func TestJournalDiskFull(t *testing.T) {
	for _, tc := range []struct {
		name string
		room int // bytes the failing write gets in
	}{
		{"nothing written", 0},
		{"part of a record", 3},
		{"a record and part of the next", 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j := replay(t, dir, []journalOp{{ready: 7}, {give: []int{1, 2}}, {answer: ok(1, "one")}})
			before, _ := readState(t, dir)
			j.f = &fullFile{File: j.f.(*os.File), room: tc.room}

			j.answer(*ok(2, "two"))
			j.delivered(2)
			j.give([]int{3})
			now := feedState{Ready: true, InitMS: 7, Held: []int{3}}
			snap := func() feedState { return now }
			if err := j.commit(snap); err == nil || !j.stale {
				t.Fatalf("commit on a full disk: err %v, stale %v", err, j.stale)
			}
			// The file is whole: the state before the failed write.
			if st, _ := readState(t, dir); !reflect.DeepEqual(st, before) {
				t.Fatalf("after the failed write the journal says %+v, want %+v", st, before)
			}

			// Still failing: the compaction fails too (its temp file
			// cannot be written: a directory is in the way).
			tmp := filepath.Join(dir, journalFile+".tmp")
			if err := os.MkdirAll(filepath.Join(tmp, "x"), 0o700); err != nil {
				t.Fatal(err)
			}
			j.give([]int{4})
			now.Held = []int{3, 4}
			if err := j.commit(snap); err == nil || !j.stale {
				t.Fatalf("compaction that cannot write: err %v, stale %v", err, j.stale)
			}
			if err := os.RemoveAll(tmp); err != nil {
				t.Fatal(err)
			}

			// Room again: the next commit rewrites the current state, and
			// appends work again after it.
			if err := j.commit(snap); err != nil || j.stale {
				t.Fatalf("commit with room: err %v, stale %v", err, j.stale)
			}
			if st, _ := readState(t, dir); !reflect.DeepEqual(st, now) {
				t.Fatalf("journal says %+v, want %+v", st, now)
			}
			j.answer(*ok(3, "three"))
			if err := j.commit(func() feedState { t.Fatal("unexpected compaction"); return feedState{} }); err != nil {
				t.Fatal(err)
			}
			want := feedState{Ready: true, InitMS: 7, Held: []int{4}, Outcomes: []wire.ItemOutcome{*ok(3, "three")}}
			if st, _ := readState(t, dir); !reflect.DeepEqual(st, want) {
				t.Fatalf("journal says %+v, want %+v", st, want)
			}
			if _, err := os.Stat(filepath.Join(dir, journalFile+".tmp")); !os.IsNotExist(err) {
				t.Fatalf("temp file left: %v", err)
			}
		})
	}
}
