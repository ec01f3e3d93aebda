package proc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/ducc-project/ducc/wire/stream"
)

// Exec worker: the job process for `worker_protocol: exec` (docs/jobs.md).
//
// It is started as `ducc exec-worker -- CMD ARGS...` and speaks the stream
// protocol on its stdin/stdout: it prints {"ready": true} at once, then for
// each line {"id": ..., "item": "..."} runs CMD once, with every "{}" in
// ARGS replaced by the item and DUCC_WORK_ITEM (and DUCC_WORK_ITEM_ID) in
// its environment, up to $DUCC_PIPELINES (default 4) at a time, and
// answers {"id": ..., "ok": true, "result": "<stdout, trimmed>"} or
// {"id": ..., "error": "exit status 3: <last stderr lines>"}. The
// command's stderr goes to the worker's stderr (the job process log). When
// stdin closes it finishes what it holds and exits 0.

const (
	execDefaultPipelines = 4
	execMaxResult        = 64 << 10 // bytes of the JSON-encoded result
	execStderrTail       = 2 << 10  // bytes of stderr kept for the error message
	execStderrLines      = 5
	execMaxLine          = 64 << 20
)

// RunExecWorker is the entry point of `ducc exec-worker -- CMD ARGS...`;
// it returns the exit code for os.Exit.
func RunExecWorker(args []string) int {
	return runExecWorker(args, os.Stdin, os.Stdout, os.Stderr, os.Environ())
}

type execWorker struct {
	path    string   // resolved once
	args    []string // argv[1:] with {} placeholders
	hasItem []bool   // args[i] contains {}
	env     []string
	stderr  io.Writer
	errMu   sync.Mutex // whole lines to stderr
	out     chan []byte
}

func runExecWorker(args []string, stdin io.Reader, stdout, stderr io.Writer, env []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: ducc exec-worker -- CMD [ARGS...] (started by the ducc agent for worker_protocol: exec; {} in ARGS is replaced by the item)")
		return 2
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		// Fail before {"ready": true}: the job sees an initialization
		// failure whose log says why.
		fmt.Fprintf(stderr, "ducc exec-worker: cannot run %q: %v (PATH=%s)\n", args[0], errors.Unwrap(err), lookupEnv(env, "PATH"))
		return 1
	}
	pipes := execDefaultPipelines
	if s := lookupEnv(env, "DUCC_PIPELINES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "ducc exec-worker: DUCC_PIPELINES=%q is not a positive number; using %d\n", s, execDefaultPipelines)
		} else {
			pipes = n
		}
	}
	w := &execWorker{path: path, args: args[1:], env: env, stderr: stderr, out: make(chan []byte, 2*pipes)}
	for _, a := range w.args {
		w.hasItem = append(w.hasItem, strings.Contains(a, "{}"))
	}

	// A stop signal kills the running commands and ends the worker.
	var (
		runMu   sync.Mutex
		running = map[*exec.Cmd]bool{}
	)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	stopSig := make(chan struct{})
	defer func() { signal.Stop(sig); close(stopSig) }()
	go func() {
		var s os.Signal
		select {
		case s = <-sig:
		case <-stopSig:
			return
		}
		runMu.Lock()
		for c := range running {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		runMu.Unlock()
		fmt.Fprintf(stderr, "ducc exec-worker: %v: stopped\n", s)
		os.Exit(128 + int(s.(syscall.Signal)))
	}()

	writerDone := make(chan error, 1)
	go func() { writerDone <- w.writeLoop(stdout) }()
	w.out <- []byte(stream.ReadyLine + "\n")

	sem := make(chan struct{}, pipes)
	var wg sync.WaitGroup
	rd := bufio.NewReaderSize(stdin, 64<<10)
	lineNo := 0
	for {
		line, err := readFullLine(rd)
		if len(line) > 0 {
			lineNo++
			var req stream.ItemLine
			if jerr := json.Unmarshal(line, &req); jerr != nil || len(req.ID) == 0 {
				w.logf("ducc exec-worker: input line %d is not {\"id\": ..., \"item\": ...}: %.200q", lineNo, line)
			} else if req.Item == nil {
				w.reply(execError(req.ID, "no \"item\" in the request"))
			} else {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					w.reply(w.runItem(req.ID, *req.Item, func(c *exec.Cmd, add bool) {
						runMu.Lock()
						if add {
							running[c] = true
						} else {
							delete(running, c)
						}
						runMu.Unlock()
					}))
				}()
			}
		}
		if err != nil {
			if err != io.EOF {
				w.logf("ducc exec-worker: reading stdin: %v", err)
			}
			break
		}
	}
	wg.Wait()
	close(w.out)
	if err := <-writerDone; err != nil {
		w.logf("ducc exec-worker: writing stdout: %v", err)
		return 1
	}
	return 0
}

// readFullLine reads one line (without its end), up to execMaxLine.
func readFullLine(rd *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		frag, err := rd.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long) < execMaxLine {
				long = append(long, frag...)
			}
			continue
		}
		line := frag
		if long != nil {
			line = append(long, frag...)
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// writeLoop writes replies, flushing whenever no more are queued, so the
// agent sees each answer at once but bursts cost one write.
func (w *execWorker) writeLoop(stdout io.Writer) error {
	bw := bufio.NewWriterSize(stdout, 64<<10)
	var werr error
	for b := range w.out {
		if werr != nil {
			continue // keep draining so no item goroutine blocks
		}
		if _, werr = bw.Write(b); werr != nil {
			continue
		}
		if len(w.out) == 0 {
			werr = bw.Flush()
		}
	}
	if werr == nil {
		werr = bw.Flush()
	}
	return werr
}

func (w *execWorker) reply(r stream.WorkerLine) {
	b, err := json.Marshal(r)
	if err != nil { // cannot happen: strings and raw JSON from the agent
		b, _ = json.Marshal(execError(r.ID, "cannot encode the result: "+err.Error()))
	}
	w.out <- append(b, '\n')
}

// execError is the answer of an item that failed.
func execError(id json.RawMessage, msg string) stream.WorkerLine {
	return stream.WorkerLine{ID: id, Error: &msg}
}

func (w *execWorker) logf(format string, args ...any) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	fmt.Fprintf(w.stderr, format+"\n", args...)
}

// runItem runs the command for one item.
func (w *execWorker) runItem(id json.RawMessage, item string, track func(*exec.Cmd, bool)) stream.WorkerLine {
	argv := make([]string, 1+len(w.args))
	argv[0] = w.path
	for i, a := range w.args {
		if w.hasItem[i] {
			a = strings.ReplaceAll(a, "{}", item)
		}
		argv[i+1] = a
	}
	env := make([]string, 0, len(w.env)+2)
	env = append(env, w.env...)
	env = append(env, "DUCC_WORK_ITEM="+item, "DUCC_WORK_ITEM_ID="+idText(id))
	out := &capWriter{max: execMaxResult}
	errw := &tailWriter{dst: w.stderr, mu: &w.errMu}
	cmd := &exec.Cmd{
		Path:   w.path,
		Args:   argv,
		Env:    env,
		Stdout: out,
		Stderr: errw,
		// Own process group so a stop kills what the command started;
		// die with the worker.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		return execError(id, fmt.Sprintf("cannot run %s: %v", w.path, err))
	}
	track(cmd, true)
	err := cmd.Wait()
	track(cmd, false)
	errw.flush()
	if err != nil {
		msg := err.Error()
		if tail := errw.tail(); tail != "" {
			msg += ": " + tail
		}
		return execError(id, msg)
	}
	res, _ := json.Marshal(resultString(out.buf.Bytes(), out.dropped))
	return stream.WorkerLine{ID: id, OK: true, Result: res}
}

// resultString trims the output and cuts it so that its JSON encoding
// fits in execMaxResult.
func resultString(b []byte, truncated bool) string {
	s := strings.TrimSpace(string(bytes.ToValidUTF8(b, []byte("\uFFFD"))))
	const note = " …[truncated]"
	for {
		enc, _ := json.Marshal(s)
		if len(enc) <= execMaxResult && !truncated {
			return s
		}
		if len(enc) <= execMaxResult-len(note)-2 {
			return s + note
		}
		// Cut in proportion to the overshoot, at a rune boundary.
		n := len(s) * (execMaxResult - len(note) - 8) / len(enc)
		if n >= len(s) {
			n = len(s) - 1
		}
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
		truncated = true
	}
}

func idText(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(id)
}

func lookupEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// capWriter keeps the first max bytes and counts the rest.
type capWriter struct {
	buf     bytes.Buffer
	max     int
	dropped bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
			c.dropped = true
		} else {
			c.buf.Write(p)
		}
	} else if len(p) > 0 {
		c.dropped = true
	}
	return len(p), nil
}

// tailWriter passes whole lines to dst (under mu, so lines of concurrent
// commands do not mix) and keeps the last few for the error message.
type tailWriter struct {
	dst     io.Writer
	mu      *sync.Mutex
	partial []byte
	last    []byte // ring of recent output, at most execStderrTail bytes
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.last = append(t.last, p...)
	if len(t.last) > 2*execStderrTail {
		t.last = append(t.last[:0], t.last[len(t.last)-execStderrTail:]...)
	}
	t.partial = append(t.partial, p...)
	if i := bytes.LastIndexByte(t.partial, '\n'); i >= 0 {
		t.mu.Lock()
		_, _ = t.dst.Write(t.partial[:i+1])
		t.mu.Unlock()
		t.partial = append(t.partial[:0], t.partial[i+1:]...)
	}
	if len(t.partial) > 64<<10 { // a very long line: pass it on as is
		t.flush()
	}
	return len(p), nil
}

func (t *tailWriter) flush() {
	if len(t.partial) == 0 {
		return
	}
	t.mu.Lock()
	_, _ = t.dst.Write(append(t.partial, '\n'))
	t.mu.Unlock()
	t.partial = t.partial[:0]
}

// tail is the last execStderrLines lines of stderr, joined with " | ".
func (t *tailWriter) tail() string {
	b := t.last
	if len(b) > execStderrTail {
		b = b[len(b)-execStderrTail:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(b, []byte("\uFFFD")))), "\n")
	if len(lines) > execStderrLines {
		lines = lines[len(lines)-execStderrLines:]
	}
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(slicesCompactEmpty(lines), " | ")
}

func slicesCompactEmpty(l []string) []string {
	out := l[:0]
	for _, s := range l {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
