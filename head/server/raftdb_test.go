package server

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/ducc-project/ducc/wire/wiretest"
)

// TestCompactRaftDB: a raft.db whose log was mostly deleted is rewritten
// smaller at start, with the same entries; a small one is left alone.
func TestCompactRaftDB(t *testing.T) {
	tests := []struct {
		name        string
		entries     int // of 64 KiB
		keep        int // the last ones kept
		wantSmaller bool
	}{
		{"mostly free", 800, 10, true},
		{"small file", 100, 10, false},
		{"mostly live", 800, 700, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "raft.db")
			store, err := raftboltdb.New(raftboltdb.Options{Path: path, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte{7}, 64<<10)
			var logs []*raft.Log
			for i := range tc.entries {
				logs = append(logs, &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data})
			}
			if err := store.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
			first := uint64(tc.entries - tc.keep + 1)
			if err := store.DeleteRange(1, first-1); err != nil {
				t.Fatal(err)
			}
			if err := store.SetUint64([]byte("CurrentTerm"), 3); err != nil {
				t.Fatal(err)
			}
			store.Close()
			before := size(t, path)

			if err := compactRaftDB(path, wiretest.Logger(t)); err != nil {
				t.Fatal(err)
			}
			after := size(t, path)
			if smaller := after < before/2; smaller != tc.wantSmaller {
				t.Errorf("%d → %d bytes", before, after)
			}
			store, err = raftboltdb.New(raftboltdb.Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			lo, _ := store.FirstIndex()
			hi, _ := store.LastIndex()
			term, _ := store.GetUint64([]byte("CurrentTerm"))
			if lo != first || hi != uint64(tc.entries) || term != 3 {
				t.Errorf("after compaction: log %d–%d, term %d; want %d–%d, 3", lo, hi, term, first, tc.entries)
			}
			var l raft.Log
			if err := store.GetLog(hi, &l); err != nil || !bytes.Equal(l.Data, data) {
				t.Errorf("last entry: %v", err)
			}
		})
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
