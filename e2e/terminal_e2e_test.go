package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// termCols and termRows are the terminal the CLI is run in: the smallest
// usual one.
const termCols, termRows = 80, 24

// ptyRun runs the CLI in a pseudo-terminal of termCols × termRows against
// sock and returns what it printed there (stdout and stderr). With until,
// it stops the command (SIGINT) as soon as the output satisfies it. It
// gives up after timeout.
func ptyRun(t *testing.T, sock string, until func(string) bool, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(duccBin, args...)
	cmd.Env = append(os.Environ(), "DUCC_SOCKET="+sock, "TERM=xterm")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: termCols, Rows: termRows})
	if err != nil {
		t.Fatalf("start %v in a pty: %v", args, err)
	}
	defer f.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	read := make(chan struct{})
	go func() { // owned here: it ends when the pty closes (EIO once the command exits)
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	text := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	deadline := time.After(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var werr error
wait:
	for {
		select {
		case werr = <-exited:
			break wait
		case <-tick.C:
			if until != nil && until(text()) {
				_ = cmd.Process.Signal(syscall.SIGINT)
				werr = <-exited
				break wait
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("ducc %s: no end within %s; it printed:\n%s", strings.Join(args, " "), timeout, text())
		}
	}
	select {
	case <-read:
	case <-time.After(5 * time.Second): // the output is all there once the command exited
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	}
	return text(), code
}

var ansiCSI = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// checkFits fails when a line the terminal shows is wider than it: the
// line would wrap. Lines end at "\n" and are redrawn from "\r".
// failedStop matches what ducc show prints when it calls a process's end
// by SIGTERM a failure: "exit 143" in the process table, "Exit code: 143",
// "exited with code 143" in a reason, or the signal's name. A bare 143 is
// no sign: it may be the start of a pid.
var failedStop = regexp.MustCompile(`exit 143\b|Exit code:\s+143\b|code 143\b|SIGTERM`)

// stopShownAsFailure reports whether show text calls ducc's own stop of a
// process a failure.
func stopShownAsFailure(text string) bool { return failedStop.MatchString(text) }

func checkFits(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.FieldsFunc(ansiCSI.ReplaceAllString(out, ""), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if n := utf8.RuneCountInString(l); n > termCols {
			t.Errorf("%s: a line of %d columns wraps on a %d-column terminal: %q\nall of it:\n%s", what, n, termCols, l, out)
		}
	}
}

// TestTerminalFits runs `ducc jobs`, `ducc show`, `ducc submit --wait` and
// `ducc reserve --wait` in an 80×24 terminal against a dev cluster and
// checks that nothing wraps, and that they say what a user needs: progress,
// the memory cap and its quantum, why a reservation waits.
func TestTerminalFits(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root for cgroups")
	}
	c := startCluster(t)
	sock := c.sock

	// A job that runs a while on two processes, asking less than a share.
	out, errs, code := c.ducc("submit", "--worker-protocol", "exec", "--input-file", writeItems(t, c.dir, "60"),
		"--process-memory-size", "256M", "--process-deployments-max", "2", "--description", "a job with a description long enough to be cut",
		"--", "sh", "-c", "sleep 0.3; echo {}")
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := strings.Fields(out)[1]
	for deadline := time.Now().Add(time.Minute); ; {
		w := c.show(id)
		if w.Job != nil && w.Job.Done >= 2 && w.Job.Processes > 0 {
			break
		}
		if w.Ended || time.Now().After(deadline) {
			t.Fatalf("job %s did not get going: %+v", id, w)
		}
		time.Sleep(100 * time.Millisecond)
	}

	jobs, code := ptyRun(t, sock, nil, 30*time.Second, "jobs", "-o", "id,user,kind,class,state,done,total,err,rate,time,nodelist,description")
	t.Logf("ducc jobs:\n%s", jobs)
	checkFits(t, "ducc jobs", jobs)
	flat := strings.Join(strings.Fields(jobs), " ")
	if code != 0 || !strings.Contains(flat, "DONE TOTAL ERR RATE") || !strings.Contains(flat, " 60 ") || !strings.Contains(jobs, "/s") {
		t.Errorf("ducc jobs: exit %d, no progress columns, total or rate:\n%s", code, jobs)
	}
	if strings.Contains(jobs, "fair share") {
		t.Errorf("ducc jobs says fair share prose for running work:\n%s", jobs)
	}

	show, code := ptyRun(t, sock, nil, 30*time.Second, "show", id)
	t.Logf("ducc show %s:\n%s", id, show)
	checkFits(t, "ducc show", show)
	flat = strings.Join(strings.Fields(show), " ")
	for _, s := range []string{"Items:", "of 60 done", "Rate:", "256 MiB per process (held as 1 share of 1 GiB)", "Nodes: n1", "Processes:"} {
		if code != 0 || !strings.Contains(flat, s) {
			t.Errorf("ducc show %s (exit %d) lacks %q:\n%s", id, code, s, show)
		}
	}
	if strings.Contains(show, "EXIT") {
		t.Errorf("ducc show has an exit column for running processes:\n%s", show)
	}

	// The progress of a job followed to its end.
	prog, code := ptyRun(t, sock, nil, 2*time.Minute, "submit", "--worker-protocol", "exec", "--input-file", writeItems(t, c.dir, "8"),
		"--process-memory-size", "256M", "--process-deployments-max", "1", "--wait", "--", "sh", "-c", "sleep 0.4; echo {}")
	t.Logf("ducc submit --wait:\n%q", prog)
	checkFits(t, "ducc submit --wait", prog)
	if code != 0 {
		t.Errorf("submit --wait: exit %d:\n%s", code, prog)
	}
	// Its processes, stopped by ducc at the job's end, did not fail.
	if m := regexp.MustCompile(`Job (\d+) submitted`).FindStringSubmatch(prog); m == nil {
		t.Errorf("submit --wait printed no job id:\n%s", prog)
	} else {
		for deadline := time.Now().Add(time.Minute); ; {
			text, _, _ := c.ducc("show", m[1])
			if !strings.Contains(text, "Running") && !strings.Contains(text, "Stopping") && !strings.Contains(text, "Initializing") {
				if stopShownAsFailure(text) ||
					(strings.Contains(text, "Exited") && !strings.Contains(text, "stopped: job ended") && !strings.Contains(text, "released")) {
					t.Errorf("ducc show of a job that ended well does not say its processes were stopped at its end:\n%s", text)
				}
				t.Logf("ducc show %s, ended:\n%s", m[1], text)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the processes of job %s did not end:\n%s", m[1], text)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if _, _, code := c.ducc("cancel", id); code != 0 {
		t.Errorf("cancel %s: exit %d", id, code)
	}
	waitEnded(t, c, id, time.Minute)

	// Once ended, the job's processes were stopped by ducc, which is no failure.
	for deadline := time.Now().Add(time.Minute); ; {
		text, _, _ := c.ducc("show", id)
		if !strings.Contains(text, "Running") && !strings.Contains(text, "Stopping") {
			if stopShownAsFailure(text) {
				t.Errorf("ducc show of a canceled job calls ducc's stop a failure:\n%s", text)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the processes of job %s did not end:\n%s", id, text)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// An impossible reservation is refused at once.
	res, code := ptyRun(t, sock, nil, 30*time.Second, "reserve", "--memory", "4G", "--wait")
	checkFits(t, "ducc reserve (refused)", res)
	if code != 2 || !strings.Contains(res, "no node has exactly 4 GiB") {
		t.Errorf("reserve of a size no node has: exit %d:\n%s", code, res)
	}

	// A possible one that must wait says why while it waits.
	out, errs, code = c.ducc("run", "--memory", "1G", "--detach", "--", "sleep", "600")
	if code != 0 {
		t.Fatalf("run: exit %d: %s %s", code, out, errs)
	}
	runID := regexp.MustCompile(`\d+`).FindString(out)
	c.waitRunning(runID)
	waiting := regexp.MustCompile(`Reservation (\d+) waiting \(Resources\):`)
	res, _ = ptyRun(t, sock, func(s string) bool { return waiting.MatchString(s) }, time.Minute, "reserve", "--memory", "16G", "--wait")
	t.Logf("ducc reserve --wait:\n%s", res)
	checkFits(t, "ducc reserve --wait", res)
	m := waiting.FindStringSubmatch(res)
	if m == nil || !strings.Contains(strings.Join(strings.Fields(res), " "), "cannot be evicted") {
		t.Fatalf("reserve --wait did not say why it waits:\n%s", res)
	}
	resShow, code := ptyRun(t, sock, nil, 30*time.Second, "show", m[1])
	checkFits(t, "ducc show of a reservation", resShow)
	if code != 0 || strings.Contains(resShow, "Command:") || !strings.Contains(resShow, "(Resources)") {
		t.Errorf("ducc show of a waiting reservation: exit %d:\n%s", code, resShow)
	}
	for _, x := range []string{m[1], runID} {
		if _, errs, code := c.ducc("cancel", x); code != 0 {
			t.Errorf("cancel %s: exit %d %s", x, code, errs)
		}
	}
}
