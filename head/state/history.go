package state

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// Retention (docs/operations.md, "Retention and accounting"): finished
// work stays in the work map for a while (`ducc jobs --all`, `ducc show`),
// then a purge command moves it out. What remains is a compact accounting
// Record (`ducc history`), kept for longer; a job's items and results are
// held apart for a time of their own (`ducc results`). The leader decides
// when with its clock and applies CmdPurge with the cut-off times; the FSM
// never reads a clock, so every replica purges the same work.
//
// Nothing here is on a hot path: finished work, held results and records
// are each kept in end-time order, so a purge removes a prefix and a
// history query starts with a binary search.

// Record is the accounting record of one finished piece of work, what
// `ducc history` shows (sacct is the model).
type Record struct {
	ID          uint64        `cbor:"1,keyasint"`
	Kind        wire.WorkKind `cbor:"2,keyasint"`
	User        string        `cbor:"3,keyasint"`
	Class       string        `cbor:"4,keyasint,omitempty"`
	Description string        `cbor:"5,keyasint,omitempty"`
	SubmittedAt int64         `cbor:"6,keyasint"` // unix ms
	StartedAt   int64         `cbor:"7,keyasint,omitempty"`
	EndedAt     int64         `cbor:"8,keyasint"`
	Completion  Completion    `cbor:"9,keyasint,omitempty"`
	Reason      string        `cbor:"10,keyasint,omitempty"`
	ExitCode    int           `cbor:"11,keyasint"`
	// Memory asked (per process) and the largest cap a process got.
	Memory      int64 `cbor:"12,keyasint,omitempty"`
	MemoryLimit int64 `cbor:"13,keyasint,omitempty"`
	// MaxRSS is the largest peak resident memory of one process; CPUSeconds
	// the CPU time of all of them (as their shims measured at exit).
	MaxRSS     int64   `cbor:"14,keyasint,omitempty"`
	CPUSeconds float64 `cbor:"15,keyasint,omitempty"`
	// Jobs: items in all, done, failed, and retries.
	Items   int `cbor:"16,keyasint,omitempty"`
	Done    int `cbor:"17,keyasint,omitempty"`
	Failed  int `cbor:"18,keyasint,omitempty"`
	Retried int `cbor:"19,keyasint,omitempty"`
	// Procs is the number of processes the work had; Nodes the nodes they
	// ran on (the first maxRecordNodes; NodeCount says how many).
	Procs     int      `cbor:"20,keyasint,omitempty"`
	Nodes     []string `cbor:"21,keyasint,omitempty"`
	NodeCount int      `cbor:"22,keyasint,omitempty"`
	// WorkPurgedAt is when the work left the live state; ItemsPurgedAt
	// when a job's items and results were dropped (0: still held, or not
	// yet purged).
	WorkPurgedAt  int64 `cbor:"23,keyasint,omitempty"`
	ItemsPurgedAt int64 `cbor:"24,keyasint,omitempty"`
	// ShareGroup and ShareGID: the group the owner shares the output with
	// (share_with_group), so that it keeps reading the results.
	ShareGroup string `cbor:"25,keyasint,omitempty"`
	ShareGID   uint32 `cbor:"26,keyasint,omitempty"`
	// The GPU request per process (Work's), the GPU time all processes
	// held (Proc.GPUSeconds) and the most GPU memory one used.
	GPUs          int     `cbor:"27,keyasint,omitempty"`
	GPUMemory     int64   `cbor:"28,keyasint,omitempty"`
	GPUSeconds    float64 `cbor:"29,keyasint,omitempty"`
	GPUMemoryPeak int64   `cbor:"30,keyasint,omitempty"`
}

// Bounds of what a record copies from its work, so that records stay
// small whatever was submitted.
const (
	maxRecordNodes       = 32
	maxRecordDescription = 120
	maxRecordReason      = 240
)

// RecordOf makes the accounting record of finished work w (it may be
// called on live work too, for a record as of now).
func RecordOf(w *Work) Record {
	r := Record{
		ID: w.ID, Kind: w.Kind, User: w.User, Class: w.Class,
		Description: truncate(w.Description, maxRecordDescription),
		SubmittedAt: w.SubmittedAt, StartedAt: w.StartedAt, EndedAt: w.EndedAt,
		Completion: w.Completion, Reason: truncate(w.Reason, maxRecordReason), ExitCode: w.ExitCode,
		Memory: w.Memory, Procs: len(w.Procs), ShareGroup: w.ShareGroup, ShareGID: w.ShareGID,
		GPUs: w.GPUs, GPUMemory: w.GPUMemory,
	}
	for _, p := range w.Procs {
		r.GPUSeconds += p.GPUSeconds(w.EndedAt)
		r.GPUMemoryPeak = max(r.GPUMemoryPeak, p.GPUMemoryPeak)
		r.MemoryLimit = max(r.MemoryLimit, p.MemoryLimit)
		r.MaxRSS = max(r.MaxRSS, p.MaxRSS)
		r.CPUSeconds += p.CPUSeconds
		if p.Node != "" && !slices.Contains(r.Nodes, p.Node) {
			r.NodeCount++
			if len(r.Nodes) < maxRecordNodes {
				r.Nodes = append(r.Nodes, p.Node)
			}
		}
	}
	if j := w.Job; j != nil {
		r.Items, r.Done, r.Failed, r.Retried = j.Total(), j.Done, j.Failed, j.Retried
	}
	return r
}

// Purge is the payload of CmdPurge: cut-off times (unix ms) the leader
// computed from its clock and the retention settings. Finished work that
// ended before Work, and whose processes have all ended, leaves the work
// map and becomes a Record; items of jobs that ended before Results are
// dropped; records of work that ended before History are dropped.
type Purge struct {
	Work    int64 `cbor:"1,keyasint"`
	Results int64 `cbor:"2,keyasint"`
	History int64 `cbor:"3,keyasint"`
}

// endKey orders finished work by end time, then id.
type endKey struct {
	end int64
	id  uint64
}

func (a endKey) compare(b endKey) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// endQueue is a set of endKeys in order. Work mostly ends in time order,
// so additions mostly append.
type endQueue []endKey

func (q endQueue) find(k endKey) (int, bool) {
	return slices.BinarySearchFunc(q, k, endKey.compare)
}

func (q *endQueue) add(k endKey) {
	if n := len(*q); n == 0 || (*q)[n-1].compare(k) < 0 {
		*q = append(*q, k)
		return
	}
	if i, ok := q.find(k); !ok {
		*q = slices.Insert(*q, i, k)
	}
}

// history is the FSM's store of finished work: the finished work still in
// the work map (finished), the items of purged jobs (held), and the
// accounting records of purged work (records, by end, and byID).
type history struct {
	finished endQueue
	held     endQueue
	items    map[uint64][]Item
	records  []*Record
	byID     map[uint64]*Record
}

func newHistory() history {
	return history{items: map[uint64][]Item{}, byID: map[uint64]*Record{}}
}

// finishedOf rebuilds the finished queue from the work map (Restore).
func finishedOf(work map[uint64]*Work) endQueue {
	var q endQueue
	for _, w := range work {
		if w.Ended() {
			q = append(q, endKey{w.EndedAt, w.ID})
		}
	}
	slices.SortFunc(q, endKey.compare)
	return q
}

// noteEnded queues w for purging once it has ended; Apply calls it for
// the work each command touched.
func (h *history) noteEnded(w *Work) {
	if w.Ended() {
		h.finished.add(endKey{w.EndedAt, w.ID})
	}
}

func (h *history) addRecord(r *Record) {
	h.byID[r.ID] = r
	k := endKey{r.EndedAt, r.ID}
	if n := len(h.records); n == 0 || (endKey{h.records[n-1].EndedAt, h.records[n-1].ID}).compare(k) < 0 {
		h.records = append(h.records, r)
		return
	}
	i, ok := slices.BinarySearchFunc(h.records, k, func(r *Record, k endKey) int { return endKey{r.EndedAt, r.ID}.compare(k) })
	if ok {
		h.records[i] = r
	} else {
		h.records = slices.Insert(h.records, i, r)
	}
}

// hasLive reports whether some process of w has not ended (Work.Live
// without the copy).
func hasLive(w *Work) bool {
	for _, p := range w.Procs {
		if !p.Ended() {
			return true
		}
	}
	return false
}

// purge applies CmdPurge.
func (f *FSM) purge(c *Command) Result {
	p := c.Purge
	if p == nil {
		return Result{Err: fmt.Errorf("purge without cut-off times")}
	}
	h := &f.hist
	n := 0
	// Finished work: a prefix of the queue, less the work whose processes
	// are still being stopped (it stays queued).
	var stuck endQueue
	i := 0
	for ; i < len(h.finished) && h.finished[i].end < p.Work; i++ {
		k := h.finished[i]
		w := f.work[k.id]
		if w == nil || !w.Ended() {
			continue
		}
		if hasLive(w) {
			stuck = append(stuck, k)
			continue
		}
		delete(f.work, k.id)
		n++
		if w.EndedAt < p.History {
			continue // older than the history kept: nothing remains
		}
		r := RecordOf(w)
		r.WorkPurgedAt = c.Time
		if w.Job != nil && len(w.Job.Items) > 0 {
			if w.EndedAt >= p.Results {
				h.items[w.ID] = w.Job.Items
				h.held.add(k)
			} else {
				r.ItemsPurgedAt = c.Time
			}
		}
		h.addRecord(&r)
	}
	// The stuck keys precede the rest: put them back in front of it.
	i -= copy(h.finished[i-len(stuck):i], stuck)
	h.finished = h.finished[i:]
	// Held items.
	i = 0
	for ; i < len(h.held) && h.held[i].end < p.Results; i++ {
		id := h.held[i].id
		delete(h.items, id)
		if r := h.byID[id]; r != nil {
			r.ItemsPurgedAt = c.Time
		}
		n++
	}
	h.held = h.held[i:]
	// Records.
	i = 0
	for ; i < len(h.records) && h.records[i].EndedAt < p.History; i++ {
		id := h.records[i].ID
		delete(h.byID, id)
		if _, ok := h.items[id]; ok {
			delete(h.items, id)
			if j, ok := h.held.find(endKey{h.records[i].EndedAt, id}); ok {
				h.held = slices.Delete(h.held, j, j+1)
			}
		}
		h.records[i] = nil
		n++
	}
	h.records = h.records[i:]
	return Result{Count: n}
}

// Record returns the accounting record of purged work, or nil (work still
// in the state has none yet: RecordOf makes one).
func (v *View) Record(id uint64) *Record { return v.f.hist.byID[id] }

// HeldItems returns the items of a purged job whose results are still
// kept, or nil.
func (v *View) HeldItems(id uint64) []Item { return v.f.hist.items[id] }

// NextPurge returns the earliest time (unix ms) at which a purge with the
// given retention times (ms) would remove something, and false when there
// is nothing to purge ever (no finished work, no held items, no records).
// Finished work whose processes are still being stopped is skipped.
func (v *View) NextPurge(work, results, history int64) (int64, bool) {
	h := &v.f.hist
	at, ok := int64(0), false
	next := func(t int64) {
		if !ok || t < at {
			at, ok = t, true
		}
	}
	for _, k := range h.finished {
		if w := v.f.work[k.id]; w != nil && hasLive(w) {
			continue
		}
		next(k.end + work)
		break
	}
	if len(h.held) > 0 {
		next(h.held[0].end + results)
	}
	if len(h.records) > 0 {
		next(h.records[0].EndedAt + history)
	}
	return at, ok
}

// HistoryQuery selects accounting records: work that ended in [Since,
// Until) (0: unbounded), of a user, a class and one of some completion
// reasons (case-insensitive; empty: any), after a cursor.
type HistoryQuery struct {
	Since, Until int64
	User, Class  string
	Completions  []string
	// AfterEnd and AfterID: only records after this one (end time, then
	// id); zero for the first page.
	AfterEnd int64
	AfterID  uint64
	// Limit is the most records returned, Scan the most examined (the
	// read lock is held meanwhile); both must be positive.
	Limit, Scan int
}

// History returns the records of finished work that q selects, in end
// time order: purged work from the store and finished work still in the
// state alike. more says that the scan stopped early (at Limit or Scan);
// the next page starts after the last record examined, (nextEnd, nextID).
func (v *View) History(q HistoryQuery) (out []Record, nextEnd int64, nextID uint64, more bool) {
	h := &v.f.hist
	start := endKey{q.Since, 0}
	if (q.AfterEnd != 0 || q.AfterID != 0) && (endKey{q.AfterEnd, q.AfterID}).compare(start) >= 0 {
		start = endKey{q.AfterEnd, q.AfterID + 1}
	}
	ri, _ := slices.BinarySearchFunc(h.records, start, func(r *Record, k endKey) int { return endKey{r.EndedAt, r.ID}.compare(k) })
	fi, _ := h.finished.find(start)
	scanned := 0
	for ri < len(h.records) || fi < len(h.finished) {
		if scanned >= q.Scan || len(out) >= q.Limit {
			return out, nextEnd, nextID, true
		}
		var r Record
		var k endKey
		if fi >= len(h.finished) || (ri < len(h.records) && (endKey{h.records[ri].EndedAt, h.records[ri].ID}).compare(h.finished[fi]) < 0) {
			r = *h.records[ri]
			k = endKey{r.EndedAt, r.ID}
			ri++
		} else {
			k = h.finished[fi]
			fi++
			w := v.f.work[k.id]
			if w == nil {
				continue
			}
			r = RecordOf(w)
		}
		if q.Until != 0 && k.end >= q.Until {
			break
		}
		scanned++
		nextEnd, nextID = k.end, k.id
		if q.User != "" && r.User != q.User || q.Class != "" && r.Class != q.Class {
			continue
		}
		if len(q.Completions) > 0 && !slices.ContainsFunc(q.Completions, func(s string) bool { return strings.EqualFold(s, string(r.Completion)) }) {
			continue
		}
		out = append(out, r)
	}
	return out, nextEnd, nextID, false
}

// historyHeader starts the history part of a snapshot; then come Records
// records in frames of at most snapChunk, then Held frames of held items,
// each a heldHeader followed by its items in frames of at most snapChunk.
type historyHeader struct {
	Records int `cbor:"1,keyasint"`
	Held    int `cbor:"2,keyasint"`
}

type heldHeader struct {
	ID    uint64 `cbor:"1,keyasint"`
	End   int64  `cbor:"2,keyasint"`
	Count int    `cbor:"3,keyasint"`
}

// write writes the history part of a snapshot.
func (h *history) write(w io.Writer) error {
	if err := wire.WriteMsg(w, historyHeader{Records: len(h.records), Held: len(h.held)}); err != nil {
		return fmt.Errorf("encode snapshot history: %w", err)
	}
	for recs := h.records; len(recs) > 0; {
		n := min(len(recs), recordChunk)
		if err := wire.WriteMsg(w, recs[:n]); err != nil {
			return fmt.Errorf("encode snapshot history records: %w", err)
		}
		recs = recs[n:]
	}
	for _, k := range h.held {
		items := h.items[k.id]
		if err := wire.WriteMsg(w, heldHeader{ID: k.id, End: k.end, Count: len(items)}); err != nil {
			return fmt.Errorf("encode snapshot held items of work %d: %w", k.id, err)
		}
		for len(items) > 0 {
			n := itemChunk(items)
			if err := wire.WriteMsg(w, items[:n]); err != nil {
				return fmt.Errorf("encode snapshot held items of work %d: %w", k.id, err)
			}
			items = items[n:]
		}
	}
	return nil
}

// recordChunk records fit in one frame: a record is at most about 2 KiB.
const recordChunk = 4096

// itemChunk is how many of items, at most snapChunk, go into the next
// snapshot frame: about 8 MiB of them at most (a result alone may be 64
// KiB), at least one.
func itemChunk(items []Item) int {
	size := 0
	for i, it := range items {
		if i == snapChunk {
			return i
		}
		size += len(it.Data) + len(it.Result) + len(it.Error) + len(it.Proc) + 32
		if size > 8<<20 && i > 0 {
			return i
		}
	}
	return len(items)
}

// readHistory reads the history part of a snapshot (history.write); the
// finished queue is left to the caller (finishedOf).
func readHistory(r io.Reader) (history, error) {
	h := newHistory()
	var hh historyHeader
	if err := wire.ReadMsg(r, &hh, wire.MaxMessageSize); err != nil {
		return h, fmt.Errorf("decode snapshot history: %w", err)
	}
	h.records = make([]*Record, 0, hh.Records)
	for len(h.records) < hh.Records {
		var chunk []*Record
		if err := wire.ReadMsg(r, &chunk, wire.MaxMessageSize*4); err != nil {
			return h, fmt.Errorf("decode snapshot history records: %w", err)
		}
		if len(chunk) == 0 {
			return h, fmt.Errorf("decode snapshot history records: empty chunk")
		}
		for _, rec := range chunk {
			if rec == nil {
				return h, fmt.Errorf("decode snapshot history records: empty record")
			}
			h.byID[rec.ID] = rec
		}
		h.records = append(h.records, chunk...)
	}
	for range hh.Held {
		var hd heldHeader
		if err := wire.ReadMsg(r, &hd, wire.MaxMessageSize); err != nil {
			return h, fmt.Errorf("decode snapshot held items: %w", err)
		}
		items := make([]Item, 0, hd.Count)
		for len(items) < hd.Count {
			var chunk []Item
			if err := wire.ReadMsg(r, &chunk, wire.MaxMessageSize*4); err != nil {
				return h, fmt.Errorf("decode snapshot held items of work %d: %w", hd.ID, err)
			}
			if len(chunk) == 0 {
				return h, fmt.Errorf("decode snapshot held items of work %d: empty chunk", hd.ID)
			}
			items = append(items, chunk...)
		}
		h.items[hd.ID] = items
		h.held = append(h.held, endKey{hd.End, hd.ID})
	}
	return h, nil
}
