package feed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// The agent that runs a job's driver process pumps its items to the job
// driver on the head (docs/jobs.md, "Driver process protocol"): the driver
// prints {"ready": true}; the pump asks it for items with {"more": N} on its
// stdin only while the head has room for them (DriverReply.Room: the job's
// queue is under its high-water mark), reads up to N {"item": "..."} lines
// back and sends them to the head in numbered chunks (MethodDriver), until
// the driver prints {"end": true} and exits (one still running a few seconds
// after the head has every item is stopped). Neither the pump nor the head
// ever holds more than about a high-water mark of items that no job process
// has taken.

const (
	pumpChunkItems = 50_000  // items per MethodDriver call at most
	pumpChunkBytes = 4 << 20 // and about this many bytes
	pumpMinAsk     = 256     // ask the driver for at least this many (the high-water mark is at least 1000)
	pumpMarker     = "driver.pump"
)

type driverEvent struct {
	ready    bool
	item     *string
	end      bool
	total    int
	overlong bool
}

// pump runs until the driver's stdout closes, the job wants no more items,
// or ctx ends.
func (s *Streams) pump(ctx context.Context, spec wire.ProcSpec, started time.Time) {
	log := s.log.With("proc", spec.ID, "job", spec.WorkID)
	inPath, outPath := s.host.Pipes(spec.ID)
	p := &driverPump{host: s.host, ctx: ctx, log: log, spec: spec, started: started, node: s.node}
	// A pump that finds the marker of an earlier one runs in a restarted
	// agent: the lines the old one had read and not sent are lost, so the
	// job cannot go on without losing or repeating items.
	mk, err := os.OpenFile(filepath.Join(filepath.Dir(inPath), pumpMarker), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			p.fail("the agent on " + s.node + " restarted while the driver ran; the items it had read from the driver are lost")
		} else {
			p.fail(fmt.Sprintf("cannot mark the driver as pumped: %v", err))
		}
		return
	}
	mk.Close()
	in, err := os.OpenFile(inPath, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		log.Error("cannot open the driver's stdin", "err", err)
		return
	}
	defer in.Close()
	out, err := os.OpenFile(outPath, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		log.Error("cannot open the driver's stdout", "err", err)
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.wg.Go(func() { <-rctx.Done(); out.Close() })
	events := make(chan driverEvent, 4096)
	openLog := func() (*os.File, error) { return s.host.AppendLog(spec.ID) }
	s.wg.Go(func() { readDriver(rctx, log, out, openLog, events) })
	p.in = in
	p.run(events)
}

// driverPump is the state of one pump.
type driverPump struct {
	host    Host
	node    string
	ctx     context.Context
	log     *slog.Logger
	spec    wire.ProcSpec
	started time.Time
	in      io.WriteCloser

	ready    bool
	initMS   int64
	base     int      // the driver's number of pending[0]: what the head has
	pending  []string // items read, not yet acknowledged by the head
	owed     int      // items asked of the driver and not yet read
	end      bool     // the driver said {"end": true}
	endAcked bool     // the head has every item
	eof      bool     // the driver's stdout closed
	total    int
	failed   string // a protocol failure: the job ends DriverProcessFailed
	backoff  time.Duration
}

func (p *driverPump) call(req wire.DriverRequest, rep *wire.DriverReply) error {
	return p.host.Driver(p.ctx, req, rep)
}

// fail tells the head that the driver's items cannot be trusted any more.
func (p *driverPump) fail(why string) {
	p.log.Error("driver failed", "why", why)
	var rep wire.DriverReply
	for p.ctx.Err() == nil {
		req := wire.DriverRequest{JobID: p.spec.WorkID, ProcID: p.spec.ID, Node: p.node, Failed: why}
		if err := p.call(req, &rep); err == nil || wire.ErrorCode(err) == wire.CodeUsage {
			return
		}
		p.sleep()
	}
}

func (p *driverPump) sleep() {
	p.backoff = min(max(2*p.backoff, 50*time.Millisecond), 2*time.Second)
	select {
	case <-p.ctx.Done():
	case <-time.After(p.backoff):
	}
}

// take folds one event in.
func (p *driverPump) take(ev driverEvent) {
	switch {
	case ev.ready && !p.ready:
		p.ready, p.initMS = true, time.Since(p.started).Milliseconds()
		p.log.Info("driver ready", "init", time.Since(p.started).Round(time.Millisecond))
	case ev.item != nil:
		if !p.ready || p.end {
			if p.failed == "" {
				p.failed = "the driver printed an item before {\"ready\": true} or after {\"end\": true}"
			}
			return
		}
		if p.owed <= 0 && p.failed == "" {
			p.failed = "the driver printed more items than it was asked for with {\"more\": N}"
		}
		p.pending = append(p.pending, *ev.item)
		p.owed--
	case ev.end:
		p.end = true
	case ev.total > 0:
		p.total = ev.total
	case ev.overlong && p.failed == "":
		p.failed = "the driver printed a line of more than 4 MiB"
	}
}

// run pumps until the driver's stdout closes (after its end, once the head
// has every item), the head wants no more, or ctx ends.
func (p *driverPump) run(events <-chan driverEvent) {
	for p.ctx.Err() == nil {
		// Wait for something to do: the driver's readiness, or its items
		// while it owes some and none are pending.
		if !p.eof && (!p.ready || (p.owed > 0 && len(p.pending) == 0 && !p.end && p.failed == "")) {
			select {
			case <-p.ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					p.eof = true
				} else {
					p.take(ev)
				}
			}
		}
		// Take what else is there, up to a chunk.
		size := 0
	drain:
		for !p.eof && len(p.pending) < pumpChunkItems && size < pumpChunkBytes {
			select {
			case ev, ok := <-events:
				if !ok {
					p.eof = true
					break drain
				}
				p.take(ev)
				if ev.item != nil {
					size += len(*ev.item) + 16
				}
			default:
				break drain
			}
		}
		if p.failed != "" {
			p.fail(p.failed)
			return
		}
		if !p.ready || (p.eof && !p.end) {
			if p.eof {
				return // gone: its exit, reported by the agent, ends the job
			}
			continue
		}
		n, bytes := 0, 0
		for n < len(p.pending) && n < pumpChunkItems && bytes < pumpChunkBytes {
			bytes += len(p.pending[n]) + 16
			n++
		}
		req := wire.DriverRequest{JobID: p.spec.WorkID, ProcID: p.spec.ID, Node: p.node, Ready: true, InitMS: p.initMS,
			Base: p.base, Items: p.pending[:n], End: p.end && n == len(p.pending), Total: p.total}
		if n == 0 && !p.end && p.owed <= 0 {
			req.WaitMS = longPollWait.Milliseconds() // wait for room
		}
		var rep wire.DriverReply
		if err := p.call(req, &rep); err != nil {
			if p.ctx.Err() != nil {
				return
			}
			if wire.ErrorCode(err) == wire.CodeUsage {
				p.log.Warn("the job driver refused the driver's items; stopping the pump", "err", err)
				return
			}
			p.log.Debug("driver call failed; retrying", "err", err)
			p.sleep() // the chunk goes again, numbered the same
			continue
		}
		p.backoff = 0
		if got := rep.Have - p.base; got > 0 {
			got = min(got, len(p.pending))
			p.pending = p.pending[got:]
			p.base += got
		}
		if req.End && len(p.pending) == 0 {
			p.endAcked = true
		}
		if rep.Stop || p.endAcked {
			if p.endAcked {
				p.log.Info("driver sent its last item", "items", p.base)
			}
			p.in.Close()
			p.finish(events)
			return
		}
		// Ask in batches: a small room fills up again by itself, and the
		// next long poll returns when the job has room for a batch.
		if ask := rep.Room - p.owed - len(p.pending); !p.end && ask > 0 && ask >= pumpMinAsk {
			if _, err := fmt.Fprintf(p.in, "{\"more\": %d}\n", ask); err != nil { // a stream.MoreLine
				p.log.Warn("cannot ask the driver for more items", "err", err)
				p.sleep()
				continue
			}
			p.owed += ask
		}
	}
}

// pumpExitWait is how long a driver that sent its last item (or whose job
// needs no more) has to exit by itself before it is stopped.
const pumpExitWait = 5 * time.Second

// finish reads the driver's last lines (they go to its log) until its
// stdout closes; a driver that has not exited pumpExitWait later is
// stopped like a job process that is no longer needed.
func (p *driverPump) finish(events <-chan driverEvent) {
	if p.eof {
		return
	}
	t := time.NewTimer(pumpExitWait)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.host.Stop(p.ctx, p.spec.ID, time.Duration(p.spec.GraceMS)*time.Millisecond, "the driver sent its last work item")
			t.Reset(time.Hour)
		case _, ok := <-events:
			if !ok {
				return
			}
		}
	}
}
