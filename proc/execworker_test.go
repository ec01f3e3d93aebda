package proc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire/stream"
)

// runExec runs the exec worker on the given input lines and returns its
// stdout lines, stderr and exit code.
func runExec(t testing.TB, args []string, env []string, input ...string) ([]string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	in := strings.NewReader(strings.Join(input, "\n") + "\n")
	code := runExecWorker(args, in, &out, &errb, append([]string{"PATH=" + os.Getenv("PATH")}, env...))
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if out.Len() == 0 {
		lines = nil
	}
	return lines, errb.String(), code
}

// execAnswer is an answer the exec worker printed (a stream.WorkerLine),
// with its result read as the JSON string it must be.
type execAnswer struct {
	OK     bool
	Result *string
	Error  string
}

func byID(t testing.TB, lines []string) map[string]execAnswer {
	t.Helper()
	m := map[string]execAnswer{}
	for i, l := range lines {
		var wl stream.WorkerLine
		if err := json.Unmarshal([]byte(l), &wl); err != nil {
			t.Fatalf("line %d %q is not JSON: %v", i, l, err)
		}
		if i == 0 {
			if wl.Ready == nil || !*wl.Ready {
				t.Fatalf("first line %q is not {\"ready\": true}", l)
			}
			continue
		}
		var id any
		if err := json.Unmarshal(wl.ID, &id); err != nil {
			t.Fatalf("line %d %q has no id: %v", i, l, err)
		}
		a := execAnswer{OK: wl.OK}
		if wl.Result != nil {
			a.Result = new(string)
			if err := json.Unmarshal(wl.Result, a.Result); err != nil {
				t.Fatalf("line %d %q: the result is not a string: %v", i, l, err)
			}
		}
		if wl.Error != nil {
			a.Error = *wl.Error
		}
		m[fmt.Sprint(id)] = a
	}
	return m
}

func TestExecWorkerItems(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     []string
		input   []string
		want    map[string]string // id → result, or "ERR:substring"
		wantErr string            // substring of stderr
	}{
		{
			name:  "placeholder in args",
			args:  []string{"--", "echo", "item={}", "{}{}"},
			input: []string{`{"id": "a", "item": "x"}`, `{"id": "b", "item": "hello world"}`},
			want:  map[string]string{"a": "item=x xx", "b": "item=hello world hello worldhello world"},
		},
		{
			name:  "item in the environment, numeric id",
			args:  []string{"sh", "-c", `printf '%s|%s\n' "$DUCC_WORK_ITEM" "$DUCC_WORK_ITEM_ID"`},
			input: []string{`{"id": 7, "item": "it's \"quoted\""}`},
			want:  map[string]string{"7": `it's "quoted"|7`},
		},
		{
			name:    "failing item carries the exit status and the last stderr lines",
			args:    []string{"sh", "-c", `echo one >&2; echo two >&2; [ "$DUCC_WORK_ITEM" = bad ] && exit 3; echo fine`},
			input:   []string{`{"id": "1", "item": "good"}`, `{"id": "2", "item": "bad"}`},
			want:    map[string]string{"1": "fine", "2": "ERR:exit status 3: one | two"},
			wantErr: "one\ntwo\n",
		},
		{
			name:  "killed by a signal",
			args:  []string{"sh", "-c", `kill -9 $$`},
			input: []string{`{"id": "k", "item": "x"}`},
			want:  map[string]string{"k": "ERR:signal: killed"},
		},
		{
			name:    "bad lines are logged and skipped, missing item is an error",
			args:    []string{"echo", "{}"},
			input:   []string{`not json`, `{"id": "m"}`, `{"id": "ok", "item": "y"}`},
			want:    map[string]string{"m": "ERR:no \"item\"", "ok": "y"},
			wantErr: "input line 1 is not",
		},
		{
			name:  "stdout is trimmed",
			args:  []string{"printf", "  \\n spaced out \\n\\n"},
			input: []string{`{"id": "s", "item": ""}`},
			want:  map[string]string{"s": "spaced out"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines, stderr, code := runExec(t, tc.args, tc.env, tc.input...)
			if code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
			}
			got := byID(t, lines)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d answers, want %d: %q", len(got), len(tc.want), lines)
			}
			for id, want := range tc.want {
				a, ok := got[id]
				if !ok {
					t.Fatalf("no answer for id %s: %q", id, lines)
				}
				if e, isErr := strings.CutPrefix(want, "ERR:"); isErr {
					if a.OK || !strings.Contains(a.Error, e) {
						t.Errorf("id %s: got ok=%v error %q, want an error containing %q", id, a.OK, a.Error, e)
					}
					continue
				}
				if !a.OK || a.Result == nil || *a.Result != want {
					t.Errorf("id %s: got ok=%v result %v error %q, want %q", id, a.OK, a.Result, a.Error, want)
				}
			}
			if !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.wantErr)
			}
		})
	}
}

func TestExecWorkerLargeOutputIsCut(t *testing.T) {
	lines, stderr, code := runExec(t, []string{"head", "-c", "200000", "/dev/zero"}, nil, `{"id": "big", "item": ""}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(lines) != 2 {
		t.Fatalf("want ready + 1 answer, got %d lines", len(lines))
	}
	var raw stream.WorkerLine
	if err := json.Unmarshal([]byte(lines[1]), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Result) > execMaxResult {
		t.Fatalf("encoded result is %d bytes, more than %d", len(raw.Result), execMaxResult)
	}
	if !strings.HasSuffix(string(raw.Result), `[truncated]"`) {
		t.Fatalf("a cut result must say so, ends with %q", raw.Result[len(raw.Result)-20:])
	}
}

func TestExecWorkerMissingCommandFailsInit(t *testing.T) {
	lines, stderr, code := runExec(t, []string{"--", "no-such-command-ducc"}, nil, `{"id": "1", "item": "x"}`)
	if code == 0 || len(lines) != 0 {
		t.Fatalf("want a failure before ready, got code %d, stdout %q", code, lines)
	}
	if !strings.Contains(stderr, `cannot run "no-such-command-ducc"`) {
		t.Fatalf("stderr does not say what failed: %q", stderr)
	}
	if _, _, code := runExec(t, nil, nil); code != 2 {
		t.Fatalf("no command: want usage exit 2, got %d", code)
	}
}

// TestExecWorkerPipelines checks that at most $DUCC_PIPELINES items run at
// once and that they do run in parallel.
func TestExecWorkerPipelines(t *testing.T) {
	dir := t.TempDir()
	script := fmt.Sprintf(`mkdir %[1]s/$DUCC_WORK_ITEM; n=$(ls %[1]s | wc -l); echo $n; sleep 0.2; rmdir %[1]s/$DUCC_WORK_ITEM`, dir)
	var input []string
	for i := 0; i < 8; i++ {
		input = append(input, fmt.Sprintf(`{"id": "%d", "item": "i%d"}`, i, i))
	}
	lines, stderr, code := runExec(t, []string{"sh", "-c", script}, []string{"DUCC_PIPELINES=2"}, input...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := byID(t, lines)
	if len(got) != 8 {
		t.Fatalf("want 8 answers, got %q", lines)
	}
	parallel := false
	for id, a := range got {
		if !a.OK || a.Result == nil || (*a.Result != "1" && *a.Result != "2") {
			t.Errorf("item %s saw %v running at once, want 1 or 2 (error %q)", id, a.Result, a.Error)
		}
		parallel = parallel || (a.Result != nil && *a.Result == "2")
	}
	if !parallel {
		t.Errorf("no item ever ran alongside another with DUCC_PIPELINES=2")
	}
}

// TestExecWorkerStreams checks that answers come while stdin stays open
// (the agent waits for them before sending more).
func TestExecWorkerStreams(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runExecWorker([]string{"echo", "{}"}, inR, outW, io.Discard, []string{"PATH=" + os.Getenv("PATH")})
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"ready": true`) {
		t.Fatalf("no ready line: %q", sc.Text())
	}
	for i := 0; i < 3; i++ {
		fmt.Fprintf(inW, `{"id": "%d", "item": "n%d"}`+"\n", i, i)
		if !sc.Scan() {
			t.Fatal("no answer while stdin is open")
		}
		if want := fmt.Sprintf(`{"id":"%d","ok":true,"result":"n%d"}`, i, i); sc.Text() != want {
			t.Fatalf("got %s, want %s", sc.Text(), want)
		}
	}
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// BenchmarkExecWorker measures items/s through the exec worker with a
// trivial command (/bin/true), 4 pipelines.
func BenchmarkExecWorker(b *testing.B) {
	tr := "/bin/true"
	if _, err := os.Stat(tr); err != nil {
		tr = "true"
	}
	inR, inW := io.Pipe()
	var answers int
	var mu sync.Mutex
	counter := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		answers += bytes.Count(p, []byte("\n"))
		mu.Unlock()
		return len(p), nil
	})
	b.ResetTimer()
	start := time.Now()
	done := make(chan int, 1)
	go func() {
		done <- runExecWorker([]string{tr, "{}"}, inR, counter, io.Discard, []string{"PATH=" + os.Getenv("PATH"), "DUCC_PIPELINES=4"})
	}()
	bw := bufio.NewWriter(inW)
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(bw, `{"id": "%d", "item": "item-%d"}`+"\n", i, i)
	}
	bw.Flush()
	inW.Close()
	if code := <-done; code != 0 {
		b.Fatalf("exit %d", code)
	}
	b.StopTimer()
	if answers != b.N+1 {
		b.Fatalf("got %d lines, want %d", answers, b.N+1)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "items/s")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
