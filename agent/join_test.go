package agent

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ducc-project/ducc/wire/wiretest"
)

// levels records the levels and messages of a logger's records.
type levels struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

func (l *levels) count(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level {
			n++
		}
	}
	return n
}

// An unreachable join address is a warning (the joiner retries; the agent
// there may be restarting), and nothing at all once this agent stops: a
// graceful stop logs no error.
func TestJoinUnreachableLogsWarning(t *testing.T) {
	// A port with nothing behind it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "/ip4/127.0.0.1/tcp/" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	tests := []struct {
		name             string
		stopped          bool
		wantWarn, wantEr int
	}{
		{"running", false, 1, 0},
		{"stopping", true, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &levels{}
			node := wiretest.NewNode(t, wiretest.Key(t))
			a := &Agent{cfg: &Config{Join: []string{addr}}, log: slog.New(rec), host: node.Host}
			j, err := newJoiner(a)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tc.stopped {
				cancel()
			}
			defer cancel()
			if n := j.round(ctx); n != 0 {
				t.Fatalf("connected to %d targets behind a closed port", n)
			}
			if j.err() == nil {
				t.Error("the joiner records no reason for being cut off")
			}
			if got := rec.count(slog.LevelWarn); got != tc.wantWarn {
				t.Errorf("%d warnings, want %d", got, tc.wantWarn)
			}
			if got := rec.count(slog.LevelError); got != tc.wantEr {
				t.Errorf("%d errors, want %d", got, tc.wantEr)
			}
		})
	}
}

// Join addresses given without /p2p are dialled in parallel; each must
// learn the id of the agent at its own address (a shared probe id once
// gave every address the id of one agent, and when that agent died the
// node could reach no other).
func TestJoinLearnsEachAddressesID(t *testing.T) {
	psk := wiretest.Key(t)
	var join []string
	want := map[string]bool{}
	for range 3 {
		n := wiretest.NewNode(t, psk)
		for _, ma := range n.Host.Addrs() {
			if strings.Contains(ma.String(), "/ip4/127.0.0.1/tcp/") {
				join = append(join, ma.String())
				want[n.Host.ID().String()] = true
				break
			}
		}
	}
	node := wiretest.NewNode(t, psk)
	a := &Agent{cfg: &Config{Join: join}, log: slog.New(&levels{}), host: node.Host}
	j, err := newJoiner(a)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 { // several rounds: the race needed parallel probes
		for _, tg := range j.targets {
			tg.id, tg.learned = "", false
		}
		if n := j.round(context.Background()); n != 3 {
			t.Fatalf("connected to %d of 3 targets", n)
		}
		got := map[string]bool{}
		for _, tg := range j.targets {
			got[tg.id.String()] = true
		}
		if len(got) != 3 {
			t.Fatalf("the three addresses learned %d distinct ids: %v (want %v)", len(got), got, want)
		}
		for id := range got {
			if !want[id] {
				t.Fatalf("learned id %s belongs to no target", id)
			}
		}
	}
}
