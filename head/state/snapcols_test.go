package state

import (
	"bytes"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// jobWith returns a finished job holding items.
func jobWith(id uint64, items []Item) *Work {
	return &Work{ID: id, Kind: wire.WorkJob, User: "alice", Class: "normal", State: StateCompleted,
		Job: &Job{Spec: wire.JobSpec{Executable: "w"}, Items: items, Committed: true}}
}

func TestSnapshotItemColumns(t *testing.T) {
	big := strings.Repeat("x", colBytes/3) // three of them close a chunk
	mixed := make([]Item, 0, snapChunk+10)
	for i := range snapChunk + 10 {
		it := Item{Data: strconv.Itoa(i)}
		switch i % 4 {
		case 1:
			it.State, it.Millis, it.Proc, it.Result = ItemDone, int64(i), "7.1", `{"n": `+strconv.Itoa(i)+`}`
		case 2:
			it.State, it.Attempts, it.Error, it.Proc = ItemFailed, 3, "boom é", "7.2"
		case 3:
			it.Attempts = 1
		}
		mixed = append(mixed, it)
	}
	tests := []struct {
		name  string
		items []Item
	}{
		{"one pending", []Item{{Data: "a"}}},
		{"empty data", []Item{{Data: ""}, {Data: ""}, {Data: "z"}}},
		{"every field, more than a chunk", mixed},
		{"chunks closed by size", []Item{{Data: big}, {Data: big}, {Data: big}, {Data: big, Result: big}, {Data: "last"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cols := splitCols(tc.items)
			var got []Item
			for _, c := range cols {
				var err error
				if got, err = c.appendTo(got); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(got, tc.items) {
				t.Errorf("items differ after %d chunks", len(cols))
			}
			f := New()
			f.work[7] = jobWith(7, tc.items)
			f.nextID, f.index = 8, 42
			g := roundTrip(t, f)
			g.View(func(v *View) {
				if w := v.Work(7); w == nil || !reflect.DeepEqual(w.Job.Items, tc.items) || v.Index() != 42 || v.NextID() != 8 {
					t.Errorf("restored state differs (index %d, next %d)", v.Index(), v.NextID())
				}
			})
		})
	}
}

func roundTrip(t *testing.T, f *FSM) *FSM {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&sink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := New()
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRestoreVersion1 reads a snapshot written by an older ducc (items as
// a list of maps).
func TestRestoreVersion1(t *testing.T) {
	items := []Item{{Data: "a", State: ItemDone, Proc: "1.1", Millis: 5}, {Data: "b"}}
	var buf bytes.Buffer
	w := *jobWith(1, nil)
	j := *w.Job
	j.NItems = len(items)
	w.Job = &j
	for _, m := range []any{snapHeader{Version: 1, NextID: 2, Count: 1}, &w, items} {
		if err := wire.WriteMsg(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	g := New()
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	g.View(func(v *View) {
		if w := v.Work(1); w == nil || !reflect.DeepEqual(w.Job.Items, items) || v.NextID() != 2 {
			t.Errorf("version 1 snapshot restored wrong: %+v", w)
		}
	})
}

func TestRestoreRefusesBadColumns(t *testing.T) {
	tests := []struct {
		name string
		c    itemCols
	}{
		{"no items", itemCols{}},
		{"too many items", itemCols{N: snapChunk + 1}},
		{"no data lengths", itemCols{N: 1, Data: "a"}},
		{"short data lengths", itemCols{N: 2, Data: "ab", DataLen: []byte{2}}},
		{"string past the data", itemCols{N: 1, Data: "ab", DataLen: []byte{3}}},
		{"lengths short of the data", itemCols{N: 2, Data: "abc", DataLen: []byte{1, 1}}},
		{"short state column", itemCols{N: 2, Data: "ab", DataLen: []byte{1, 1}, State: []byte{1}}},
		{"short attempts", itemCols{N: 2, Data: "ab", DataLen: []byte{1, 1}, Attempts: []byte{1}}},
		{"unknown process", itemCols{N: 1, Data: "a", DataLen: []byte{1}, Proc: []byte{2}, Procs: []string{"1.1"}}},
		{"results without lengths", itemCols{N: 1, Data: "a", DataLen: []byte{1}, Result: "r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.c.appendTo(nil); err == nil {
				t.Errorf("accepted %+v", tc.c)
			}
		})
	}
}
