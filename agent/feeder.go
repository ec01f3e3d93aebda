package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// The agent feeds work items to a job process over the stream protocol of
// SPEC §5: the worker prints {"ready": true} once initialized, then reads
// {"id": "...", "item": "..."} lines on stdin and answers each with
// {"id": "...", "ok": true, "result": ...} or {"id": "...", "error": "..."}
// on stdout. At most pipelines items are outstanding at the worker; the
// feeder keeps a small buffer of items fetched from the job driver so the
// worker never waits for a round trip to the head.

const (
	maxLine      = 4 << 20 // one protocol line
	maxPrefetch  = 1024
	longPollWait = time.Second
)

// workerLine is one line a worker prints.
type workerLine struct {
	Ready  *bool           `json:"ready"`
	ID     *string         `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *string         `json:"error"`
}

type feedEvent struct {
	ready   bool
	outcome *wire.ItemOutcome
}

type exchangeResult struct {
	rep  wire.ExchangeReply
	err  error
	want int
}

// feed runs until ctx ends (the process ended or the agent stops).
func (a *Agent) feed(ctx context.Context, spec wire.ProcSpec, started time.Time, logPath string) {
	log := a.log.With("proc", spec.ID, "job", spec.WorkID)
	inPath, outPath := a.procs.Pipes(spec.ID)
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
	go func() { <-ctx.Done(); out.Close(); in.Close() }()

	events := make(chan feedEvent, 4096)
	go a.readWorker(ctx, out, logPath, events)

	pipelines := max(spec.Pipelines, 1)
	// target is how many items the feeder holds (in the worker and
	// buffered). It starts at the pipeline count and doubles only while
	// the worker sits idle waiting for items for a noticeable part of an
	// item's time, so slow items stay spread over the job's processes and
	// fast ones are not throttled by the round trip to the head.
	target := pipelines
	var emptySince time.Time
	var itemTime time.Duration // moving average
	var (
		ready, readySent, release, starved, calling bool
		initMS                                      int64
		buffer                                      []wire.WorkItem
		outstanding                                 = map[int]time.Time{}
		outcomes                                    []wire.ItemOutcome
		replies                                     = make(chan exchangeResult, 1)
		backoff                                     time.Duration
		sending                                     []wire.ItemOutcome // outcomes in the exchange under way
	)
	jr, err := openJournal(filepath.Join(filepath.Dir(inPath), "feed.json"))
	if err != nil {
		log.Error("cannot open the feed journal; its items will not be fed", "err", err)
		return
	}
	defer jr.close()
	// A re-adopted worker: it may still be working on items the previous
	// agent gave it, and answers it gave may not have reached the driver.
	if prev := jr.state; prev.Ready {
		ready, initMS = true, prev.InitMS
		for _, i := range prev.Held {
			outstanding[i] = time.Now()
		}
		outcomes = prev.Outcomes
		log.Info("resuming a re-adopted worker", "holding", len(prev.Held), "undelivered", len(prev.Outcomes))
	}
	save := func() {
		st := feedState{Ready: ready, InitMS: initMS, Outcomes: append(append([]wire.ItemOutcome(nil), sending...), outcomes...)}
		for i := range outstanding {
			st.Held = append(st.Held, i)
		}
		if err := jr.save(st); err != nil && ctx.Err() == nil {
			log.Warn("cannot write the feed journal", "err", err)
		}
	}
	write := func() bool {
		var b bytes.Buffer
		for len(buffer) > 0 && len(outstanding) < pipelines {
			it := buffer[0]
			buffer = buffer[1:]
			line, _ := json.Marshal(struct {
				ID   string `json:"id"`
				Item string `json:"item"`
			}{strconv.Itoa(it.Index), it.Item})
			b.Write(line)
			b.WriteByte('\n')
			outstanding[it.Index] = time.Now()
		}
		if b.Len() > 0 {
			save() // the journal knows an item before the worker does
			if _, err := in.Write(b.Bytes()); err != nil && ctx.Err() == nil {
				log.Warn("cannot write items to the worker", "err", err)
			}
			return true
		}
		return false
	}
	call := func(req wire.ExchangeRequest) {
		calling = true
		go func() {
			var rep wire.ExchangeReply
			err := a.callHead(ctx, wire.MethodExchange, wire.Caller{Node: a.cfg.Node}, req, &rep)
			replies <- exchangeResult{rep: rep, err: err, want: req.Want}
		}()
	}
	var retry <-chan time.Time
	for {
		if !calling && ready && retry == nil {
			need := !release && len(buffer)+len(outstanding) < target
			if !readySent || len(outcomes) > 0 || (need && (!starved || len(outstanding) == 0)) {
				req := wire.ExchangeRequest{JobID: spec.WorkID, ProcID: spec.ID, Node: a.cfg.Node, Ready: true, InitMS: initMS, Outcomes: outcomes}
				if need {
					req.Want = target - len(buffer) - len(outstanding)
				}
				for _, it := range buffer {
					req.Held = append(req.Held, it.Index)
				}
				for i := range outstanding {
					req.Held = append(req.Held, i)
				}
				if starved && len(outcomes) == 0 && len(outstanding) == 0 {
					req.WaitMS = longPollWait.Milliseconds()
				}
				sending, outcomes = outcomes, nil
				readySent = true
				call(req)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-retry:
			retry = nil
		case ev, ok := <-events:
			if !ok {
				return // the worker's stdout is gone: the process is ending
			}
			// Take every event that is already there, then journal once.
			for more := true; more; {
				switch {
				case ev.ready && !ready:
					ready = true
					initMS = time.Since(started).Milliseconds()
					log.Info("worker ready", "init", time.Since(started).Round(time.Millisecond))
				case ev.outcome != nil:
					o := *ev.outcome
					if t, ok := outstanding[o.Index]; ok {
						d := time.Since(t)
						o.Millis = d.Milliseconds()
						itemTime = (itemTime*7 + d) / 8
						delete(outstanding, o.Index)
					}
					outcomes = append(outcomes, o)
				}
				select {
				case ev, more = <-events:
				default:
					more = false
				}
			}
			if !write() { // write journals when it hands out items
				save()
			}
			if len(buffer) == 0 && emptySince.IsZero() {
				emptySince = time.Now()
			}
		case r := <-replies:
			calling = false
			if r.err != nil {
				if ctx.Err() != nil {
					return
				}
				// Keep the outcomes we could not deliver.
				outcomes = append(sending, outcomes...)
				sending = nil
				backoff = min(max(2*backoff, 50*time.Millisecond), 2*time.Second)
				log.Debug("exchange with the job driver failed; retrying", "err", r.err, "in", backoff)
				readySent = false
				retry = time.After(backoff)
				continue
			}
			backoff = 0
			if len(sending) > 0 {
				sending = nil
				save()
			}
			release = r.rep.Release
			starved = len(r.rep.Items) == 0
			if len(r.rep.Items) > 0 && !emptySince.IsZero() {
				if idle := time.Since(emptySince); idle > itemTime/10 && target < maxPrefetch {
					target = min(2*target, maxPrefetch)
				}
				emptySince = time.Time{}
			}
			buffer = append(buffer, r.rep.Items...)
			write()
		}
	}
}

// readWorker parses the worker's stdout; lines that are not protocol go to
// the process's log.
func (a *Agent) readWorker(ctx context.Context, out *os.File, logPath string, events chan<- feedEvent) {
	defer close(events)
	var logf *os.File
	defer func() {
		if logf != nil {
			logf.Close()
		}
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		var wl workerLine
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &wl) == nil && (wl.Ready != nil || wl.ID != nil) {
			ev := feedEvent{}
			if wl.Ready != nil {
				ev.ready = *wl.Ready
			} else if idx, err := strconv.Atoi(*wl.ID); err == nil {
				o := wire.ItemOutcome{Index: idx, OK: wl.OK && wl.Error == nil}
				if o.OK {
					o.Result = string(wl.Result)
				} else if wl.Error != nil {
					o.Error = *wl.Error
				} else {
					o.Error = "the worker answered without ok or error"
				}
				ev.outcome = &o
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
			continue
		}
		if logf == nil && logPath != "" {
			logf, _ = os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
		}
		if logf != nil {
			fmt.Fprintf(logf, "%s\n", line)
		}
	}
}

// feedState is what a feeder journals so that a restarted agent can resume
// feeding a re-adopted worker: whether it is ready, which items are in the
// worker, and which answers have not reached the job driver yet.
type feedState struct {
	Ready    bool               `json:"ready,omitempty"`
	InitMS   int64              `json:"init_ms,omitempty"`
	Held     []int              `json:"held,omitempty"`
	Outcomes []wire.ItemOutcome `json:"outcomes,omitempty"`
}

// journal is the feed state on local disk, rewritten in place (no fsync:
// it protects against the agent dying, not the machine, and the machine's
// death takes the worker with it).
type journal struct {
	f     *os.File
	state feedState
}

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	j := &journal{f: f}
	if b, err := io.ReadAll(io.LimitReader(f, maxLine)); err == nil && len(b) > 0 {
		// Decode the first value only: a torn rewrite leaves old bytes after it.
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&j.state); err != nil {
			j.state = feedState{} // torn or foreign: start afresh
		}
	}
	return j, nil
}

func (j *journal) save(st feedState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if _, err := j.f.WriteAt(b, 0); err != nil {
		return err
	}
	return j.f.Truncate(int64(len(b)))
}

func (j *journal) close() { j.f.Close() }
