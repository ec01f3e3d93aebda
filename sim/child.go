package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
)

// childMsg is one JSON line between the head process and the fakes
// process: commands go to the child on its stdin, events come back on its
// stdout.
type childMsg struct {
	Cmd    string       `json:"cmd,omitempty"` // start, work, stop
	Config *fakesConfig `json:"config,omitempty"`
	N      int          `json:"n,omitempty"`
	Event  string       `json:"event,omitempty"` // ready, work, stats, error
	Work   *WorkResult  `json:"work,omitempty"`
	Stats  *FakeStats   `json:"stats,omitempty"`
	Error  string       `json:"error,omitempty"`
}

// runner drives the fake agents, in this process or in a child.
type runner interface {
	work(ctx context.Context, n int) (WorkResult, error)
	stop() (FakeStats, error)
}

// localRunner runs the fakes in this process.
type localRunner struct{ f *fakes }

func (l *localRunner) work(ctx context.Context, n int) (WorkResult, error) { return l.f.work(ctx, n) }
func (l *localRunner) stop() (FakeStats, error)                            { return l.f.stop(), nil }

// childRunner runs the fakes in a child process.
type childRunner struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	log    *slog.Logger
	mu     sync.Mutex
	closed bool
}

// startChild starts the fakes command and waits until its fakes are
// connected.
func startChild(ctx context.Context, command []string, cfg fakesConfig, log *slog.Logger) (_ *childRunner, err error) {
	// The command is the ducc binary itself (`ducc sim` re-running as its
	// fakes child), not a user program: only proc starts those.
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("fakes process: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("fakes process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start fakes process %v: %w", command, err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	c := &childRunner{cmd: cmd, in: in, out: sc, log: log}
	defer func() {
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	// The child's own context: killing it when ctx ends unblocks reads.
	stopKill := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stopKill()
	if err := c.send(childMsg{Cmd: "start", Config: &cfg}); err != nil {
		return nil, err
	}
	if _, err := c.expect("ready"); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *childRunner) send(m childMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("fakes process: encode %s: %w", m.Cmd, err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("fakes process: send %s: %w", m.Cmd, err)
	}
	return nil
}

func (c *childRunner) expect(event string) (childMsg, error) {
	for c.out.Scan() {
		var m childMsg
		if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
			c.log.Debug("fakes process: ignoring output line", "line", c.out.Text())
			continue
		}
		if m.Event == "error" {
			return m, fmt.Errorf("fakes process: %s", m.Error)
		}
		if m.Event == event {
			return m, nil
		}
	}
	if err := c.out.Err(); err != nil {
		return childMsg{}, fmt.Errorf("fakes process: waiting for %s: %w", event, err)
	}
	return childMsg{}, fmt.Errorf("fakes process: exited before %s", event)
}

func (c *childRunner) work(ctx context.Context, n int) (WorkResult, error) {
	stopKill := context.AfterFunc(ctx, func() { _ = c.cmd.Process.Kill() })
	defer stopKill()
	if err := c.send(childMsg{Cmd: "work", N: n}); err != nil {
		return WorkResult{}, err
	}
	m, err := c.expect("work")
	if err != nil || m.Work == nil {
		return WorkResult{}, errors.Join(err, errors.New("fakes process: no work result"))
	}
	return *m.Work, nil
}

func (c *childRunner) stop() (FakeStats, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return FakeStats{}, nil
	}
	c.closed = true
	c.mu.Unlock()
	var st FakeStats
	err := c.send(childMsg{Cmd: "stop"})
	if err == nil {
		var m childMsg
		if m, err = c.expect("stats"); err == nil && m.Stats != nil {
			st = *m.Stats
		}
	}
	_ = c.in.Close()
	if werr := c.cmd.Wait(); werr != nil && err == nil {
		err = fmt.Errorf("fakes process: %w", werr)
	}
	return st, err
}

// ServeFakes is the fakes process (`ducc sim --fakes-only`): it reads
// commands as JSON lines from r, runs the fake agents and the workload
// driver, and writes events to w, until a stop command, the end of r, or
// the end of ctx.
func ServeFakes(ctx context.Context, r io.Reader, w io.Writer, logger *slog.Logger) error {
	logger = logger.With("component", "sim", "role", "fakes")
	enc := json.NewEncoder(w)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var f *fakes
	defer func() {
		if f != nil {
			f.stop()
		}
	}()
	fail := func(err error) error {
		_ = enc.Encode(childMsg{Event: "error", Error: err.Error()})
		return err
	}
	for sc.Scan() {
		var m childMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fail(fmt.Errorf("fakes: bad command %q: %w", sc.Text(), err))
		}
		switch m.Cmd {
		case "start":
			if f != nil || m.Config == nil {
				return fail(errors.New("fakes: start needs a config, once"))
			}
			var err error
			if f, err = startFakes(ctx, *m.Config, logger); err != nil {
				return fail(err)
			}
			if err := enc.Encode(childMsg{Event: "ready"}); err != nil {
				return fmt.Errorf("fakes: %w", err)
			}
		case "work":
			if f == nil {
				return fail(errors.New("fakes: work before start"))
			}
			wr, err := f.work(ctx, m.N)
			if err != nil {
				return fail(err)
			}
			if err := enc.Encode(childMsg{Event: "work", Work: &wr}); err != nil {
				return fmt.Errorf("fakes: %w", err)
			}
		case "stop":
			var st FakeStats
			if f != nil {
				st = f.stop()
				f = nil
			}
			if err := enc.Encode(childMsg{Event: "stats", Stats: &st}); err != nil {
				return fmt.Errorf("fakes: %w", err)
			}
			return nil
		default:
			return fail(fmt.Errorf("fakes: unknown command %q", m.Cmd))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("fakes: reading commands: %w", err)
	}
	return nil
}
