package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// driverLine is one protocol line of a driver process.
type driverLine struct {
	Ready *bool   `json:"ready"`
	Item  *string `json:"item"`
	End   *bool   `json:"end"`
	Total *int    `json:"total"`
}

type driverEvent struct {
	ready    bool
	item     *string
	end      bool
	total    int
	overlong bool
}

// pumps are the driver processes this agent pumps: the uid their logs
// belong to and a channel closed when the pump has finished, so that the
// exit of a driver is reported only after the items it printed last.
type pumps struct {
	mu sync.Mutex
	m  map[string]*pumpEntry
}

type pumpEntry struct {
	uid    uint32
	done   chan struct{} // closed when the pump ended, or when it will never run
	mu     sync.Mutex
	cancel context.CancelFunc
}

// stop stops the pump, if it runs.
func (e *pumpEntry) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		e.cancel()
	}
}

func newPumps() *pumps { return &pumps{m: map[string]*pumpEntry{}} }

// register registers the pump of a driver before it starts, so that an
// exit seen at once still waits for it; nil means one is registered.
func (p *pumps) register(id string, uid uint32) *pumpEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[id]; ok {
		return nil
	}
	e := &pumpEntry{uid: uid, done: make(chan struct{})}
	p.m[id] = e
	return e
}

// take removes and returns the entry of id, if any.
func (p *pumps) take(id string) *pumpEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[id]
	delete(p.m, id)
	return e
}

// startPump starts pumping a re-adopted driver process unless a pump is
// registered for it.
func (a *Agent) startPump(ctx context.Context, spec wire.ProcSpec, started time.Time) {
	if e := a.pumps.register(spec.ID, spec.UID); e != nil {
		a.launchPump(ctx, e, spec, started)
	}
}

// launchPump runs the registered pump e of a driver process.
func (a *Agent) launchPump(ctx context.Context, e *pumpEntry, spec wire.ProcSpec, started time.Time) {
	pctx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.cancel = cancel
	e.mu.Unlock()
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		defer close(e.done)
		a.pump(pctx, spec, started)
	}()
}

// pump runs until the driver's stdout closes, the job wants no more items,
// or ctx ends.
func (a *Agent) pump(ctx context.Context, spec wire.ProcSpec, started time.Time) {
	log := a.log.With("proc", spec.ID, "job", spec.WorkID)
	inPath, outPath := a.procs.Pipes(spec.ID)
	p := &driverPump{a: a, ctx: ctx, log: log, spec: spec, started: started, node: a.cfg.Node}
	// A pump that finds the marker of an earlier one runs in a restarted
	// agent: the lines the old one had read and not sent are lost, so the
	// job cannot go on without losing or repeating items.
	mk, err := os.OpenFile(filepath.Join(filepath.Dir(inPath), pumpMarker), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			p.fail("the agent on " + a.cfg.Node + " restarted while the driver ran; the items it had read from the driver are lost")
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
	go func() { <-rctx.Done(); out.Close() }()
	events := make(chan driverEvent, 4096)
	openLog := func() (*os.File, error) { return a.procs.AppendLog(spec.ID) }
	go readDriver(rctx, log, out, openLog, events)
	p.in = in
	p.run(events)
}

// driverPump is the state of one pump.
type driverPump struct {
	a       *Agent
	node    string
	ctx     context.Context
	log     *slog.Logger
	spec    wire.ProcSpec
	started time.Time
	in      io.WriteCloser

	ready     bool
	initMS    int64
	base      int      // the driver's number of pending[0]: what the head has
	pending   []string // items read, not yet acknowledged by the head
	owed      int      // items asked of the driver and not yet read
	end       bool     // the driver said {"end": true}
	endAcked  bool     // the head has every item
	eof       bool     // the driver's stdout closed
	total     int
	failed    string // a protocol failure: the job ends DriverProcessFailed
	backoff   time.Duration
	callHeadF func(ctx context.Context, req wire.DriverRequest, rep *wire.DriverReply) error // tests
}

func (p *driverPump) call(req wire.DriverRequest, rep *wire.DriverReply) error {
	if p.callHeadF != nil {
		return p.callHeadF(p.ctx, req, rep)
	}
	return p.a.callHead(p.ctx, wire.MethodDriver, wire.Caller{Node: p.node}, req, rep)
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
			if _, err := fmt.Fprintf(p.in, "{\"more\": %d}\n", ask); err != nil {
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
			if p.a != nil {
				p.a.stop(p.ctx, p.spec.ID, time.Duration(p.spec.GraceMS)*time.Millisecond, "the driver sent its last work item")
			}
			t.Reset(time.Hour)
		case _, ok := <-events:
			if !ok {
				return
			}
		}
	}
}

// readDriver parses the driver's stdout; lines that are not protocol go to
// its log, as readWorker does for job processes.
func readDriver(ctx context.Context, log *slog.Logger, out *os.File, openLog func() (*os.File, error), events chan<- driverEvent) {
	defer close(events)
	other := &otherLines{open: openLog, log: log, who: "driver"}
	defer other.close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		var dl driverLine
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &dl) == nil && (dl.Ready != nil || dl.Item != nil || dl.End != nil || dl.Total != nil) {
			ev := driverEvent{}
			switch {
			case dl.Item != nil:
				ev.item = dl.Item
			case dl.Ready != nil:
				ev.ready = *dl.Ready
			case dl.End != nil:
				ev.end = *dl.End
			default:
				ev.total = *dl.Total
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
			continue
		}
		other.write(line)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		select {
		case events <- driverEvent{overlong: true}:
		case <-ctx.Done():
		}
	}
}

// pumpWait bounds how long the exit of a driver waits for its pump to
// send the items the driver printed last.
const pumpWait = 10 * time.Second

// driverExited finishes the pump of a driver that exited: it waits for the
// pump to send what the driver printed (so the head has the driver's last
// items before it learns of its exit), then stops it, and adds the last
// lines of the driver's log to the reason of a driver that failed.
func (a *Agent) driverExited(ps *wire.ProcStatus) {
	e := a.pumps.take(ps.ID)
	if e == nil {
		return
	}
	select {
	case <-e.done:
	case <-time.After(pumpWait):
	}
	e.stop()
	if ps.State != wire.ProcExited || ps.ExitCode != 0 {
		if tail := driverLogTail(ps.LogPath, e.uid); tail != "" {
			ps.Reason += "; last lines of its log: " + tail
		}
	}
}

// driverLogTail returns the last lines of a driver's log, joined with
// " | ", for the reason of a driver that failed; "" if there is none.
func driverLogTail(path string, uid uint32) string {
	if path == "" {
		return ""
	}
	if e := os.Geteuid(); e != 0 {
		uid = uint32(e)
	}
	f, err := openLog(path, uid)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 2048
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := fi.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, max)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // a cut first line
	}
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}
