package feed

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Host is what the job streams need of the agent that runs them: the
// process table (through proc) and the job driver on the head. Nothing
// else of the agent is reached from here.
type Host interface {
	// Pipes names the FIFOs of a process's stdin and stdout.
	Pipes(procID string) (stdin, stdout string)
	// AppendLog opens a process's log for appending, as the process's
	// user and never through a symlink (proc.Manager.AppendLog).
	AppendLog(procID string) (*os.File, error)
	// Ended reports whether a process has ended, or is not known.
	Ended(procID string) bool
	// Stop stops a process in the background: SIGTERM, SIGKILL after
	// grace; why is for the logs.
	Stop(ctx context.Context, procID string, grace time.Duration, why string)
	// Exchange calls the job driver on the head with a job process's
	// answers and for its next items (wire.MethodExchange).
	Exchange(ctx context.Context, req wire.ExchangeRequest, rep *wire.ExchangeReply) error
	// Driver calls the job driver on the head with the items a driver
	// process printed (wire.MethodDriver).
	Driver(ctx context.Context, req wire.DriverRequest, rep *wire.DriverReply) error
}

// Config configures the job streams of an agent.
type Config struct {
	Node   string // this node, in the requests to the head
	Host   Host
	Logger *slog.Logger // component=feed is added
}

// Streams are the job streams of one agent: the feeders of its job
// processes and the pumps of its driver processes. Every goroutine they
// start is theirs and ends with the context it was started with (Wait).
type Streams struct {
	node string
	host Host
	log  *slog.Logger
	wg   sync.WaitGroup

	feeders feeders
	pumps   pumps
}

// New returns the job streams of an agent; nothing runs until a process
// is fed or pumped.
func New(cfg Config) *Streams {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Streams{
		node: cfg.Node, host: cfg.Host, log: log.With("component", "feed"),
		feeders: feeders{cancel: map[string]context.CancelFunc{}},
		pumps:   pumps{m: map[string]*Pump{}},
	}
}

// Wait waits for every goroutine the streams started: call it once the
// contexts they were given have ended.
func (s *Streams) Wait() { s.wg.Wait() }

// StartFeeder starts feeding a job process (just started, or re-adopted)
// unless a feeder already runs. The feeder stops when the process ends
// (StopFeeder) or ctx ends.
func (s *Streams) StartFeeder(ctx context.Context, spec wire.ProcSpec, started time.Time) {
	fctx, cancel := context.WithCancel(ctx)
	if !s.feeders.add(spec.ID, cancel) {
		cancel()
		return
	}
	if s.host.Ended(spec.ID) {
		cancel() // it ended before the feeder started
	}
	s.wg.Go(func() { s.feed(fctx, spec, started) })
}

// StopFeeder stops the feeder of a process that ended, if one runs.
func (s *Streams) StopFeeder(procID string) { s.feeders.stop(procID) }

// RegisterPump registers the pump of a driver process before the process
// starts, so that an exit seen at once still waits for it (DriverExited);
// nil means one is registered. The caller then starts it (Pump.Start) or
// says that it will never run (Pump.Cancel). uid owns the driver's log.
func (s *Streams) RegisterPump(procID string, uid uint32) *Pump {
	return s.pumps.register(s, procID, uid)
}

// StartPump starts pumping a re-adopted driver process unless a pump is
// registered for it.
func (s *Streams) StartPump(ctx context.Context, spec wire.ProcSpec, started time.Time) {
	if p := s.RegisterPump(spec.ID, spec.UID); p != nil {
		p.Start(ctx, spec, started)
	}
}

// pumpWait bounds how long the exit of a driver waits for its pump to
// send the items the driver printed last.
const pumpWait = 10 * time.Second

// DriverExited finishes the pump of a driver process that exited: it
// waits for the pump to send what the driver printed (so the head has the
// driver's last items before it learns of its exit), then stops it. It
// returns the uid that owns the driver's log; false when no pump was
// registered for procID (it is not a driver).
func (s *Streams) DriverExited(procID string) (uid uint32, ok bool) {
	p := s.pumps.take(procID)
	if p == nil {
		return 0, false
	}
	select {
	case <-p.done:
	case <-time.After(pumpWait):
	}
	p.stop()
	return p.uid, true
}

// Pump is the registered pump of a driver process (RegisterPump).
type Pump struct {
	s      *Streams
	id     string
	uid    uint32
	done   chan struct{} // closed when the pump ended, or when it will never run
	mu     sync.Mutex
	cancel context.CancelFunc
}

// Start runs the pump until the driver's stdout closes, the job wants no
// more items, or ctx ends.
func (p *Pump) Start(ctx context.Context, spec wire.ProcSpec, started time.Time) {
	pctx, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	p.cancel = cancel
	p.mu.Unlock()
	p.s.wg.Go(func() {
		defer close(p.done)
		p.s.pump(pctx, spec, started)
	})
}

// Cancel says that the pump will never run (its driver did not start).
func (p *Pump) Cancel() {
	close(p.done)
	p.s.pumps.take(p.id)
}

// stop stops the pump, if it runs.
func (p *Pump) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel != nil {
		p.cancel()
	}
}

// feeders are the job processes being fed, with what stops their feeder.
type feeders struct {
	mu     sync.Mutex
	cancel map[string]context.CancelFunc
}

// add registers the feeder of a process; false means one already runs.
func (f *feeders) add(id string, cancel context.CancelFunc) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.cancel[id]; ok {
		return false
	}
	f.cancel[id] = cancel
	return true
}

// stop stops the feeder of a process, if one runs.
func (f *feeders) stop(id string) {
	f.mu.Lock()
	cancel, ok := f.cancel[id]
	delete(f.cancel, id)
	f.mu.Unlock()
	if ok {
		cancel()
	}
}

// pumps are the driver processes being pumped: the uid their logs belong
// to and a channel closed when the pump has finished, so that the exit of
// a driver is reported only after the items it printed last.
type pumps struct {
	mu sync.Mutex
	m  map[string]*Pump
}

// register registers the pump of a driver; nil means one is registered.
func (ps *pumps) register(s *Streams, id string, uid uint32) *Pump {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.m[id]; ok {
		return nil
	}
	p := &Pump{s: s, id: id, uid: uid, done: make(chan struct{})}
	ps.m[id] = p
	return p
}

// take removes and returns the pump of id, if any.
func (ps *pumps) take(id string) *Pump {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.m[id]
	delete(ps.m, id)
	return p
}
