package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// fakeAgent serves the local API on a Unix socket with handlers per method.
type fakeAgent struct {
	sock string
	mu   sync.Mutex
	h    map[string]func(body []byte) (any, error)
}

// apiErr makes a fake agent answer with an API error.
type apiErr struct {
	code int
	msg  string
}

func (e *apiErr) Error() string { return e.msg }

func newFakeAgent(t *testing.T) *fakeAgent {
	t.Helper()
	dir, err := os.MkdirTemp("", "dk") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fa := &fakeAgent{sock: filepath.Join(dir, "s"), h: map[string]func([]byte) (any, error){}}
	ln, err := net.Listen("unix", fa.sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/{method}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fa.mu.Lock()
		h := fa.h[r.PathValue("method")]
		fa.mu.Unlock()
		if h == nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(wire.APIError{Error: "unknown API method " + r.PathValue("method"), Code: 2})
			return
		}
		resp, err := h(body)
		if err != nil {
			code := 1
			if ae, ok := err.(*apiErr); ok {
				code = ae.code
			}
			w.WriteHeader(http.StatusInternalServerError)
			json.NewEncoder(w).Encode(wire.APIError{Error: err.Error(), Code: code})
			return
		}
		json.NewEncoder(w).Encode(resp)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return fa
}

func (fa *fakeAgent) handle(method string, h func(body []byte) (any, error)) {
	fa.mu.Lock()
	fa.h[method] = h
	fa.mu.Unlock()
}

func (fa *fakeAgent) client() *client { return newClient(&globals{socket: fa.sock}) }

// jobServer records a chunked submission the way the head would see it.
type jobServer struct {
	mu       sync.Mutex
	spec     wire.JobSpec
	calls    []string // "submit:N:more" / "items:N:last"
	count    int
	sum      int // checks order: sum of index*len(item)
	maxChunk int
	closed   bool
	canceled string
	failAt   int // fail the n-th items call (1-based); 0 = never
}

func (js *jobServer) install(fa *fakeAgent) {
	fa.handle(wire.MethodSubmit, func(b []byte) (any, error) {
		var r wire.SubmitJobRequest
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		js.mu.Lock()
		defer js.mu.Unlock()
		js.spec = r.Spec
		js.add(r.Items)
		js.calls = append(js.calls, fmt.Sprintf("submit:%d:%v", len(r.Items), r.More))
		js.closed = !r.More
		return wire.SubmitReply{ID: 17}, nil
	})
	fa.handle(wire.MethodItems, func(b []byte) (any, error) {
		var r wire.ItemsRequest
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		js.mu.Lock()
		defer js.mu.Unlock()
		if r.ID != 17 || js.closed {
			return nil, &apiErr{2, "job 17 takes no more items"}
		}
		js.calls = append(js.calls, fmt.Sprintf("items:%d:%v", len(r.Items), r.Last))
		if js.failAt > 0 && len(js.calls)-1 == js.failAt {
			return nil, &apiErr{1, "raft apply failed"}
		}
		js.add(r.Items)
		js.closed = r.Last
		return wire.Empty{}, nil
	})
	fa.handle(wire.MethodCancel, func(b []byte) (any, error) {
		var r wire.CancelRequest
		json.Unmarshal(b, &r)
		js.mu.Lock()
		js.canceled = r.Reason
		js.mu.Unlock()
		return wire.WorkInfo{ID: r.ID, State: "Completed", Completion: "CanceledByUser", Ended: true}, nil
	})
}

func (js *jobServer) add(items []string) {
	size := 0
	for _, it := range items {
		js.sum += js.count * len(it)
		js.count++
		size += jsonLen(it) + 1
	}
	js.maxChunk = max(js.maxChunk, size)
}

func TestSubmitChunksOneMillionItems(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 items")
	}
	fa := newFakeAgent(t)
	js := &jobServer{}
	js.install(fa)
	const n = 1_000_000
	// Generate the input as a stream: the CLI must not need it all at once.
	pr, pw := io.Pipe()
	want := 0
	go func() {
		var buf bytes.Buffer
		for i := 0; i < n; i++ {
			it := fmt.Sprintf("item-%d", i)
			want += i * len(it)
			buf.WriteString(it)
			buf.WriteByte('\n')
			if buf.Len() > 64<<10 {
				pw.Write(buf.Bytes())
				buf.Reset()
			}
		}
		pw.Write(buf.Bytes())
		pw.Close()
	}()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	id, count, err := submitJob(context.Background(), fa.client(), wire.JobSpec{Executable: "true"}, newLineSource(pr, "stdin"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if id != 17 || count != n || js.count != n || js.sum != want || !js.closed {
		t.Fatalf("id %d, %d items sent, server got %d (order sum %d, want %d), closed %v", id, count, js.count, js.sum, want, js.closed)
	}
	if len(js.calls) != n/chunkItems || js.calls[0] != "submit:50000:true" || js.calls[len(js.calls)-1] != "items:50000:true" {
		t.Fatalf("chunks: %v", js.calls)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("%d chunks, heap in use %d MiB → %d MiB", len(js.calls), before.HeapInuse>>20, after.HeapInuse>>20)
}

func TestSubmitChunkBoundaries(t *testing.T) {
	big := strings.Repeat("x", 1<<20-10)
	tests := []struct {
		name  string
		items []string
		calls []string
	}{
		{"one item", []string{"a"}, []string{"submit:1:false"}},
		{"empty lines are skipped", []string{"", "a", "", "b"}, []string{"submit:2:false"}},
		{"bytes limit", []string{big, big, big, big, big}, []string{"submit:4:true", "items:1:true"}},
		{"html escapes count", []string{strings.Repeat("<", 1<<20), strings.Repeat("<", 1<<20)}, []string{"submit:1:true", "items:1:true"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fa := newFakeAgent(t)
			js := &jobServer{}
			js.install(fa)
			_, _, err := submitJob(context.Background(), fa.client(), wire.JobSpec{Executable: "true"}, &sliceSource{items: tc.items}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(js.calls) != fmt.Sprint(tc.calls) {
				t.Fatalf("calls %v, want %v", js.calls, tc.calls)
			}
			if js.maxChunk > chunkBytes+(1<<20)*6 {
				t.Fatalf("a chunk of %d bytes", js.maxChunk)
			}
		})
	}
}

func TestSubmitFailureCancelsTheJob(t *testing.T) {
	fa := newFakeAgent(t)
	js := &jobServer{failAt: 1}
	js.install(fa)
	items := make([]string, 120_000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	var errOut bytes.Buffer
	_, _, err := submitJob(context.Background(), fa.client(), wire.JobSpec{Executable: "true"}, &sliceSource{items: items}, &errOut)
	if err == nil || !strings.Contains(err.Error(), "raft apply failed") {
		t.Fatalf("want the items error, got %v", err)
	}
	if !strings.Contains(js.canceled, "submission incomplete") || !strings.Contains(errOut.String(), "job 17 canceled") {
		t.Fatalf("the half-submitted job was not canceled: reason %q, stderr %q", js.canceled, errOut.String())
	}
}

func TestSubmitLineSource(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		err      string
	}{
		{"crlf and no final newline", "a\r\nb\n\nc", []string{"a", "b", "c"}, ""},
		{"long line", "ok\n" + strings.Repeat("y", maxItemBytes+1) + "\n", []string{"ok"}, "line 2 is longer than"},
		{"not utf-8", "ok\n\xff\xfe\n", []string{"ok"}, "line 2 is not UTF-8"},
		{"empty", "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := newLineSource(strings.NewReader(tc.in), "in")
			var got []string
			var err error
			for {
				var it string
				var ok bool
				if it, ok, err = src.next(); err != nil || !ok {
					break
				}
				got = append(got, it)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("items %q, want %q", got, tc.want)
			}
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// TestSubmitLineSourceLimit: the 1 MiB limit is on the item, whatever
// ends its line (an item of exactly 1 MiB was refused with a newline
// after it and accepted without one), as the head counts it
// (spec.CheckItems).
func TestSubmitLineSourceLimit(t *testing.T) {
	full := strings.Repeat("y", maxItemBytes)
	tests := []struct {
		name, in string
		want     int // length of the one item read; 0: refused
	}{
		{"1 MiB, newline", full + "\n", maxItemBytes},
		{"1 MiB, CRLF", full + "\r\n", maxItemBytes},
		{"1 MiB, at the end", full, maxItemBytes},
		{"1 MiB and a byte, newline", full + "y\n", 0},
		{"1 MiB and a byte, at the end", full + "y", 0},
		{"1 MiB and a CR inside", full + "\ry\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, ok, err := newLineSource(strings.NewReader(tc.in), "in").next()
			switch {
			case tc.want == 0 && (err == nil || !strings.Contains(err.Error(), "line 1 is longer than 1048576 bytes")):
				t.Errorf("an item of %d bytes: ok %v, error %v; want it refused", len(strings.TrimRight(tc.in, "\r\n")), ok, err)
			case tc.want != 0 && (err != nil || !ok || len(it) != tc.want):
				t.Errorf("item of %d bytes, ok %v, error %v; want one of %d bytes", len(it), ok, err, tc.want)
			}
		})
	}
	if err := spec.CheckItems([]string{full}); err != nil {
		t.Errorf("the head refuses an item the CLI sends: %v", err)
	}
	if err := spec.CheckItems([]string{full + "y"}); err == nil {
		t.Error("the head accepts an item the CLI refuses")
	}
}

func TestSubmitJSONLen(t *testing.T) {
	for _, s := range []string{"", "abc", `a"b\c`, "tab\there\nnl\r", "<>&", "\x01\x1f", "é😀", "\u2028\u2029", "\xff"} {
		b, _ := json.Marshal(s)
		if got := jsonLen(s); got != len(b) && s != "\xff" {
			t.Errorf("jsonLen(%q) = %d, encoding/json gives %d", s, got, len(b))
		}
	}
}

// runSubmit runs `ducc submit` in process against a fake agent.
func runSubmit(t *testing.T, fa *fakeAgent, stdin string, args ...string) (string, string, error) {
	t.Helper()
	g := &globals{}
	root := &cobra.Command{Use: "ducc", SilenceErrors: true, SilenceUsage: true}
	root.PersistentFlags().BoolVar(&g.json, "json", false, "")
	root.PersistentFlags().StringVar(&g.socket, "socket", "", "")
	root.AddCommand(newSubmitCmd(g))
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"--socket", fa.sock, "submit"}, args...))
	err := root.Execute()
	return out.String(), errb.String(), err
}

func TestSubmitCommand(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "job.yaml")
	os.WriteFile(spec, []byte("process_executable: ./w.sh\nprocess_memory_size: 1G\nenvironment: [A=1]\ninput_items: [x, y]\n"), 0o644)
	itemsFile := filepath.Join(dir, "items.txt")
	os.WriteFile(itemsFile, []byte("1\n2\n3\n"), 0o644)
	cwd, _ := os.Getwd()
	tests := []struct {
		name  string
		stdin string
		args  []string
		out   string
		err   string
		count int
		check func(t *testing.T, sp wire.JobSpec)
	}{
		{name: "spec file with items", args: []string{spec}, out: "Job 17 submitted\n", count: 2,
			check: func(t *testing.T, sp wire.JobSpec) {
				if sp.Executable != filepath.Join(dir, "w.sh") || sp.Memory != 1<<30 || sp.WorkingDirectory != cwd {
					t.Errorf("spec %+v", sp)
				}
			}},
		{name: "flags override the file", args: []string{spec, "--process-memory-size", "256M", "--input-file", itemsFile, "--environment", "B=2 C=3", "--env", "A=9", "--scheduling-class", "low"}, out: "Job 17 submitted\n", count: 3,
			check: func(t *testing.T, sp wire.JobSpec) {
				if sp.Memory != 256<<20 || sp.Class != "low" || fmt.Sprint(sp.Environment) != "[A=9 B=2 C=3]" {
					t.Errorf("spec %+v", sp)
				}
			}},
		{name: "command after -- and items on stdin", stdin: "a\nb\nc\nd\n", args: []string{"--worker-protocol", "exec", "--", "factor", "{}"}, out: "Job 17 submitted\n", count: 4,
			check: func(t *testing.T, sp wire.JobSpec) {
				if sp.Executable != "factor" || fmt.Sprint(sp.Args) != "[{}]" || sp.WorkerProtocol != "exec" {
					t.Errorf("spec %+v", sp)
				}
			}},
		{name: "json", args: []string{"--json", spec}, out: "{\n  \"id\": 17\n}\n", count: 2},
		{name: "no items", args: []string{"--", "true"}, err: "no work items"},
		// Items piped in while the spec gives its own: refused, not ignored.
		{name: "spec items and stdin", stdin: "a\nb\nc\n", args: []string{spec},
			err: "standard input has data, but " + spec + " gives 2 items in input_items: a job has one item source; to use standard input, give --input-file -"},
		{name: "spec items replaced by stdin", stdin: "a\nb\nc\n", args: []string{spec, "--input-file", "-"}, out: "Job 17 submitted\n", count: 3},
		{name: "items file named and stdin", stdin: "a\nb\nc\n", args: []string{spec, "--input-file", itemsFile}, out: "Job 17 submitted\n", count: 3},
		{name: "bad flag value", args: []string{spec, "--process-pipeline-count", "-2"}, err: "--process-pipeline-count: must be at least 1"},
		{name: "two spec files", args: []string{spec, spec}, err: "at most one spec file"},
		{name: "command twice", args: []string{"--process-executable", "x", "--", "y"}, err: "not both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fa := newFakeAgent(t)
			js := &jobServer{}
			js.install(fa)
			out, _, err := runSubmit(t, fa, tc.stdin, tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if ee, ok := err.(*exitError); !ok || ee.code != exitUsage {
					t.Fatalf("want a usage error (exit 2), got %#v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.out {
				t.Errorf("stdout %q, want %q", out, tc.out)
			}
			if js.count != tc.count {
				t.Errorf("server got %d items, want %d", js.count, tc.count)
			}
			if tc.check != nil {
				tc.check(t, js.spec)
			}
		})
	}
}

// peekStdin tells data on standard input from none without blocking on an
// open pipe: the check of 'ducc submit SPEC' with items in the spec.
func TestPeekStdin(t *testing.T) {
	pipe := func(t *testing.T, data string, closeW bool) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		if data != "" {
			w.WriteString(data)
		}
		if closeW {
			w.Close()
		}
		return r
	}
	file := func(t *testing.T, data string) *os.File {
		p := filepath.Join(t.TempDir(), "in")
		os.WriteFile(p, []byte(data), 0o644)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name string
		in   func(t *testing.T) io.Reader
		want stdinState
	}{
		{"pipe with data", func(t *testing.T) io.Reader { return pipe(t, "1\n2\n", false) }, stdinData},
		{"pipe with data, closed", func(t *testing.T) io.Reader { return pipe(t, "1\n", true) }, stdinData},
		{"open pipe, nothing yet", func(t *testing.T) io.Reader { return pipe(t, "", false) }, stdinPending},
		{"closed empty pipe", func(t *testing.T) io.Reader { return pipe(t, "", true) }, stdinNone},
		{"/dev/null", func(*testing.T) io.Reader { return devNull }, stdinNone},
		{"file", func(t *testing.T) io.Reader { return file(t, "x\n") }, stdinData},
		{"empty file", func(t *testing.T) io.Reader { return file(t, "") }, stdinNone},
		{"reader with data", func(*testing.T) io.Reader { return strings.NewReader("x") }, stdinData},
		{"empty reader", func(*testing.T) io.Reader { return strings.NewReader("") }, stdinNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			if got := peekStdin(in, 50*time.Millisecond); got != tc.want {
				t.Errorf("peekStdin = %d, want %d", got, tc.want)
			}
			// Nothing was read: standard input may be a script's.
			if f, ok := in.(*os.File); ok && tc.want == stdinData {
				b := make([]byte, 2)
				if n, _ := io.ReadFull(f, b); n != 2 || (string(b) != "1\n" && string(b) != "x\n") {
					t.Errorf("after peekStdin the input starts with %q", b[:n])
				}
			}
		})
	}
}
