package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// The ducc side of the comparison with Slurm (docs/performance.md, issue
// 12): `make bench-e2e` runs these with the stream job of
// bench_e2e_test.go. They print figures; they assert only that the work
// ran.

// cpuTicks is the CPU time of a process in clock ticks: its own (utime,
// stime) and that of the children it reaped (cutime, cstime: the shims).
func cpuTicks(tb testing.TB, pid int) (self, children int64) {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i-3], 10, 64); return v } // i: field number in proc(5)
	return n(14) + n(15), n(16) + n(17)
}

// shimServerTicks is cpuTicks summed over the agent pid's shim servers
// (its children running `shim-server`): they are the parents of its
// processes and are not reaped while the agent runs.
func shimServerTicks(tb testing.TB, pid int) int64 {
	tb.Helper()
	var total int64
	for _, p := range shimServers(pid) {
		s, c := cpuTicks(tb, p)
		total += s + c
	}
	return total
}

// shimServers lists the shim servers the agent pid started.
func shimServers(pid int) []int {
	return shimServerPIDs(func(p int, _ []string) bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			return false
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		return len(f) > 1 && f[1] == strconv.Itoa(pid) // field 4, ppid
	})
}

// clockTick is USER_HZ, 100 on every Linux ducc runs on.
const clockTick = 10 * time.Millisecond

func rssKiB(tb testing.TB, pid int) int64 {
	tb.Helper()
	return statusKiB(tb, pid, "VmRSS:")
}

// statusKiB reads one of the sizes in /proc/PID/status (VmRSS:, RssAnon:,
// RssFile: ...), in KiB.
func statusKiB(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkShortJobs500: 500 × `ducc run --detach -- true`, from one
// submitting loop and from four and sixteen at once (as several users or scripts
// would submit; scripts/compare-slurm.sh's P=), then until the last has
// ended (the peer: 500 × `sbatch --wrap=true`). It reports jobs/s end to
// end (from the first submit to the last end the head recorded), the
// submit rate, and the agent's CPU per job with its shim server's (and so
// the jobs' own, which the server reaps), and the head's Raft log entries
// per job and commands per entry (its group commit's metrics).
//
//	go test -run XXX -bench ShortJobs500 -benchtime 3x ./e2e/
func BenchmarkShortJobs500(b *testing.B) {
	for _, loops := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("loops=%d", loops), func(b *testing.B) { benchShortJobs(b, 500, loops) })
	}
}

func benchShortJobs(b *testing.B, n, loops int) {
	c := startCluster(b)
	c.ducc("run", "--", "true") // warm up
	pid := c.cmd.Process.Pid
	var e2e, submit time.Duration
	var ticks int64
	base := c.webURL()
	var entries, commands, commitSec, cycles, cycleSec float64
	b.ResetTimer()
	for range b.N {
		m0 := scrape(b, base)
		s0, c0 := cpuTicks(b, pid)
		h0 := shimServerTicks(b, pid)
		sub, end := shortJobs(b, c, n, loops)
		submit += sub
		e2e += end
		s1, c1 := cpuTicks(b, pid)
		ticks += s1 - s0 + c1 - c0 + shimServerTicks(b, pid) - h0
		m1 := scrape(b, base)
		entries += m1["ducc_raft_commit_commands_count"] - m0["ducc_raft_commit_commands_count"]
		commands += m1["ducc_raft_commit_commands_sum"] - m0["ducc_raft_commit_commands_sum"]
		commitSec += m1["ducc_raft_commit_seconds_sum"] - m0["ducc_raft_commit_seconds_sum"]
		cycles += m1["ducc_head_rm_cycle_seconds_count"] - m0["ducc_head_rm_cycle_seconds_count"]
		cycleSec += m1["ducc_head_rm_cycle_seconds_sum"] - m0["ducc_head_rm_cycle_seconds_sum"]
	}
	b.StopTimer()
	var shimRSS int64
	for _, p := range shimServers(pid) {
		shimRSS += rssKiB(b, p)
	}
	b.ReportMetric(float64(shimRSS)/1024, "shim-server-RSS-MiB")
	jobs := float64(n * b.N)
	b.ReportMetric(jobs/e2e.Seconds(), "jobs/s")
	b.ReportMetric(jobs/submit.Seconds(), "submits/s")
	b.ReportMetric(float64(time.Duration(ticks)*clockTick)/float64(time.Millisecond)/jobs, "agent-cpu-ms/job")
	// The entries committed while the jobs ran (the waits for their ends'
	// history records take none), heartbeats' reports included.
	b.ReportMetric(entries/jobs, "raft-entries/job")
	if entries > 0 {
		b.ReportMetric(commands/entries, "commands/entry")
	}
	// Raft's time for those entries (handed over to applied; two may be
	// in flight at once, so this is not all serial), and the scheduling
	// cycles per job and their scheduler time per job.
	b.ReportMetric(commitSec*1000/jobs, "commit-ms/job")
	b.ReportMetric(cycles/jobs, "cycles/job")
	b.ReportMetric(cycleSec*1000/jobs, "sched-ms/job")
	b.ReportMetric(0, "ns/op")
}

// detachTrue submits one `ducc run --detach -- true` and returns its id.
func detachTrue(c *cluster) (uint64, error) {
	out, errs, code := c.ducc("run", "--detach", "--", "true")
	id, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if code != 0 || err != nil {
		return 0, fmt.Errorf("run --detach: exit %d: %s %s", code, out, errs)
	}
	return id, nil
}

// shortJobs submits n short jobs (detachTrue) from loops concurrent
// loops, each one after the other, and waits until every one has ended.
// It returns how long the submissions took and the time from the first
// submit to the last end.
func shortJobs(b *testing.B, c *cluster, n, loops int) (submit, e2e time.Duration) {
	b.Helper()
	ids := make(map[uint64]bool, n)
	var mu sync.Mutex
	var failed error
	var wg sync.WaitGroup
	t0 := time.Now()
	for l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n/loops + btoi(l < n%loops) {
				id, err := detachTrue(c)
				mu.Lock()
				if err == nil {
					ids[id] = true
				} else if failed == nil {
					failed = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	submit = time.Since(t0)
	if failed != nil {
		b.Fatal(failed)
	}
	return submit, waitHistory(b, c, ids, t0).Sub(t0)
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// waitHistory waits until every work of ids has an accounting record and
// returns the latest end among them.
func waitHistory(b *testing.B, c *cluster, ids map[uint64]bool, since time.Time) time.Time {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		out, errs, code := c.ducc("history", "--json", "--since", since.Add(-time.Second).Format(time.RFC3339))
		if code != 0 {
			b.Fatalf("history: exit %d: %s", code, errs)
		}
		var rep wire.HistoryReply
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			b.Fatalf("history: %v", err)
		}
		seen, last := 0, int64(0)
		for _, r := range rep.Records {
			if ids[r.ID] {
				seen++
				if r.ExitCode != 0 {
					b.Fatalf("work %d: %s %s", r.ID, r.State, r.Reason)
				}
				last = max(last, r.EndedAt)
			}
		}
		if seen == len(ids) {
			return time.UnixMilli(last)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d short jobs ended in 10 minutes", seen, len(ids))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkSubmitDetach: one `ducc run --detach -- true`, CLI start to
// id printed (the peer: `sbatch --wrap=true`); ns/op is that call alone.
// Between calls, outside the timer, it also runs `ducc version` (the
// CLI's start, no agent) and sends the same request to the agent's
// socket from this process (the round trip alone: connect, the agent,
// the head's admission and Raft commit, the reply), and reports the
// medians of all three: detach-ms, version-ms, roundtrip-ms, and cli-ms =
// detach-ms - roundtrip-ms, what the CLI's start and its own work cost
// the caller (docs/performance.md, "`ducc run --detach` from the
// caller's side").
func BenchmarkSubmitDetach(b *testing.B) {
	c := startCluster(b)
	c.ducc("run", "--", "true") // warm up
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(wire.RunRequest{Path: "true", Env: os.Environ(), Dir: wd, Umask: "0022"})
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true, // one connection per call, as the CLI
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", c.sock)
		},
	}}
	roundTrip := func() time.Duration {
		start := time.Now()
		resp, err := hc.Post("http://ducc"+wire.PathCall+wire.MethodRun, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var rep wire.SubmitReply
		err = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || rep.ID == 0 {
			b.Fatalf("POST %s: %s, %v", wire.MethodRun, resp.Status, err)
		}
		return time.Since(start)
	}
	var detach, version, rt []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if out, errs, code := c.ducc("run", "--detach", "--", "true"); code != 0 {
			b.Fatalf("exit %d: %s %s", code, out, errs)
		}
		detach = append(detach, time.Since(start))
		b.StopTimer()
		start = time.Now()
		if _, errs, code := c.ducc("version"); code != 0 {
			b.Fatalf("version: exit %d: %s", code, errs)
		}
		version = append(version, time.Since(start))
		rt = append(rt, roundTrip())
		b.StartTimer()
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(detach), "detach-ms")
	b.ReportMetric(med(version), "version-ms")
	b.ReportMetric(med(rt), "roundtrip-ms")
	b.ReportMetric(med(detach)-med(rt), "cli-ms")
}

// BenchmarkIdle: a fresh dev agent, idle: its RSS and its CPU over 60 s
// (-benchtime 1x; DUCC_BENCH_IDLE=10s shortens the window).
func BenchmarkIdle(b *testing.B) {
	window := time.Minute
	if s := os.Getenv("DUCC_BENCH_IDLE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("DUCC_BENCH_IDLE: %v", err)
		}
		window = d
	}
	c := startCluster(b)
	pid := c.cmd.Process.Pid
	time.Sleep(5 * time.Second) // past the start
	var cpu, wall time.Duration
	var rss int64
	b.ResetTimer()
	for range b.N {
		s0, c0 := cpuTicks(b, pid)
		t0 := time.Now()
		time.Sleep(window)
		wall += time.Since(t0)
		s1, c1 := cpuTicks(b, pid)
		cpu += time.Duration(s1-s0+c1-c0) * clockTick
		rss = rssKiB(b, pid)
	}
	b.StopTimer()
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%-core")
	b.ReportMetric(float64(rss)/1024, "RSS-MiB")
	b.ReportMetric(0, "ns/op")
}
