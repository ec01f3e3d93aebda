package feed

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// A feeder feeds work items to a job process over the stream protocol of
// docs/jobs.md: the worker prints {"ready": true} once initialized, then reads
// {"id": "...", "item": "..."} lines on stdin and answers each with
// {"id": "...", "ok": true, "result": ...} or {"id": "...", "error": "..."}
// on stdout. At most pipelines items are outstanding at the worker; the
// feeder keeps a small buffer of items fetched from the job driver so the
// worker never waits for a round trip to the head.

const (
	maxLine      = 4 << 20 // one protocol line
	maxPrefetch  = 1024
	longPollWait = time.Second

	// Every exchange costs the head a Raft entry (an fsync) and both sides
	// a call, whatever it carries, so the feeder gathers answers and asks
	// for items in batches: it exchanges at once only when the worker is
	// about to run short of items (the buffer is down to half its room),
	// when the driver had nothing last time (answers then go at once, so
	// the end of a job is not delayed), or when the process is let go;
	// otherwise what waits is sent batchWait after it began to wait. The
	// buffer is sized to hold twice batchWait of the worker's work (room),
	// so fast items go in batches of about batchWait's worth while slow
	// ones are exchanged one by one, as soon as a pipeline is free.
	batchWait = 20 * time.Millisecond
	// maxBatchBytes bounds the answers (their results and errors) one
	// exchange carries, well under wire.MaxMessageSize; the rest go in the
	// next exchange, at once.
	maxBatchBytes = 4 << 20

	// overlongError fails the items of a worker that printed a line longer
	// than maxLine; its process is stopped.
	overlongError = "the worker printed a line of more than 4 MiB (results are limited to 64 KiB); its process was stopped"
)

type feedEvent struct {
	ready    bool
	outcome  *wire.ItemOutcome
	overlong bool // the worker printed a line longer than maxLine; no more events follow
}

type exchangeResult struct {
	rep  wire.ExchangeReply
	err  error
	want int
	same bool // the request said HeldSame
}

// feed runs until ctx ends (the process ended or the agent stops).
func (s *Streams) feed(ctx context.Context, spec wire.ProcSpec, started time.Time) {
	log := s.log.With("proc", spec.ID, "job", spec.WorkID)
	inPath, outPath := s.host.Pipes(spec.ID)
	// Non-blocking opens: they fail (or see EOF) instead of hanging when the
	// shim is already gone, and Go's poller makes reads and writes block.
	in, err := os.OpenFile(inPath, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		log.Error("cannot open the worker's stdin; its items will not be fed", "err", err)
		return
	}
	defer in.Close()
	out, err := os.OpenFile(outPath, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		log.Error("cannot open the worker's stdout; its items will not be fed", "err", err)
		return
	}
	// Closing out unblocks the reader when ctx ends.
	s.wg.Go(func() { <-ctx.Done(); out.Close(); in.Close() })

	jr, err := openJournal(filepath.Dir(inPath), log)
	if err != nil {
		log.Error("cannot open the feed journal; its items will not be fed", "err", err)
		return
	}
	defer jr.close()
	f := newFeeder(ctx, s, log, spec, started, in, jr)
	// The reader hands each read's answers to the feeder itself (emit),
	// so that an answer and the item it makes room for cost no hand-over
	// between goroutines.
	readerDone := make(chan struct{})
	openLog := func() (*os.File, error) { return s.host.AppendLog(spec.ID) }
	s.wg.Go(func() {
		defer close(readerDone)
		readWorker(log, out, openLog, f.emit)
	})
	f.run(readerDone)
}

// feeder feeds one job process: it fetches items from the job driver
// (exchange), writes them to the worker, collects the worker's outcomes
// and hands them back, and journals what it holds so that a restarted
// agent can resume.
//
// Its state changes in whichever goroutine has news, under mu: the reader
// of the worker's stdout (emit), an exchange's call when it returns, and
// the batch and retry timers; each then starts the exchange that is due
// (kick). run only waits for the end.
type feeder struct {
	s       *Streams // its goroutines are theirs (wg)
	ctx     context.Context
	log     *slog.Logger
	spec    wire.ProcSpec
	started time.Time
	in      *os.File // the worker's stdin
	jr      *journal

	mu sync.Mutex // guards what follows
	// stopped: run has returned; the others leave the state alone.
	stopped bool
	// finish is closed when a broken worker's failures are delivered.
	finish   chan struct{}
	finished bool

	pipelines int
	// target is how many items the feeder holds (in the worker and
	// buffered). It starts at the pipeline count and doubles only while
	// the worker sits idle waiting for items for a noticeable part of an
	// item's time, so slow items stay spread over the job's processes and
	// fast ones are not throttled by the round trip to the head.
	target     int
	emptySince time.Time
	itemTime   time.Duration // moving average

	ready     bool // the worker said so
	readySent bool // the driver knows
	release   bool // the driver needs this process no more
	starved   bool // the driver had nothing in its last reply
	calling   bool // an exchange is under way
	broken    bool // the worker printed an over-long line: fail what it holds, then stop it
	initMS    int64

	// batch fires when what waits for an exchange is to be sent (batchGen
	// tells a timer stopped too late from the current one); due: send it
	// at the next chance.
	batch    *time.Timer
	batchGen uint64
	due      bool
	// feed and seq number the exchanges (wire.ExchangeRequest.Feed, Seq);
	// tracked: the driver's last reply said Tracking, so the next
	// exchange need not list the held items.
	feed, seq uint64
	tracked   bool

	buffer      []wire.WorkItem
	outstanding map[int]time.Time  // items in the worker, since when
	given       []int              // scratch: items write hands out
	lines       []byte             // scratch: the lines write writes
	pending     []byte             // lines the worker's stdin did not take yet (toWorker)
	flushing    bool               // flush is writing them
	outcomes    []wire.ItemOutcome // not yet sent
	sending     []wire.ItemOutcome // in the exchange under way
	backoff     time.Duration
	retrying    bool // waiting for backoff before the next exchange
}

func newFeeder(ctx context.Context, s *Streams, log *slog.Logger, spec wire.ProcSpec, started time.Time, in *os.File, jr *journal) *feeder {
	f := &feeder{
		s: s, ctx: ctx, log: log, spec: spec, started: started, in: in, jr: jr,
		pipelines: max(spec.Pipelines, 1), outstanding: map[int]time.Time{}, finish: make(chan struct{}),
		feed: rand.Uint64() | 1,
	}
	f.target = f.pipelines
	// A re-adopted worker: it may still be working on items the previous
	// agent gave it, and answers it gave may not have reached the driver.
	if prev := jr.state; prev.Ready {
		f.ready, f.initMS = true, prev.InitMS
		for _, i := range prev.Held {
			f.outstanding[i] = time.Now()
		}
		f.outcomes = prev.Outcomes
		log.Info("resuming a re-adopted worker", "holding", len(prev.Held), "undelivered", len(prev.Outcomes))
	}
	return f
}

// run feeds until the context ends or the worker's stdout (readerDone)
// closes. After an over-long line it delivers the failures of the items
// the worker held and then stops the process.
func (f *feeder) run(readerDone <-chan struct{}) {
	defer func() {
		f.mu.Lock()
		f.stopped = true
		if f.batch != nil {
			f.batch.Stop()
		}
		f.mu.Unlock()
	}()
	f.mu.Lock()
	f.kick()
	f.mu.Unlock()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.finish:
			f.s.host.Stop(f.ctx, f.spec.ID, time.Duration(f.spec.GraceMS)*time.Millisecond, "the worker printed a line of more than 4 MiB")
			return
		case <-readerDone:
			readerDone = nil
			f.mu.Lock()
			broken := f.broken
			f.mu.Unlock()
			if !broken {
				return // the worker's stdout is gone: the process is ending
			}
			// Deliver the failures first (finish).
		}
	}
}

// emit takes the events of one read of the worker's stdout; false when
// the feeder has stopped.
func (f *feeder) emit(evs []feedEvent) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	f.take(evs)
	f.kick()
	return true
}

// kick starts the exchange that is due, if any, and says when a broken
// worker's failures are all delivered. f.mu is held.
func (f *feeder) kick() {
	if f.broken && !f.calling && len(f.outcomes) == 0 {
		if !f.finished {
			f.finished = true
			close(f.finish)
		}
		return
	}
	if req, ok := f.nextExchange(); ok {
		f.call(req)
	}
}

// nextExchange returns the exchange to make now, if any: none while one is
// under way, before the worker is ready or while waiting to retry; else
// one that says the worker is ready, delivers outcomes, or asks for items
// (a long poll when the driver had none and the worker is idle). What is
// not urgent waits for a batch (batchWait).
func (f *feeder) nextExchange() (wire.ExchangeRequest, bool) {
	if f.calling || !f.ready || f.retrying {
		return wire.ExchangeRequest{}, false
	}
	held := len(f.buffer) + len(f.outstanding)
	room := f.room()
	need := !f.release && !f.broken && held < room
	if f.readySent && len(f.outcomes) == 0 && (!need || (f.starved && len(f.outstanding) > 0)) {
		return wire.ExchangeRequest{}, false
	}
	urgent := !f.readySent || f.due || f.starved || f.release || f.broken ||
		need && len(f.buffer) <= (room-f.pipelines)/2
	if !urgent {
		if f.batch == nil {
			gen := f.batchGen
			f.batch = time.AfterFunc(batchWait, func() {
				f.mu.Lock()
				defer f.mu.Unlock()
				if !f.stopped && gen == f.batchGen {
					f.batch, f.due = nil, true
					f.kick()
				}
			})
		}
		return wire.ExchangeRequest{}, false
	}
	if f.batch != nil {
		f.batch.Stop()
		f.batch = nil
	}
	f.batchGen++
	f.due = false
	f.seq++
	req := wire.ExchangeRequest{JobID: f.spec.WorkID, ProcID: f.spec.ID, Node: f.s.node, Ready: true, InitMS: f.initMS, Outcomes: f.outcomes,
		Feed: f.feed, Seq: f.seq, HeldSame: f.tracked, HeldCount: held}
	if need {
		req.Want = room - held
	}
	if !f.tracked {
		req.Held = make([]int, 0, held)
		for _, it := range f.buffer {
			req.Held = append(req.Held, it.Index)
		}
		for i := range f.outstanding {
			req.Held = append(req.Held, i)
		}
	}
	if f.starved && len(f.outcomes) == 0 && len(f.outstanding) == 0 {
		req.WaitMS = longPollWait.Milliseconds()
	}
	n, size := 0, 0
	for n < len(f.outcomes) && (n == 0 || size+len(f.outcomes[n].Result)+len(f.outcomes[n].Error) <= maxBatchBytes) {
		size += len(f.outcomes[n].Result) + len(f.outcomes[n].Error)
		n++
	}
	req.Outcomes = f.outcomes[:n:n]
	f.sending, f.outcomes = req.Outcomes, f.outcomes[n:]
	if len(f.outcomes) == 0 {
		f.outcomes = nil
	} else {
		f.due = true // the rest go next, at once
	}
	f.readySent = true
	return req, true
}

// room is how many items the feeder may hold now: target, or more while
// items are fast, so that the buffer outside the worker holds twice
// batchWait of its work (by Little's law, the worker answers pipelines
// items per itemTime). It follows itemTime down as well as up, so a job
// whose items turn slow is not left with a deep buffer in one process.
func (f *feeder) room() int {
	r := f.target
	if f.itemTime > 0 {
		r = max(r, min(maxPrefetch, f.pipelines+int(2*batchWait*time.Duration(f.pipelines)/f.itemTime)))
	}
	return r
}

// call makes one exchange with the job driver in the background, and
// takes its result (answered) when it returns. f.mu is held. The call
// lasts no longer than the feeder's context.
func (f *feeder) call(req wire.ExchangeRequest) {
	f.calling = true
	f.s.wg.Go(func() {
		var rep wire.ExchangeReply
		err := f.s.host.Exchange(f.ctx, req, &rep)
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.stopped && f.answered(exchangeResult{rep: rep, err: err, want: req.Want, same: req.HeldSame}) {
			f.kick()
		}
	})
}

// take folds in the events of one read, then journals once. f.mu is held.
func (f *feeder) take(evs []feedEvent) {
	for _, ev := range evs {
		switch {
		case ev.ready && !f.ready:
			f.ready = true
			f.initMS = time.Since(f.started).Milliseconds()
			f.jr.ready(f.initMS)
			f.log.Info("worker ready", "init", time.Since(f.started).Round(time.Millisecond))
		case ev.outcome != nil:
			o := *ev.outcome
			if t, ok := f.outstanding[o.Index]; ok {
				d := time.Since(t)
				o.Millis = d.Milliseconds()
				f.itemTime = (f.itemTime*7 + d) / 8
				delete(f.outstanding, o.Index)
			}
			f.outcomes = append(f.outcomes, o)
			f.jr.answer(o)
		case ev.overlong && !f.broken:
			f.broken = true
			f.log.Error("the worker printed a line of more than 4 MiB: failing the items it holds and stopping it",
				"items", len(f.outstanding), "limit", maxLine)
			for i, t := range f.outstanding {
				o := wire.ItemOutcome{Index: i, Error: overlongError, Millis: time.Since(t).Milliseconds()}
				f.outcomes = append(f.outcomes, o)
				f.jr.answer(o)
			}
			clear(f.outstanding)
		}
	}
	if !f.write() { // write journals when it hands out items
		f.commit()
	}
	if len(f.buffer) == 0 && f.emptySince.IsZero() {
		f.emptySince = time.Now()
	}
}

// answered takes the result of an exchange; false means the feeder must
// stop (its context ended).
func (f *feeder) answered(r exchangeResult) bool {
	f.calling = false
	f.tracked = r.err == nil && r.rep.Tracking
	if r.err != nil {
		if f.ctx.Err() != nil {
			return false
		}
		// Keep the outcomes we could not deliver.
		f.outcomes = append(f.sending, f.outcomes...)
		f.sending = nil
		f.backoff = min(max(2*f.backoff, 50*time.Millisecond), 2*time.Second)
		f.log.Debug("exchange with the job driver failed; retrying", "err", r.err, "in", f.backoff)
		f.readySent = false
		f.retrying = true
		time.AfterFunc(f.backoff, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !f.stopped {
				f.retrying = false
				f.kick()
			}
		})
		return true
	}
	f.backoff = 0
	f.jr.delivered(len(f.sending))
	f.sending = nil
	f.release = r.rep.Release
	if r.same && !f.tracked && !f.release {
		// The driver did not know what this process holds (a new head, or
		// an exchange it served that this feeder never heard back from)
		// and handed out nothing: list them at once.
		f.readySent = false
	} else if r.want > 0 {
		f.starved = len(r.rep.Items) == 0 // an exchange that asked for none learns nothing
	}
	if len(r.rep.Items) > 0 && !f.emptySince.IsZero() {
		if idle := time.Since(f.emptySince); idle > f.itemTime/10 && f.target < maxPrefetch {
			f.target = min(2*f.target, maxPrefetch)
		}
		f.emptySince = time.Time{}
	}
	f.buffer = append(f.buffer, r.rep.Items...)
	if !f.write() {
		f.commit()
	}
	return true
}

// write hands buffered items to the worker up to its pipeline count and
// reports whether it wrote any (journaled first).
func (f *feeder) write() bool {
	if f.broken {
		return false // the buffered items go back to the queue when the process is gone
	}
	b := f.lines[:0]
	f.given = f.given[:0]
	now := time.Now()
	for len(f.buffer) > 0 && len(f.outstanding) < f.pipelines {
		it := f.buffer[0]
		f.buffer[0] = wire.WorkItem{} // let the item's text go
		f.buffer = f.buffer[1:]
		b = appendItemLine(b, it)
		f.outstanding[it.Index] = now
		f.given = append(f.given, it.Index)
	}
	if cap(b) <= 64<<10 {
		f.lines = b
	}
	if len(b) == 0 {
		return false
	}
	f.jr.give(f.given)
	f.commit() // the journal knows an item before the worker does
	f.toWorker(b)
	return true
}

// toWorker writes b to the worker's stdin, in order after what is still
// pending, without blocking: what the pipe does not take now is written by
// a goroutine (flush). The reader of the worker's stdout writes items too
// (emit), and must not block on a worker that is itself blocked printing
// output. f.mu is held.
func (f *feeder) toWorker(b []byte) {
	if !f.flushing {
		n, err := f.tryWrite(b)
		if err != nil {
			if f.ctx.Err() == nil {
				f.log.Warn("cannot write items to the worker", "err", err)
			}
			return
		}
		if b = b[n:]; len(b) == 0 {
			return
		}
		f.flushing = true
		f.s.wg.Go(f.flush)
	}
	f.pending = append(f.pending, b...)
}

// tryWrite writes as much of b as the pipe takes now.
func (f *feeder) tryWrite(b []byte) (int, error) {
	rc, err := f.in.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if werr != syscall.EINTR {
				return true // done or not, it does not wait
			}
		}
	}); err != nil {
		return 0, err
	}
	if werr == syscall.EAGAIN {
		werr = nil
	}
	return max(n, 0), werr
}

// flush writes what is pending to the worker's stdin, waiting for the
// worker to read, until nothing is pending, the feeder has stopped or the
// pipe is closed (the feeder's context ended).
func (f *feeder) flush() {
	for {
		f.mu.Lock()
		b := f.pending
		f.pending = nil
		if len(b) == 0 || f.stopped {
			f.flushing = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if _, err := f.in.Write(b); err != nil {
			f.mu.Lock()
			if f.ctx.Err() == nil && !f.stopped {
				f.log.Warn("cannot write items to the worker", "err", err)
			}
			f.flushing = false
			f.mu.Unlock()
			return
		}
	}
}

// commit writes the journal records of this batch. A journal that cannot
// be written (a full disk) is said once, and again when it is written
// again: every batch retries.
func (f *feeder) commit() {
	was := f.jr.stale
	err := f.jr.commit(f.snapshot)
	switch {
	case err != nil && !was && f.ctx.Err() == nil:
		f.log.Warn("cannot write the feed journal; retrying with every batch (an agent restarted meanwhile would resume this worker from an older state)", "err", err)
	case err == nil && was:
		f.log.Info("the feed journal is written again")
	}
}

// snapshot is the state the journal's records add up to, for compaction.
func (f *feeder) snapshot() feedState {
	st := feedState{Ready: f.ready, InitMS: f.initMS, Outcomes: append(slices.Clone(f.sending), f.outcomes...)}
	for i := range f.outstanding {
		st.Held = append(st.Held, i)
	}
	return st
}
