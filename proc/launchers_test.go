package proc

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLaunchers starts b.N processes of /bin/true through one
// Manager and its shim server, from 1, 2, 4 and 16 callers at once (as the
// agent would if it launched in parallel), each waiting for its process's
// end (OnExit) and forgetting it before the next: launches/s, and the CPU
// per launch of the caller's process (the Manager, the agent's side) and
// of the shim server (launch, reap, status.json; with the children's own
// as it reaps them). A rate that does not rise with callers while CPU is
// left is a step that runs one at a time (docs/performance.md, "Where a
// short job's time goes").
//
//	go test -run XXX -bench Launchers -benchtime 500x ./proc/
func BenchmarkLaunchers(b *testing.B) {
	for _, callers := range []int{1, 2, 4, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) { benchLaunchers(b, callers) })
	}
}

func benchLaunchers(b *testing.B, callers int) {
	e := newEnv(b)
	x := &exits{}
	cfg := e.config(x)
	cfg.Logger = slog.New(slog.DiscardHandler)
	m, err := NewManager(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	launch := func(id string) error {
		st, err := m.Start(ctx, Spec{ID: id, WorkID: 1, Kind: "POP", Node: "n", Path: "/bin/true", MemoryLimit: 256 * mib})
		if err != nil {
			return err
		}
		if st.State != Running && st.State != Exited { // true may have ended already
			return fmt.Errorf("%s: %+v", id, st)
		}
		select {
		case end := <-x.get(id):
			if end.ExitCode != 0 {
				return fmt.Errorf("%s: %+v", id, end)
			}
		case <-time.After(time.Minute):
			return fmt.Errorf("%s: no end in a minute", id)
		}
		x.mu.Lock()
		delete(x.ch, id)
		x.mu.Unlock()
		return m.Forget(id)
	}
	if err := launch("warm"); err != nil { // starts the server
		b.Fatal(err)
	}
	srvPID := 0
	m.mu.Lock()
	if m.current != nil {
		srvPID = m.current.pid
	}
	m.mu.Unlock()
	self0, srv0 := procTicks(b, os.Getpid(), false), procTicks(b, srvPID, true)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	b.ResetTimer()
	t0 := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := launch("l." + strconv.FormatInt(i, 10)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	self1, srv1 := procTicks(b, os.Getpid(), false), procTicks(b, srvPID, true)
	n := float64(b.N)
	b.ReportMetric(n/wall.Seconds(), "launches/s")
	b.ReportMetric(float64(self1-self0)*10e3/n, "manager-cpu-µs/launch")
	b.ReportMetric(float64(srv1-srv0)*10e3/n, "server-cpu-µs/launch")
}

// procTicks is the CPU time of process pid in clock ticks (utime, stime),
// with that of the children it reaped (cutime, cstime) if children.
func procTicks(tb testing.TB, pid int, children bool) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i-3], 10, 64); return v } // field i of proc(5)
	t := n(14) + n(15)
	if children {
		t += n(16) + n(17)
	}
	return t
}
