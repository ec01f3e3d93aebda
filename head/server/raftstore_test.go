package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

const testEntries = 200

// pageSize is bbolt's page size for a new file.
var pageSize = os.Getpagesize()

// testEntry is the data of log entry i, large enough that the log spans
// many pages.
func testEntry(i uint64) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("entry %d;", i)), 40)
}

// writeRaftState writes a member's Raft state into dataDir (a log of
// testEntries entries and a current term) the way the agent leaves it.
func writeRaftState(t *testing.T, dataDir string) string {
	t.Helper()
	store, err := openRaftStore(dataDir, false, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= testEntries; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: testEntry(i)})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := store.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	markMember(dataDir, slog.Default())
	return filepath.Join(dataDir, raftDirName, raftDBName)
}

// readsBack checks that a store opened without complaint holds exactly
// the entries written.
func readsBack(t *testing.T, store *raftboltdb.BoltStore) {
	t.Helper()
	for i := uint64(1); i <= testEntries; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !bytes.Equal(l.Data, testEntry(i)) {
			t.Fatalf("entry %d reads back changed: %.40q", i, l.Data)
		}
	}
}

func TestOpenRaftStoreRefusesBadState(t *testing.T) {
	tests := []struct {
		name    string
		spoil   func(t *testing.T, dataDir, db string)
		problem string
	}{
		{"truncated", func(t *testing.T, _, db string) {
			fi, _ := os.Stat(db)
			must(t, os.Truncate(db, fi.Size()/2))
		}, "is corrupt (truncated"},
		{"truncated to one page", func(t *testing.T, _, db string) { must(t, os.Truncate(db, int64(pageSize))) }, "is corrupt"},
		{"meta pages zeroed", func(t *testing.T, _, db string) { writePage(t, db, 0, 0); writePage(t, db, 1, 0) }, "is corrupt"},
		{"empty", func(t *testing.T, _, db string) { must(t, os.Truncate(db, 0)) }, "is empty (0 bytes)"},
		{"deleted, marker left", func(t *testing.T, _, db string) { must(t, os.Remove(db)) }, "is missing, but this node was a member"},
		{"raft dir deleted, marker left", func(t *testing.T, dataDir, _ string) {
			must(t, os.RemoveAll(filepath.Join(dataDir, raftDirName)))
		}, "is missing, but this node was a member"},
		{"deleted, snapshots left", func(t *testing.T, dataDir, db string) {
			must(t, os.Remove(db))
			must(t, os.Remove(filepath.Join(dataDir, memberMarker)))
			must(t, os.MkdirAll(filepath.Join(dataDir, raftDirName, "snapshots", "1-10-1"), 0o700))
		}, "is missing, but this node was a member"},
		{"a directory", func(t *testing.T, _, db string) {
			must(t, os.Remove(db))
			must(t, os.Mkdir(db, 0o700))
		}, "is not a regular file"},
		{"marker but no state", func(t *testing.T, _, db string) {
			must(t, os.Remove(db))
			s, err := raftboltdb.New(raftboltdb.Options{Path: db}) // a sound file without Raft state
			must(t, err)
			must(t, s.Close())
		}, "holds no Raft state, but this node was a member"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			db := writeRaftState(t, dataDir)
			tc.spoil(t, dataDir, db)
			store, err := openRaftStore(dataDir, false, slog.Default())
			if err == nil {
				store.Close()
				t.Fatal("opened a spoiled Raft state")
			}
			var rse *RaftStateError
			if !errors.As(err, &rse) {
				t.Fatalf("error %T %v, want a *RaftStateError", err, err)
			}
			msg := err.Error()
			for _, want := range []string{db + " " + tc.problem, "will not start", "restore the data directory " + dataDir,
				"joins the head group as a new member", "ducc agent --bootstrap-new", "docs/operations.md"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

// TestOpenRaftStoreSpoiledPages zeroes, then fills with garbage, each page
// of a member's raft.db in turn: opening it must never panic, and either
// refuses with a RaftStateError or reads every entry back unchanged (the
// page was free).
func TestOpenRaftStoreSpoiledPages(t *testing.T) {
	for _, mode := range []string{"zeroed", "garbage"} {
		t.Run(mode, func(t *testing.T) {
			dataDir := t.TempDir()
			db := writeRaftState(t, dataDir)
			orig, err := os.ReadFile(db)
			must(t, err)
			pages := len(orig) / pageSize
			if pages < 10 {
				t.Fatalf("raft.db has %d pages; the test wants many", pages)
			}
			refused := 0
			r := rand.New(rand.NewPCG(1, 2))
			for p := range pages {
				must(t, os.WriteFile(db, orig, 0o600))
				writePage(t, db, p, r.Uint64())
				if mode == "zeroed" {
					writePage(t, db, p, 0)
				}
				store, err := openRaftStore(dataDir, false, slog.Default())
				if err != nil {
					var rse *RaftStateError
					if !errors.As(err, &rse) || !strings.Contains(err.Error(), "is corrupt") {
						t.Fatalf("page %d: %v", p, err)
					}
					refused++
					continue
				}
				readsBack(t, store)
				must(t, store.Close())
			}
			if refused == 0 {
				t.Fatalf("no %s page of %d was refused", mode, pages)
			}
			t.Logf("%d of %d %s pages refused", refused, pages, mode)
		})
	}
}

func TestOpenRaftStoreNewAndSound(t *testing.T) {
	dataDir := t.TempDir()
	store, err := openRaftStore(dataDir, false, slog.Default())
	must(t, err)
	must(t, store.Close())
	if exists(filepath.Join(dataDir, memberMarker)) {
		t.Fatal("a new data dir is marked a member before it joined a group")
	}
	// A brand-new data dir again (the agent had not joined yet): still fine.
	store, err = openRaftStore(dataDir, false, slog.Default())
	must(t, err)
	must(t, store.Close())

	writeRaftState(t, t.TempDir()) // a fresh one, below
	dataDir = t.TempDir()
	writeRaftState(t, dataDir)
	store, err = openRaftStore(dataDir, false, slog.Default())
	must(t, err)
	readsBack(t, store)
	must(t, store.Close())

	if _, err := openRaftStore(dataDir, true, slog.Default()); err == nil || !strings.Contains(err.Error(), "is sound") {
		t.Fatalf("--bootstrap-new over a sound state: %v", err)
	}
}

func TestOpenRaftStoreBootstrapNew(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(t *testing.T, dataDir, db string)
	}{
		{"corrupt", func(t *testing.T, _, db string) { writePage(t, db, 0, 0); writePage(t, db, 1, 0) }},
		{"empty", func(t *testing.T, _, db string) { must(t, os.Truncate(db, 0)) }},
		{"deleted", func(t *testing.T, dataDir, _ string) { must(t, os.RemoveAll(filepath.Join(dataDir, raftDirName))) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			db := writeRaftState(t, dataDir)
			tc.spoil(t, dataDir, db)
			store, err := openRaftStore(dataDir, true, slog.Default())
			must(t, err)
			defer store.Close()
			if last, err := store.LastIndex(); err != nil || last != 0 {
				t.Fatalf("the new store has entries up to %d (%v)", last, err)
			}
			if exists(filepath.Join(dataDir, memberMarker)) {
				t.Fatal("the member marker of the old cluster is left")
			}
			aside, _ := filepath.Glob(filepath.Join(dataDir, raftDirName+".old-*"))
			if want := map[bool]int{true: 0, false: 1}[tc.name == "deleted"]; len(aside) != want {
				t.Fatalf("old state moved aside to %v, want %d directory", aside, want)
			}
		})
	}
}

// writePage fills page p of the file with bytes from seed (zeros if 0).
func writePage(t *testing.T, path string, p int, seed uint64) {
	t.Helper()
	buf := make([]byte, pageSize)
	if seed != 0 {
		r := rand.New(rand.NewPCG(seed, seed))
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(t, err)
	defer f.Close()
	_, err = f.WriteAt(buf, int64(p*pageSize))
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOpenRaftStore measures the check and open of a member's raft.db
// holding a log of 10,000 entries of 5 KiB (about 56 MB, a log that
// was never compacted).
func BenchmarkOpenRaftStore(b *testing.B) {
	dataDir := b.TempDir()
	store, err := openRaftStore(dataDir, false, slog.Default())
	if err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 5<<10)
	for start := uint64(1); start <= 10_000; start += 1000 {
		var logs []*raft.Log
		for i := start; i < start+1000; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data})
		}
		if err := store.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		b.Fatal(err)
	}
	store.Close()
	markMember(dataDir, slog.Default())
	db := filepath.Join(dataDir, raftDirName, raftDBName)
	fi, err := os.Stat(db)
	if err != nil {
		b.Fatal(err)
	}
	open := map[string]func() (*raftboltdb.BoltStore, error){
		"checked":   func() (*raftboltdb.BoltStore, error) { return openRaftStore(dataDir, false, slog.Default()) },
		"unchecked": func() (*raftboltdb.BoltStore, error) { return raftboltdb.New(raftboltdb.Options{Path: db}) },
	}
	for _, name := range []string{"checked", "unchecked"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				store, err := open[name]()
				if err != nil {
					b.Fatal(err)
				}
				store.Close()
			}
			b.ReportMetric(float64(fi.Size())/1e6, "MB")
		})
	}
}
