package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// Group commit limits. An entry is applied to the state under its lock in
// one go, so it stays small enough not to hold readers up for long; a
// caller's commands that are big on their own (a chunk of work items) get
// an entry of their own, as before.
const (
	maxEntryCommands = 512
	maxEntryBytes    = 1 << 20
	aloneBytes       = 256 << 10
	// maxInFlight entries may be between raft.Apply and their result: one
	// being written while the one before is applied to the state.
	maxInFlight = 2
)

// applyFunc starts a Raft apply of one log entry (raft.Raft.Apply).
type applyFunc func(data []byte, timeout time.Duration) raft.ApplyFuture

// committer is the head's group commit. Callers that apply commands at the
// same time (submissions, process reports, assignments, item outcomes)
// queue them; while Raft writes the entries already started, the queue
// fills, and the next entry takes everything queued, so many callers share
// one log entry and one fsync. There is no timer: a lone caller's entry
// starts at once.
//
// Commands that need not be durable at once (ApplyLater: a process that
// started) wait in the queue for the next entry that a caller of Apply
// starts, and start one of their own only when none came within their
// time. A short process's start then shares the entry of its end.
//
// Each caller gets the results of its own commands, in order, and only
// once the entry holding them is committed and applied: an acknowledged
// command is as durable as before. Commands keep their per-command errors;
// one caller's failing command does not fail another's.
type committer struct {
	apply applyFunc
	log   *slog.Logger
	wake  chan struct{}
	// observe, if set, is told the commands and the commit time of each
	// entry committed (metrics).
	observe func(commands int, took time.Duration)

	mu     sync.Mutex
	queue  []*applyReq
	closed bool
}

// applyReq is one caller's Apply, or one ApplyLater.
type applyReq struct {
	ctx  context.Context
	cmds []state.Command
	data []byte // cmds encoded alone
	done chan applyResult
	// ApplyLater: due is when the commands go in an entry of their own if
	// none started before; then is told the outcome instead of done.
	due  time.Time
	then func([]state.Result, error)
}

// answer gives the request its outcome.
func (r *applyReq) answer(a applyResult) {
	if r.then != nil {
		r.then(a.res, a.err)
		return
	}
	r.done <- a
}

type applyResult struct {
	res []state.Result
	err error
}

// entry is one log entry of one or more callers' commands.
type entry struct {
	reqs     []*applyReq
	commands int
	bytes    int
	err      error // the entry could not be started
	future   raft.ApplyFuture
	started  time.Time
}

func newCommitter(apply applyFunc, log *slog.Logger) *committer {
	return &committer{apply: apply, log: log, wake: make(chan struct{}, 1)}
}

// errNoHead answers callers once the committer has stopped.
func errNoHead() error {
	return wire.Errorf(wire.CodeUnreachable, "this node is no longer the head; retry")
}

// Apply commits cmds, as one log entry with those of other callers, and
// returns their results once that entry is applied. A caller whose ctx
// ends before its commands are in an entry gets ctx's error and nothing is
// applied; once they are in an entry it waits for the outcome.
func (c *committer) Apply(ctx context.Context, cmds ...state.Command) ([]state.Result, error) {
	data, err := state.Encode(cmds...)
	if err != nil {
		return nil, fmt.Errorf("encode commands: %w", err)
	}
	req := &applyReq{ctx: ctx, cmds: cmds, data: data, done: make(chan applyResult, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errNoHead()
	}
	c.queue = append(c.queue, req)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case r := <-req.done:
		return r.res, r.err
	case <-ctx.Done():
	}
	// Gone: withdraw the commands unless they are in an entry already.
	c.mu.Lock()
	if i := slices.Index(c.queue, req); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
		c.mu.Unlock()
		return nil, fmt.Errorf("raft apply: %w", ctx.Err())
	}
	c.mu.Unlock()
	r := <-req.done
	return r.res, r.err
}

// ApplyLater queues cmds for the next entry that Apply starts, or for an
// entry of their own once within has passed, and returns at once; then,
// if not nil, is told their results once that entry is applied (on the
// committer's goroutine: it must not block). It is for commands whose
// loss would be repaired (a process's start, which the agent repeats in
// its heartbeats), not for any that a caller acknowledges.
func (c *committer) ApplyLater(cmds []state.Command, within time.Duration, then func([]state.Result, error)) {
	if then == nil {
		then = func([]state.Result, error) {}
	}
	data, err := state.Encode(cmds...)
	if err != nil {
		then(nil, fmt.Errorf("encode commands: %w", err))
		return
	}
	req := &applyReq{ctx: context.Background(), cmds: cmds, data: data, due: time.Now().Add(within), then: then}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		then(nil, errNoHead())
		return
	}
	c.queue = append(c.queue, req)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run starts entries until ctx ends, then waits for those in flight and
// refuses what is still queued and every later Apply.
func (c *committer) run(ctx context.Context) {
	flight := make(chan *entry, maxInFlight-1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := range flight {
			c.finish(e)
		}
	}()
	defer func() {
		close(flight)
		wg.Wait()
		c.mu.Lock()
		q := c.queue
		c.queue, c.closed = nil, true
		c.mu.Unlock()
		for _, r := range q {
			r.answer(applyResult{err: errNoHead()})
		}
	}()
	later := time.NewTimer(time.Hour)
	later.Stop()
	defer later.Stop()
	for ctx.Err() == nil {
		e, due := c.take(time.Now())
		if e == nil {
			if !due.IsZero() {
				later.Reset(time.Until(due))
			}
			select {
			case <-ctx.Done():
			case <-c.wake:
			case <-later.C:
			}
			later.Stop()
			continue
		}
		c.start(e)
		// Blocks while maxInFlight entries are outstanding; callers queue
		// meanwhile and share the next entry.
		flight <- e
	}
}

// take removes the next entry's requests from the queue: as many as fit,
// in order. A request whose context ended is answered and dropped. When
// the queue holds only ApplyLater requests not yet due it takes none and
// returns when the first is due.
func (c *committer) take(now time.Time) (*entry, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time // the earliest due of waiting ApplyLater requests
	for _, r := range c.queue {
		if r.then == nil || !r.due.After(now) {
			first = time.Time{}
			break
		}
		if first.IsZero() || r.due.Before(first) {
			first = r.due
		}
	}
	if !first.IsZero() {
		return nil, first
	}
	e := &entry{}
	i := 0
	for ; i < len(c.queue); i++ {
		r := c.queue[i]
		if err := r.ctx.Err(); err != nil {
			r.answer(applyResult{err: fmt.Errorf("raft apply: %w", err)})
			c.queue[i] = nil
			continue
		}
		big := len(r.data) > aloneBytes
		if len(e.reqs) > 0 && (big || e.commands+len(r.cmds) > maxEntryCommands || e.bytes+len(r.data) > maxEntryBytes) {
			break
		}
		e.reqs = append(e.reqs, r)
		e.commands += len(r.cmds)
		e.bytes += len(r.data)
		c.queue[i] = nil
		if big {
			i++
			break
		}
	}
	c.queue = c.queue[i:]
	if len(c.queue) == 0 {
		c.queue = nil
	}
	if len(e.reqs) == 0 {
		return nil, time.Time{}
	}
	return e, time.Time{}
}

// start encodes the entry and hands it to Raft; it may block while Raft
// writes the entries before it.
func (c *committer) start(e *entry) {
	data := e.reqs[0].data
	if len(e.reqs) > 1 {
		cmds := make([]state.Command, 0, e.commands)
		for _, r := range e.reqs {
			cmds = append(cmds, r.cmds...)
		}
		var err error
		if data, err = state.Encode(cmds...); err != nil {
			e.err = fmt.Errorf("encode commands: %w", err)
			return
		}
	}
	e.bytes = len(data)
	// Raft waits for the entry to be taken in as long as the most patient
	// caller would (10 s without a deadline): one caller's short deadline
	// must not fail the others' commands.
	var timeout time.Duration
	for _, r := range e.reqs {
		t := 10 * time.Second
		if dl, ok := r.ctx.Deadline(); ok {
			t = time.Until(dl)
		}
		timeout = max(timeout, t)
	}
	e.started = time.Now()
	e.future = c.apply(data, timeout)
}

// finish waits for the entry's outcome and gives every caller its own
// results.
func (c *committer) finish(e *entry) {
	err := e.err
	var res []state.Result
	if err == nil {
		if err = e.future.Error(); err == nil {
			res, _ = e.future.Response().([]state.Result)
		}
		took := time.Since(e.started)
		c.log.Debug("raft apply", "callers", len(e.reqs), "commands", e.commands, "bytes", e.bytes, "took", took)
		if err == nil && c.observe != nil {
			c.observe(e.commands, took)
		}
	}
	switch {
	case err == nil && len(res) != e.commands:
		// The entry as a whole failed (it could not be decoded).
		if len(res) == 1 && res[0].Err != nil {
			err = res[0].Err
		} else {
			err = fmt.Errorf("raft apply: %d results for %d commands", len(res), e.commands)
		}
	case errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost):
		err = wire.Errorf(wire.CodeUnreachable, "this node is no longer the head; retry: %v", err)
	case err != nil && e.err == nil:
		err = fmt.Errorf("raft apply: %w", err)
	}
	off := 0
	for _, r := range e.reqs {
		if err != nil {
			r.answer(applyResult{err: err})
			continue
		}
		n := len(r.cmds)
		r.answer(applyResult{res: res[off : off+n : off+n]})
		off += n
	}
}
