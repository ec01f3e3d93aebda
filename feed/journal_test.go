package feed

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// journalOp is one step a feeder takes, for the table tests.
type journalOp struct {
	ready     int64 // > 0: the worker is ready after this many ms
	give      []int
	answer    *wire.ItemOutcome
	delivered int
	commit    bool
}

func ok(i int, result string) *wire.ItemOutcome {
	return &wire.ItemOutcome{Index: i, OK: true, Result: result, Millis: int64(i)}
}

// replay applies ops to a fresh journal in dir and returns it (still open).
func replay(t testing.TB, dir string, ops []journalOp) *journal {
	t.Helper()
	j, err := openJournal(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.close)
	for _, op := range ops {
		switch {
		case op.ready > 0:
			j.ready(op.ready)
		case op.give != nil:
			j.give(op.give)
		case op.answer != nil:
			j.answer(*op.answer)
		case op.delivered > 0:
			j.delivered(op.delivered)
		}
		if op.commit {
			if err := j.commit(func() feedState { t.Fatal("unexpected compaction"); return feedState{} }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.commit(func() feedState { t.Fatal("unexpected compaction"); return feedState{} }); err != nil {
		t.Fatal(err)
	}
	return j
}

func readState(t testing.TB, dir string) (feedState, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, journalFile))
	if err != nil {
		t.Fatal(err)
	}
	st, n, err := decodeJournal(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if n != len(b) {
		t.Fatalf("decoded %d of %d bytes", n, len(b))
	}
	return st, b
}

func TestJournalReplay(t *testing.T) {
	long := strings.Repeat("x", 70_000) // a length that takes 3 varint bytes
	tests := []struct {
		name string
		ops  []journalOp
		want feedState
	}{
		{"empty", nil, feedState{}},
		{"ready", []journalOp{{ready: 1234}}, feedState{Ready: true, InitMS: 1234}},
		{"held in the order given", []journalOp{{ready: 1}, {give: []int{5, 3}, commit: true}, {give: []int{9}}},
			feedState{Ready: true, InitMS: 1, Held: []int{5, 3, 9}}},
		{"answers wait for the driver", []journalOp{{ready: 1}, {give: []int{0, 1, 2}}, {answer: ok(1, `"r1"`)}, {answer: &wire.ItemOutcome{Index: 0, Error: "boom\nline 2"}}},
			feedState{Ready: true, InitMS: 1, Held: []int{2}, Outcomes: []wire.ItemOutcome{*ok(1, `"r1"`), {Index: 0, Error: "boom\nline 2"}}}},
		{"delivered takes the oldest", []journalOp{{ready: 1}, {give: []int{0, 1, 2}}, {answer: ok(0, "a")}, {answer: ok(1, "b")}, {delivered: 1, commit: true}, {answer: ok(2, "c")}},
			feedState{Ready: true, InitMS: 1, Outcomes: []wire.ItemOutcome{*ok(1, "b"), *ok(2, "c")}}},
		{"all delivered", []journalOp{{ready: 1}, {give: []int{7}}, {answer: ok(7, long)}, {delivered: 1}},
			feedState{Ready: true, InitMS: 1}},
		{"an item given again after its answer", []journalOp{{ready: 1}, {give: []int{4}}, {answer: &wire.ItemOutcome{Index: 4, Error: "e"}}, {give: []int{4}}},
			feedState{Ready: true, InitMS: 1, Held: []int{4}, Outcomes: []wire.ItemOutcome{{Index: 4, Error: "e"}}}},
		{"negative index and millis", []journalOp{{ready: 1}, {answer: &wire.ItemOutcome{Index: -3, OK: true, Millis: -1}}},
			feedState{Ready: true, InitMS: 1, Outcomes: []wire.ItemOutcome{{Index: -3, OK: true, Millis: -1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			replay(t, dir, tc.ops)
			got, _ := readState(t, dir)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("replayed\n got %+v\nwant %+v", got, tc.want)
			}
			// Reopening compacts to the same state.
			j, err := openJournal(dir, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			j.close()
			if !reflect.DeepEqual(j.state, tc.want) {
				t.Fatalf("open\n got %+v\nwant %+v", j.state, tc.want)
			}
			if again, _ := readState(t, dir); !reflect.DeepEqual(again, tc.want) {
				t.Fatalf("compacted\n got %+v\nwant %+v", again, tc.want)
			}
		})
	}
}

// TestJournalTorn cuts a journal at every length: a cut in the last record
// is no error, and the state is that of the whole records before the cut.
func TestJournalTorn(t *testing.T) {
	dir := t.TempDir()
	replay(t, dir, []journalOp{{ready: 9}, {give: []int{1, 2, 300}}, {answer: ok(2, `{"a": 1}`)}, {delivered: 1}, {give: []int{4}}, {answer: &wire.ItemOutcome{Index: 300, Error: "bad"}}})
	full, b := readState(t, dir)
	// The state after each whole record, keyed by the length up to it.
	byLen := map[int]feedState{}
	for cut := 0; cut <= len(b); cut++ {
		st, n, err := decodeJournal(b[:cut])
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if n > cut {
			t.Fatalf("cut at %d: read %d bytes", cut, n)
		}
		if prev, seen := byLen[n]; seen && !reflect.DeepEqual(prev, st) {
			t.Fatalf("cut at %d: state %+v differs from %+v for the same %d whole bytes", cut, st, prev, n)
		}
		byLen[n] = st
	}
	if got := byLen[len(b)]; !reflect.DeepEqual(got, full) {
		t.Fatalf("whole journal: %+v, want %+v", got, full)
	}
	// Nothing, the magic line, then one per record.
	if len(byLen) != 1+1+6 {
		t.Fatalf("%d distinct whole prefixes, want one per record", len(byLen))
	}
}

// rec builds one record around body.
func rec(body ...byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(body)))
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

func TestJournalGarbage(t *testing.T) {
	magic := []byte(journalMagic)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	badCRC := rec('R', 2)
	badCRC[len(badCRC)-1] ^= 0xff
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"foreign file", []byte("hello, world\n and more"), "bad magic"},
		{"old JSON state", []byte(`{"ready": true}`), "bad magic"},
		{"checksum", cat(magic, rec('R', 2), badCRC), "record at offset 27: checksum mismatch"},
		{"unknown type", cat(magic, rec('Z', 1)), "unknown record type"},
		{"empty body", cat(magic, []byte{0, 0, 0, 0, 0}), "bad length"},
		{"huge length", cat(magic, binary.AppendUvarint(nil, 1<<40), []byte("xxxx")), "bad length"},
		{"delivered more than waiting", cat(magic, rec('D', 1)), "only 0 waiting"},
		{"answer cut inside", cat(magic, rec('A', 2, 1)), "unexpected EOF"},
		{"give count past the record", cat(magic, rec('G', 100, 2)), "bad count"},
		{"bytes left over", cat(magic, rec('R', 2, 7)), "left over"},
		{"string past the record", cat(magic, rec('A', 2, 1, 2, 50, 'x')), "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, err := decodeJournal(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if !reflect.DeepEqual(st, feedState{}) {
				t.Fatalf("state %+v returned with an error", st)
			}
		})
	}
}

// TestJournalOpen: a damaged journal starts afresh (and is rewritten), the
// JSON state of an older agent is taken over, and a journal past its bound
// is compacted from the feeder's snapshot.
func TestJournalOpen(t *testing.T) {
	t.Run("damaged", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, journalFile), []byte("garbage that is not a journal"), 0o600)
		var logb bytes.Buffer
		j, err := openJournal(dir, slog.New(slog.NewTextHandler(&logb, nil)))
		if err != nil {
			t.Fatal(err)
		}
		j.close()
		if !reflect.DeepEqual(j.state, feedState{}) || !strings.Contains(logb.String(), "bad magic") {
			t.Fatalf("state %+v, log %q", j.state, logb.String())
		}
		if st, _ := readState(t, dir); !reflect.DeepEqual(st, feedState{}) {
			t.Fatalf("rewritten as %+v", st)
		}
	})
	t.Run("legacy", func(t *testing.T) {
		dir := t.TempDir()
		want := feedState{Ready: true, InitMS: 5, Held: []int{3}, Outcomes: []wire.ItemOutcome{*ok(2, "r")}}
		os.WriteFile(filepath.Join(dir, journalLegacy), []byte(`{"ready":true,"init_ms":5,"held":[3],"outcomes":[{"index":2,"ok":true,"result":"r","millis":2}]}old tail`), 0o600)
		j, err := openJournal(dir, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		j.close()
		if !reflect.DeepEqual(j.state, want) {
			t.Fatalf("state %+v, want %+v", j.state, want)
		}
		if st, _ := readState(t, dir); !reflect.DeepEqual(st, want) {
			t.Fatalf("rewritten as %+v", st)
		}
		if _, err := os.Stat(filepath.Join(dir, journalLegacy)); !os.IsNotExist(err) {
			t.Fatalf("legacy file left: %v", err)
		}
	})
	t.Run("compaction", func(t *testing.T) {
		dir := t.TempDir()
		j, err := openJournal(dir, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer j.close()
		j.limit = 200
		snap := feedState{Ready: true, InitMS: 1}
		compactions := 0
		for i := range 100 {
			j.give([]int{i})
			j.answer(*ok(i, "result"))
			j.delivered(1)
			if err := j.commit(func() feedState { compactions++; return snap }); err != nil {
				t.Fatal(err)
			}
			if j.size > 200 {
				t.Fatalf("journal of %d bytes past its bound", j.size)
			}
			j.limit = 200 // a compaction sets it to at least minCompact
		}
		if compactions == 0 {
			t.Fatal("never compacted")
		}
		if st, _ := readState(t, dir); !reflect.DeepEqual(st, snap) {
			t.Fatalf("state %+v, want %+v", st, snap)
		}
	})
}

func FuzzDecodeJournal(f *testing.F) {
	dir := f.TempDir()
	replay(f, dir, []journalOp{{ready: 3}, {give: []int{1, 2}}, {answer: ok(1, `"x"`)}, {delivered: 1}, {answer: &wire.ItemOutcome{Index: 2, Error: "e"}}})
	b, _ := os.ReadFile(filepath.Join(dir, journalFile))
	f.Add(b)
	f.Add([]byte(journalMagic))
	f.Add([]byte(`{"ready": true}`))
	f.Add(append([]byte(journalMagic), rec('D', 1)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, n, err := decodeJournal(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("read %d of %d bytes", n, len(b))
		}
		// What decodes survives a compaction unchanged.
		dir := t.TempDir()
		j := &journal{path: filepath.Join(dir, journalFile)}
		if err := j.compact(st); err != nil {
			t.Fatal(err)
		}
		j.close()
		again, _ := readState(t, dir)
		if !reflect.DeepEqual(again, st) {
			t.Fatalf("compacted %+v, decoded %+v", again, st)
		}
	})
}

// TestFeederJournalMatchesState drives a feeder through a job's steps
// (ready, items handed out, answers, a delivered and a failed exchange, a
// compaction) and checks after each that its journal, replayed, is what
// the feeder holds, and that a feeder resuming from it holds the same.
func TestFeederJournalMatchesState(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() { defer close(drained); _, _ = io.Copy(io.Discard, r) }()
	t.Cleanup(func() { w.Close(); <-drained; r.Close() })
	log := slog.New(slog.DiscardHandler)
	jr, err := openJournal(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(jr.close)
	s := &Streams{node: "n1", log: log}
	spec := wire.ProcSpec{ID: "3.1", WorkID: 3, Pipelines: 2}
	f := newFeeder(context.Background(), s, log, spec, time.Now(), w, jr)
	// The test drives the feeder by hand: its retry timer must not start
	// an exchange.
	f.stopped = true

	sorted := func(st feedState) feedState {
		st.Held = slices.Sorted(slices.Values(st.Held))
		if len(st.Held) == 0 {
			st.Held = nil
		}
		if len(st.Outcomes) == 0 {
			st.Outcomes = nil
		}
		return st
	}
	check := func(step string) {
		t.Helper()
		got, _ := readState(t, dir)
		if want := sorted(f.snapshot()); !reflect.DeepEqual(sorted(got), want) {
			t.Fatalf("after %s: journal says\n%+v\nfeeder holds\n%+v", step, sorted(got), want)
		}
	}
	outcome := func(i int) feedEvent {
		return feedEvent{outcome: &wire.ItemOutcome{Index: i, OK: true, Result: strconv.Itoa(i * i)}}
	}
	items := func(from, to int) []wire.WorkItem {
		var out []wire.WorkItem
		for i := from; i < to; i++ {
			out = append(out, wire.WorkItem{Index: i, Item: strconv.Itoa(i)})
		}
		return out
	}
	f.take([]feedEvent{{ready: true}})
	check("ready")
	if _, ok := f.nextExchange(); !ok {
		t.Fatal("no exchange after ready")
	}
	f.answered(exchangeResult{rep: wire.ExchangeReply{Items: items(0, 5)}})
	check("items handed out")
	f.take([]feedEvent{outcome(0), outcome(1)})
	check("two answers, two more items handed out")
	if _, ok := f.nextExchange(); !ok {
		t.Fatal("no exchange with answers to deliver")
	}
	check("answers on their way")
	f.answered(exchangeResult{})
	check("answers delivered")
	f.take([]feedEvent{outcome(2)})
	if _, ok := f.nextExchange(); !ok {
		t.Fatal("no exchange with an answer to deliver")
	}
	f.answered(exchangeResult{err: errors.New("head unreachable")})
	check("a failed exchange")
	f.jr.limit = 0 // the next commit compacts
	f.retrying = false
	f.take([]feedEvent{outcome(3)})
	check("a compaction")
	if len(f.outcomes) != 2 || len(f.outstanding) != 1 {
		t.Fatalf("feeder holds %d answers and %d items, want 2 and 1", len(f.outcomes), len(f.outstanding))
	}

	// A restarted agent resumes with the same items and answers.
	jr2, err := openJournal(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	defer jr2.close()
	f2 := newFeeder(context.Background(), s, log, spec, time.Now(), w, jr2)
	if !reflect.DeepEqual(sorted(f2.snapshot()), sorted(f.snapshot())) {
		t.Fatalf("resumed with %+v, want %+v", f2.snapshot(), f.snapshot())
	}
}
