package feed

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/ducc-project/ducc/wire"
)

// The feed journal is what a feeder writes so that a restarted agent can
// resume feeding a re-adopted worker: whether the worker is ready, which
// items are in it, and which answers have not reached the job driver yet.
//
// It is append-only: each batch of the feeder adds a few records in one
// write (items handed to the worker, answers read from it, answers the
// driver acknowledged), so its cost follows the batch, not what is held.
// It is compacted (rewritten as the records of the current state, then
// renamed over the old file) when it has grown past a bound, and on every
// open. No fsync: it protects against the agent dying, not the machine,
// and the machine's death takes the worker with it.
//
// The file is the magic line, then records:
//
//	uvarint len(body) | body | CRC-32C of body (4 bytes, little endian)
//
// A body is a type byte and its payload (varints unless said otherwise):
//
//	'R' initMS                      the worker is ready
//	'G' count, index...             items written to the worker
//	'A' index, ok (1 byte), millis, len, result, len, error
//	                                an answer read from the worker: the item
//	                                leaves the worker and the answer waits
//	                                for the driver
//	'D' count                       the driver took the oldest count waiting
//	                                answers
//
// The agent is killed, not the kernel, so a write is cut short at worst:
// a last record that ends early is dropped without complaint. Anything else
// that does not decode is an error naming its offset.
const (
	journalFile   = "feed.journal"
	journalLegacy = "feed.json" // the rewritten-in-place JSON state of older agents
	journalMagic  = "ducc feed journal 1\n"

	recReady     = 'R'
	recGive      = 'G'
	recAnswer    = 'A'
	recDelivered = 'D'

	maxRecord = 2*maxLine + 64 // an answer with a result and an error of one line each
	// A journal is compacted once it is this large and four times the
	// size of its last compaction.
	minCompact = 1 << 20
	giveChunk  = 4096
)

// checksum is a record's checksum, CRC-32C.
func checksum(body []byte) uint32 {
	return crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) // the table is made once
}

// feedState is what the journal's records add up to.
type feedState struct {
	Ready    bool               `json:"ready,omitempty"`
	InitMS   int64              `json:"init_ms,omitempty"`
	Held     []int              `json:"held,omitempty"`
	Outcomes []wire.ItemOutcome `json:"outcomes,omitempty"`
}

// journal is one job process's feed journal, open for appending.
type journal struct {
	path  string
	f     appendFile
	size  int64  // bytes in the file
	limit int64  // compact past this size
	buf   []byte // records not written yet
	state feedState
	// stale is set when a write failed (a full disk): the file lags the
	// feeder's state, so the next commit compacts instead of appending.
	stale bool
}

// appendFile is the journal file open for appending (an *os.File).
type appendFile interface {
	Write(b []byte) (int, error)
	Truncate(size int64) error
	Close() error
}

// openJournal reads the journal in dir (or the JSON state an older agent
// left there), keeps what it says in state, and rewrites it compacted. A
// journal that does not decode is logged and started afresh, as if the
// worker were new: the feeder then waits for it to say it is ready.
func openJournal(dir string, log *slog.Logger) (*journal, error) {
	j := &journal{path: filepath.Join(dir, journalFile)}
	b, err := os.ReadFile(j.path)
	switch {
	case err == nil:
		st, _, derr := decodeJournal(b)
		if derr != nil {
			log.Warn("the feed journal is damaged; starting afresh", "path", j.path, "err", derr)
		}
		j.state = st
	case errors.Is(err, os.ErrNotExist):
		legacy := filepath.Join(dir, journalLegacy)
		if b, err := os.ReadFile(legacy); err == nil && len(b) > 0 {
			// Decode the first value only: a torn rewrite leaves old bytes after it.
			if err := json.NewDecoder(bytes.NewReader(b)).Decode(&j.state); err != nil {
				log.Warn("the feed journal is damaged; starting afresh", "path", legacy, "err", err)
				j.state = feedState{}
			}
		}
	default:
		return nil, fmt.Errorf("read the feed journal: %w", err)
	}
	if err := j.compact(j.state); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(dir, journalLegacy))
	return j, nil
}

// ready records that the worker is ready.
func (j *journal) ready(initMS int64) {
	j.record(recReady, func(b []byte) []byte { return binary.AppendVarint(b, initMS) })
}

// give records items written to the worker (in records of at most
// giveChunk items, so a record stays small whatever the pipeline count).
func (j *journal) give(indexes []int) {
	for len(indexes) > 0 {
		chunk := indexes[:min(len(indexes), giveChunk)]
		indexes = indexes[len(chunk):]
		j.record(recGive, func(b []byte) []byte {
			b = binary.AppendUvarint(b, uint64(len(chunk)))
			for _, i := range chunk {
				b = binary.AppendVarint(b, int64(i))
			}
			return b
		})
	}
}

// answer records an answer read from the worker.
func (j *journal) answer(o wire.ItemOutcome) {
	j.record(recAnswer, func(b []byte) []byte { return appendOutcome(b, o) })
}

// delivered records that the job driver took the n oldest waiting answers.
func (j *journal) delivered(n int) {
	if n == 0 {
		return
	}
	j.record(recDelivered, func(b []byte) []byte { return binary.AppendUvarint(b, uint64(n)) })
}

// record appends one record to the buffer: its length is patched in once
// the body is encoded.
func (j *journal) record(typ byte, body func([]byte) []byte) {
	start := len(j.buf)
	j.buf = append(j.buf, 0, 0, 0, 0, 0) // room for the length (5 bytes cover maxRecord)
	bodyAt := len(j.buf)
	j.buf = append(j.buf, typ)
	j.buf = body(j.buf)
	n := len(j.buf) - bodyAt
	j.buf = binary.LittleEndian.AppendUint32(j.buf, checksum(j.buf[bodyAt:]))
	var lb [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(lb[:], uint64(n))
	// Move the record left over the unused length bytes.
	copy(j.buf[start+ln:], j.buf[bodyAt:])
	copy(j.buf[start:], lb[:ln])
	j.buf = j.buf[:len(j.buf)-(5-ln)]
}

// commit writes the buffered records in one write. Past the size bound,
// or after a write failed, it compacts instead, from snap (the state the
// records add up to).
//
// A write that fails (a full disk) may have written part of a record: the
// file is cut back to its last whole record, so that it stays a journal of
// an older state, and the journal turns stale until a compaction succeeds.
func (j *journal) commit(snap func() feedState) error {
	if len(j.buf) == 0 && !j.stale {
		return nil
	}
	if j.stale || j.size+int64(len(j.buf)) > j.limit {
		j.buf = j.buf[:0]
		err := j.compact(snap())
		j.stale = err != nil
		return err
	}
	n, err := j.f.Write(j.buf)
	j.buf = j.buf[:0]
	if err != nil {
		j.stale = true
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				// A cut record stays at the end; nothing is appended
				// after it (stale), and a replay drops it.
				err = errors.Join(err, terr)
			}
		}
		return fmt.Errorf("write the feed journal: %w", err)
	}
	j.size += int64(n)
	return nil
}

// compact writes st as a fresh journal next to the old one and renames it
// over it, so a kill at any moment leaves one or the other whole.
func (j *journal) compact(st feedState) error {
	var b []byte
	b = append(b, journalMagic...)
	saved := j.buf
	j.buf = b
	if st.Ready {
		j.ready(st.InitMS)
	}
	// Answers first: an answer takes its item out of the worker, and the
	// same item may be in the worker again (a retry).
	for _, o := range st.Outcomes {
		j.answer(o)
	}
	j.give(st.Held)
	b, j.buf = j.buf, saved[:0]
	tmp := j.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		_ = os.Remove(tmp) // a full disk leaves part of it
		return fmt.Errorf("compact the feed journal: %w", err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("compact the feed journal: %w", err)
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open the feed journal: %w", err)
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, j.size = f, int64(len(b))
	j.limit = max(minCompact, 4*j.size)
	return nil
}

func (j *journal) close() {
	if j.f != nil {
		j.f.Close()
	}
}

func appendOutcome(b []byte, o wire.ItemOutcome) []byte {
	b = binary.AppendVarint(b, int64(o.Index))
	ok := byte(0)
	if o.OK {
		ok = 1
	}
	b = append(b, ok)
	b = binary.AppendVarint(b, o.Millis)
	b = binary.AppendUvarint(b, uint64(len(o.Result)))
	b = append(b, o.Result...)
	b = binary.AppendUvarint(b, uint64(len(o.Error)))
	return append(b, o.Error...)
}

// decodeJournal replays a journal. It returns the state, the length of the
// whole records it read (less than len(b) when the last record was cut
// short, which is not an error), and an error naming the offset of the
// first thing that is not a journal record.
func decodeJournal(b []byte) (feedState, int, error) {
	var st feedState
	if len(b) == 0 {
		return st, 0, nil
	}
	if !bytes.HasPrefix(b, []byte(journalMagic)) {
		if len(b) < len(journalMagic) && bytes.HasPrefix([]byte(journalMagic), b) {
			return st, 0, nil // the magic line itself was cut short
		}
		return st, 0, errors.New("not a feed journal (bad magic line)")
	}
	held := map[int]int{} // index -> order given, for a stable Held
	order := 0
	off := len(journalMagic)
	for off < len(b) {
		n, ln := binary.Uvarint(b[off:])
		if ln == 0 {
			return st.withHeld(held), off, nil // the length was cut short
		}
		if ln < 0 || n == 0 || n > maxRecord {
			return feedState{}, off, fmt.Errorf("record at offset %d: bad length", off)
		}
		end := off + ln + int(n) + 4
		if end > len(b) {
			return st.withHeld(held), off, nil // cut short
		}
		body := b[off+ln : end-4]
		if checksum(body) != binary.LittleEndian.Uint32(b[end-4:end]) {
			return feedState{}, off, fmt.Errorf("record at offset %d: checksum mismatch", off)
		}
		if err := st.apply(body, held, &order); err != nil {
			return feedState{}, off, fmt.Errorf("record at offset %d: %w", off, err)
		}
		off = end
	}
	return st.withHeld(held), off, nil
}

// apply folds one record body into st.
func (st *feedState) apply(body []byte, held map[int]int, order *int) error {
	r := recordReader{b: body[1:]}
	switch body[0] {
	case recReady:
		st.Ready, st.InitMS = true, r.varint()
	case recGive:
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			return errors.New("give: bad count")
		}
		for range n {
			held[int(r.varint())] = *order
			*order++
		}
	case recAnswer:
		var o wire.ItemOutcome
		o.Index = int(r.varint())
		o.OK = r.u8() == 1
		o.Millis = r.varint()
		o.Result = r.str()
		o.Error = r.str()
		delete(held, o.Index)
		st.Outcomes = append(st.Outcomes, o)
	case recDelivered:
		n := r.uvarint()
		if r.err == nil && n > uint64(len(st.Outcomes)) {
			return fmt.Errorf("delivered %d answers, only %d waiting", n, len(st.Outcomes))
		}
		st.Outcomes = st.Outcomes[n:]
	default:
		return fmt.Errorf("unknown record type %q", body[0])
	}
	if r.err != nil {
		return fmt.Errorf("%c record: %w", body[0], r.err)
	}
	if len(r.b) > 0 {
		return fmt.Errorf("%c record: %d bytes left over", body[0], len(r.b))
	}
	return nil
}

// withHeld completes a replayed state: the held items in the order given,
// nil for none.
func (st feedState) withHeld(held map[int]int) feedState {
	st.Held = make([]int, 0, len(held))
	for i := range held {
		st.Held = append(st.Held, i)
	}
	// In the order given: the worker answers roughly in that order.
	slices.SortFunc(st.Held, func(a, b int) int { return cmp.Compare(held[a], held[b]) })
	if len(st.Held) == 0 {
		st.Held = nil
	}
	if len(st.Outcomes) == 0 {
		st.Outcomes = nil
	}
	return st
}

// recordReader reads a record's payload; the first error sticks.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) fail() {
	if r.err == nil {
		r.err = io.ErrUnexpectedEOF
	}
	r.b = nil
}

func (r *recordReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) u8() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *recordReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
