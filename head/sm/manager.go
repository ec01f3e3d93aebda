package sm

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// Config configures a Manager.
type Config struct {
	FSM    *state.FSM
	Apply  state.Applier
	Now    func() time.Time
	Logger *slog.Logger
	// Trigger asks the orchestrator for a scheduling cycle soon (after a
	// pinger's answer changed something).
	Trigger func()
	// RunPinger runs custom pingers on agents; nil makes every custom ping
	// fail.
	RunPinger PingRunner
	// PingerPaths are where the Java pingers' jars and the registered
	// pingers are (spec.FindPingerPaths).
	PingerPaths spec.PingerPaths
}

// Manager runs the Service Manager for one leadership term: Tick decides
// and applies, the pingers run in goroutines owned by the Manager and end
// with the context given to Tick; Wait waits for them.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	soft    Soft
	pings   map[uint64]Ping
	last    Output
	states  map[uint64]wire.PingState // what custom pingers read
	nodes   map[uint64]string         // where custom pingers run ("" = the head's node)
	runners map[uint64]*runner
	seq     uint64
	wg      sync.WaitGroup
}

type runner struct {
	key    string
	cancel context.CancelFunc
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Trigger == nil {
		cfg.Trigger = func() {}
	}
	return &Manager{cfg: cfg, log: cfg.Logger.With("component", "sm"), pings: map[uint64]Ping{},
		states: map[uint64]wire.PingState{}, runners: map[uint64]*runner{}}
}

// Tick runs one decision: it reads the state, decides, applies the
// decision's commands through Raft and starts or stops pingers. The
// orchestrator calls it at every cycle, before scheduling, without holding
// any lock.
func (m *Manager) Tick(ctx context.Context, now time.Time) {
	var work []*state.Work
	m.cfg.FSM.View(func(v *state.View) {
		for _, w := range v.Active() {
			if w.Service != nil || len(w.Deps) > 0 {
				work = append(work, w.Copy())
			}
		}
	})
	m.mu.Lock()
	pings := make(map[uint64]Ping, len(m.pings))
	for id, p := range m.pings {
		pings[id] = p
	}
	in := Input{Now: now, Work: work, Pings: pings, Soft: m.soft}
	m.mu.Unlock()
	out := Decide(in)
	if len(out.Commands) > 0 {
		res, err := m.cfg.Apply.Apply(ctx, out.Commands...)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("cannot apply service decisions", "err", err)
			}
			return
		}
		for i, r := range res {
			if r.Err != nil {
				m.log.Debug("service decision not applied", "work", out.Commands[i].WorkID, "err", r.Err)
			}
		}
		for _, c := range out.Commands {
			m.logCommand(c)
		}
	}
	states, nodes := map[uint64]wire.PingState{}, map[uint64]string{}
	for _, w := range work {
		if w.Service != nil {
			states[w.ID] = PingState(w, out.Status[w.ID].Refs)
			nodes[w.ID] = pingNode(w)
		}
	}
	m.mu.Lock()
	m.soft, m.last, m.states, m.nodes = out.Soft, out, states, nodes
	m.mu.Unlock()
	m.reconcile(ctx, out.Pingers)
}

func (m *Manager) logCommand(c state.Command) {
	switch {
	case c.Type == state.CmdSvcChange && c.Service.Op == state.SvcOpReady:
		m.log.Debug("service instance ready", "service", c.WorkID, "proc", c.ProcID)
	case c.Type == state.CmdSvcChange:
		m.log.Info("service change", "service", c.WorkID, "op", c.Service.Op, "n", c.Service.N, "ids", c.Service.IDs)
	case c.Type == state.CmdStopProc:
		m.log.Info("stopping service instance", "service", c.WorkID, "proc", c.ProcID, "reason", c.Reason)
	case c.Type == state.CmdFinish:
		m.log.Info("work fails: services unavailable", "work", c.WorkID, "reason", c.Reason)
	case c.Type == state.CmdDepsMet:
		m.log.Info("services available", "work", c.WorkID)
	}
}

// Wanted returns the instance ids the scheduler should hold for a service.
func (m *Manager) Wanted(id uint64) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last.Wanted[id]
}

// Status returns a service's status as of the last decision.
func (m *Manager) Status(id uint64) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.last.Status[id]
	return st, ok
}

// Waiting says why work waits for services, or "".
func (m *Manager) Waiting(id uint64) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last.Waiting[id]
}

// LastPing returns a service's newest ping result.
func (m *Manager) LastPing(id uint64) (Ping, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pings[id]
	return p, ok
}

// Wait waits for the pingers to end (after the Tick context ended).
func (m *Manager) Wait() { m.wg.Wait() }

// reconcile starts, restarts and stops pingers.
func (m *Manager) reconcile(ctx context.Context, want []Pinger) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	seen := map[uint64]bool{}
	for _, p := range want {
		seen[p.Service] = true
		key := p.Key()
		if r := m.runners[p.Service]; r != nil {
			if r.key == key {
				continue
			}
			r.cancel()
			delete(m.pings, p.Service)
			m.log.Info("restarting pinger", "service", p.Service)
		}
		rctx, cancel := context.WithCancel(ctx)
		m.runners[p.Service] = &runner{key: key, cancel: cancel}
		m.wg.Add(1)
		go m.pingLoop(rctx, p)
	}
	for id, r := range m.runners {
		if !seen[id] {
			r.cancel()
			delete(m.runners, id)
			delete(m.pings, id)
		}
	}
}

// pingLoop pings one service every interval until ctx ends.
func (m *Manager) pingLoop(ctx context.Context, p Pinger) {
	defer m.wg.Done()
	log := m.log.With("service", p.Service, "endpoint", p.Endpoint)
	log.Debug("pinger started")
	missed := 0
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		ps, node := m.states[p.Service], m.nodes[p.Service]
		m.mu.Unlock()
		at := m.cfg.Now()
		res, err := m.ping(ctx, p, ps, node)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			missed++
			res = Ping{Info: err.Error()}
			log.Debug("ping failed", "err", err, "missed", missed, "node", node)
		} else {
			missed = 0
		}
		res.At, res.Missed = at, missed
		m.mu.Lock()
		if r := m.runners[p.Service]; r == nil || r.key != p.Key() {
			m.mu.Unlock()
			return
		}
		m.seq++
		res.Seq = m.seq
		prev, had := m.pings[p.Service]
		m.pings[p.Service] = res
		m.mu.Unlock()
		if !had || prev.Alive != res.Alive || prev.Healthy != res.Healthy || actionable(res.Answer) {
			if had && prev.Alive != res.Alive {
				log.Info("service ping changed", "alive", res.Alive, "info", res.Info)
			}
			m.cfg.Trigger()
		}
		t.Reset(p.Interval)
	}
}

func actionable(a *wire.PingAnswer) bool {
	return a != nil && (a.Additions > 0 || len(a.Deletions) > 0 || a.Autostart != nil || a.LastUse > 0)
}
