package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// The Raft state of a head-eligible agent lives in data_dir/raft: the log
// and the stable store in raft.db (bbolt), snapshots in snapshots/. The
// file data_dir/raft.member says that this node has been a member of a
// head group, so that a data directory that lost raft/ is not taken for a
// brand-new one (which would silently start an empty cluster).
const (
	raftDirName    = "raft"
	raftDBName     = "raft.db"
	memberMarker   = "raft.member"
	markerContents = "This node has been a member of a ducc head group; its Raft state is in raft/.\n" +
		"Without raft/ the agent refuses to start: see docs/operations.md, \"Lost or corrupt Raft state\".\n"
)

// raftCheckTimeout bounds the check of raft.db: a corrupt file whose pages
// point at each other could keep a walk going forever.
const raftCheckTimeout = 2 * time.Minute

// RaftStateError says that a head-eligible agent's Raft state cannot be
// used (corrupt, empty or missing) and what the operator can do; the
// agent does not start.
type RaftStateError struct {
	DataDir string
	Path    string // the file or directory at fault
	Problem string // "is corrupt", "is empty", "is missing", ...
	Err     error  // the cause found by the check, if any
}

func (e *RaftStateError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the Raft state of this head-eligible agent cannot be used: %s %s", e.Path, e.Problem)
	if e.Err != nil {
		fmt.Fprintf(&b, " (%v)", e.Err)
	}
	raftDir := filepath.Join(e.DataDir, raftDirName)
	fmt.Fprintf(&b, ". The agent will not start; it changed nothing. Recover in one of these ways (docs/operations.md, \"Lost or corrupt Raft state\"):\n"+
		"  - restore the data directory %s from a backup taken while the agent was stopped;\n"+
		"  - if other head-eligible agents still hold the cluster's state: run `ducc admin remove-server <this node>` against them, "+
		"move %s and %s away, and start this agent again: it joins the head group as a new member;\n"+
		"  - start an empty cluster on purpose: `ducc agent --bootstrap-new` (the old state is moved aside to %s.old-<time>; "+
		"every job, service and reservation of the old cluster is forgotten, processes it left running are reported, not stopped)",
		e.DataDir, raftDir, filepath.Join(e.DataDir, memberMarker), raftDir)
	return b.String()
}

func (e *RaftStateError) Unwrap() error { return e.Err }

// openRaftStore opens data_dir/raft/raft.db after checking it. A corrupt,
// empty or missing Raft state of a node that was a member before is a
// *RaftStateError; a data directory never used by a head (no raft.db, no
// marker, no snapshot) gets a new, empty store. With bootstrapNew the
// state found unusable is moved aside first and the agent starts as a new
// one; with a sound state bootstrapNew is refused (it would throw a
// cluster away).
func openRaftStore(dataDir string, bootstrapNew bool, log *slog.Logger) (*raftboltdb.BoltStore, error) {
	dir := filepath.Join(dataDir, raftDirName)
	db := filepath.Join(dir, raftDBName)
	problem := checkRaftState(dataDir)
	if problem != nil && bootstrapNew {
		aside := fmt.Sprintf("%s.old-%s", dir, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.Rename(dir, aside); errors.Is(err, fs.ErrNotExist) {
			aside = "" // nothing left to keep
		} else if err != nil {
			return nil, fmt.Errorf("--bootstrap-new: move the old Raft state aside: %w", err)
		}
		if err := os.Remove(filepath.Join(dataDir, memberMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--bootstrap-new: %w", err)
		}
		log.Warn("starting a new, empty cluster on purpose (--bootstrap-new); the old Raft state was moved aside",
			"problem", problem.Problem, "err", problem.Err, "moved_to", aside)
		problem = nil
	} else if problem == nil && bootstrapNew && exists(db) {
		return nil, fmt.Errorf("--bootstrap-new: the Raft state in %s is sound; starting empty would throw this cluster away. "+
			"Start the agent without --bootstrap-new (to start empty anyway, stop the agent and move %s away first)", db, dir)
	}
	if problem != nil {
		return nil, problem
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create raft dir: %w", err)
	}
	// A sound file that is mostly free pages is rewritten smaller first.
	if err := compactRaftDB(db, log); err != nil {
		return nil, err
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: db, BoltOptions: &bbolt.Options{Timeout: 10 * time.Second}})
	if err != nil {
		return nil, &RaftStateError{DataDir: dataDir, Path: db, Problem: "cannot be opened", Err: err}
	}
	if err := checkRaftLog(store); err != nil {
		store.Close()
		return nil, &RaftStateError{DataDir: dataDir, Path: db, Problem: "is corrupt", Err: err}
	}
	if why := wasMember(dataDir); why != "" && !holdsState(store) {
		store.Close()
		return nil, &RaftStateError{DataDir: dataDir, Path: db, Problem: "holds no Raft state, but this node was a member of a head group (" + why + ")"}
	}
	return store, nil
}

// checkRaftState looks at data_dir/raft before anything opens it: a
// member's state must be there, and raft.db must be a sound bbolt file.
func checkRaftState(dataDir string) *RaftStateError {
	dir := filepath.Join(dataDir, raftDirName)
	db := filepath.Join(dir, raftDBName)
	fi, err := os.Stat(db)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if why := wasMember(dataDir); why != "" {
			return &RaftStateError{DataDir: dataDir, Path: db, Problem: "is missing, but this node was a member of a head group (" + why + ")"}
		}
		return nil // a new head-eligible agent
	case err != nil:
		return &RaftStateError{DataDir: dataDir, Path: db, Problem: "cannot be read", Err: err}
	case !fi.Mode().IsRegular():
		return &RaftStateError{DataDir: dataDir, Path: db, Problem: "is not a regular file"}
	case fi.Size() == 0:
		return &RaftStateError{DataDir: dataDir, Path: db, Problem: "is empty (0 bytes)"}
	}
	if used, ok := boltUsed(db); ok && used > fi.Size() {
		return &RaftStateError{DataDir: dataDir, Path: db, Problem: fmt.Sprintf("is corrupt (truncated: %d bytes of %d)", fi.Size(), used)}
	}
	if err := checkBolt(db, raftCheckTimeout); err != nil {
		return &RaftStateError{DataDir: dataDir, Path: db, Problem: "is corrupt", Err: err}
	}
	return nil
}

// wasMember says why the data directory shows that this node was a member
// of a head group, or "".
func wasMember(dataDir string) string {
	if exists(filepath.Join(dataDir, memberMarker)) {
		return filepath.Join(dataDir, memberMarker) + " exists"
	}
	snaps := filepath.Join(dataDir, raftDirName, "snapshots")
	if ents, err := os.ReadDir(snaps); err == nil && len(ents) > 0 {
		return snaps + " holds snapshots"
	}
	return ""
}

// checkBolt opens the bbolt file at path read-only and reads every page
// reachable from its root. bbolt
// trusts its file: on a corrupt one it panics or faults (reading past a
// truncated file's end). The walk runs on a goroutine of its own that
// turns faults into panics and recovers them; if it does not end within
// timeout (pages that loop), the file is reported corrupt and the
// goroutine is left behind: the agent refuses to start and exits.
func checkBolt(path string, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		done <- walkBolt(path)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("reading it took over %s: its pages probably loop", timeout)
	}
}

// boltUsed reads the size a bbolt file uses (its high-water page times the
// page size) from its newest valid meta page, without bbolt: bbolt maps
// the file and faults on a truncated one. ok is false when neither meta
// page is valid (checkBolt then says why).
func boltUsed(path string) (used int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	// The layout of a meta page (bbolt 1.3): a 16-byte page header, then
	// magic, version, page size and flags (4 bytes each), the root
	// bucket (16), the freelist page, the high-water page, the
	// transaction id and an FNV-64a checksum of what precedes it (8 each).
	const magic, metaLen = 0xED0CDAED, 64
	read := func(off int64) (pgid, txid uint64, pageSize int64, ok bool) {
		b := make([]byte, 16+metaLen)
		if _, err := f.ReadAt(b, off); err != nil {
			return 0, 0, 0, false
		}
		m := b[16:]
		le := binary.LittleEndian
		h := fnv.New64a()
		h.Write(m[:56])
		if le.Uint32(m[0:]) != magic || le.Uint64(m[56:]) != h.Sum64() {
			return 0, 0, 0, false
		}
		return le.Uint64(m[40:]), le.Uint64(m[48:]), int64(le.Uint32(m[8:])), true
	}
	pg0, tx0, ps, ok0 := read(0)
	if !ok0 {
		ps = int64(os.Getpagesize())
	}
	pg1, tx1, ps1, ok1 := read(ps)
	switch {
	case ok0 && (!ok1 || tx0 >= tx1):
		return int64(pg0) * ps, true
	case ok1:
		return int64(pg1) * ps1, true
	}
	return 0, false
}

// walkBolt reads the file at path as checkBolt says; a panic is returned
// as an error, after unlocking and closing the file (the Raft store opens
// it next).
func walkBolt(path string) (err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	var file *os.File
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				// bbolt may not have unmapped the file, and the
				// mapping keeps the lock: unlock it by hand.
				_ = syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
				file.Close()
			}
			err = fmt.Errorf("bbolt: %v", r)
		}
	}()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: 5 * time.Second,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		}})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		if tx.Size() > fi.Size() {
			return fmt.Errorf("truncated: %d bytes of %d", fi.Size(), tx.Size())
		}
		// Not tx.Check: it runs on a goroutine of bbolt's, where a
		// corrupt page's panic cannot be recovered.
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return walkBucket(b) })
	})
}

// walkBucket visits every key and value of b and its nested buckets,
// touching each value's first and last byte: a value that a corrupt page
// places outside the file faults here, not later in Raft. (Reading every
// byte would cost twice the check; checkRaftLog decodes the entries.)
func walkBucket(b *bbolt.Bucket) error {
	var sum byte
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				return walkBucket(nb)
			}
			return nil
		}
		if len(v) > 0 {
			sum ^= v[0] ^ v[len(v)-1]
		}
		return nil
	})
}

// checkRaftLog decodes every entry of the Raft log: Raft panics on an
// entry it cannot read when it replays the log.
func checkRaftLog(store *raftboltdb.BoltStore) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("raft log: %v", r)
		}
	}()
	first, err := store.FirstIndex()
	if err != nil {
		return fmt.Errorf("raft log: first index: %w", err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return fmt.Errorf("raft log: last index: %w", err)
	}
	if first == 0 && last == 0 {
		return nil
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		if err := store.GetLog(i, &l); err != nil {
			return fmt.Errorf("raft log entry %d of %d..%d: %w", i, first, last, err)
		}
	}
	for _, k := range []string{"CurrentTerm", "LastVoteTerm"} {
		if _, err := store.GetUint64([]byte(k)); err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
			return fmt.Errorf("raft stable store %s: %w", k, err)
		}
	}
	return nil
}

// holdsState reports whether the store holds a term or a log entry (what
// raft.HasExistingState looks for besides snapshots).
func holdsState(store *raftboltdb.BoltStore) bool {
	term, _ := store.GetUint64([]byte("CurrentTerm"))
	last, _ := store.LastIndex()
	return term > 0 || last > 0
}

// markMember records that this node is a member of a head group (once;
// a failure is logged: the marker only guards against a lost raft/).
func markMember(dataDir string, log *slog.Logger) {
	p := filepath.Join(dataDir, memberMarker)
	if exists(p) {
		return
	}
	if err := os.WriteFile(p, []byte(markerContents), 0o600); err != nil {
		log.Warn("cannot record that this node is a member of the head group", "file", p, "err", err)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// setMember marks this candidate a member of the head group, on disk too
// (markMember) the first time.
func (c *candidate) setMember() {
	if !c.member.Swap(true) {
		markMember(c.cfg.DataDir, c.log)
	}
}
