package feed

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestReadWorkerLog: lines that are not protocol go to the file openLog
// gives, opened once; when it refuses (the log was swapped for a symlink),
// they are dropped with one warning and the protocol lines still arrive.
func TestReadWorkerLog(t *testing.T) {
	const output = "loading the model\n{\"ready\": true}\nnot protocol\n{\"id\": \"3\", \"ok\": true, \"result\": 6}\n{\"other\": 1}\n"
	cases := []struct {
		name    string
		refuse  bool
		wantLog string
	}{
		{"log opened", false, "loading the model\nnot protocol\n{\"other\": 1}\n"},
		{"log refused", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath := filepath.Join(dir, "x.log")
			opens := 0
			openLog := func() (*os.File, error) {
				opens++
				if c.refuse {
					return nil, errors.New("refusing the log: too many levels of symbolic links")
				}
				return os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteString(output); err != nil {
				t.Fatal(err)
			}
			w.Close()
			var agentLog bytes.Buffer
			var events []feedEvent
			readWorker(slog.New(slog.NewTextHandler(&agentLog, nil)), r, openLog, func(evs []feedEvent) bool {
				events = append(events, evs...)
				return true
			})
			r.Close()

			var ready, outcomes int
			for _, ev := range events {
				if ev.ready {
					ready++
				}
				if ev.outcome != nil && ev.outcome.Index == 3 && ev.outcome.OK && ev.outcome.Result == "6" {
					outcomes++
				}
			}
			if ready != 1 || outcomes != 1 {
				t.Errorf("events: %d ready, %d outcomes", ready, outcomes)
			}
			if opens != 1 {
				t.Errorf("openLog called %d times, want 1", opens)
			}
			b, _ := os.ReadFile(logPath)
			if string(b) != c.wantLog {
				t.Errorf("log %q, want %q", b, c.wantLog)
			}
			if warned := strings.Count(agentLog.String(), "level=WARN"); warned != map[bool]int{true: 1, false: 0}[c.refuse] {
				t.Errorf("%d warnings in the agent's log:\n%s", warned, agentLog.String())
			}
		})
	}
}

// TestReadWorkerOverlong: a line longer than maxLine ends the reading with
// an overlong event after the events before it.
func TestReadWorkerOverlong(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Close()
		w.WriteString("{\"ready\": true}\n{\"id\": \"0\", \"ok\": true, \"result\": 1}\n")
		w.WriteString(strings.Repeat("x", maxLine+1) + "\n{\"id\": \"1\", \"ok\": true}\n")
	}()
	var events []feedEvent
	readWorker(slog.New(slog.DiscardHandler), r, func() (*os.File, error) { return nil, errors.New("no log") }, func(evs []feedEvent) bool {
		events = append(events, evs...)
		return true
	})
	r.Close()
	var got []string
	for _, ev := range events {
		switch {
		case ev.ready:
			got = append(got, "ready")
		case ev.outcome != nil:
			got = append(got, "outcome")
		case ev.overlong:
			got = append(got, "overlong")
		}
	}
	if strings.Join(got, " ") != "ready outcome overlong" {
		t.Errorf("events %v, want ready, one outcome, overlong", got)
	}
}

// TestToWorkerDoesNotBlock: items written to a worker that is not reading
// its stdin (it may be blocked printing output, which the same goroutine
// reads) are queued, not waited for, and reach it in order once it reads.
func TestToWorkerDoesNotBlock(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	log := slog.New(slog.DiscardHandler)
	jr, err := openJournal(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer jr.close()
	s := &Streams{node: "n1", log: log}
	f := newFeeder(context.Background(), s, log, wire.ProcSpec{ID: "3.1", WorkID: 3}, time.Now(), w, jr)
	want := bytes.Repeat([]byte("0123456789abcde\n"), 1<<14) // 256 KiB: more than a pipe holds
	written := make(chan struct{})
	go func() {
		defer close(written)
		f.mu.Lock()
		defer f.mu.Unlock()
		for i := range 4 {
			f.toWorker(want[i*len(want)/4 : (i+1)*len(want)/4])
		}
	}()
	select {
	case <-written:
	case <-time.After(time.Minute):
		t.Fatal("toWorker waited for the worker to read")
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the worker read other bytes than were written, or in another order")
	}
}

// TestReadWorkerLineEnds: lines end with "\n" or "\r\n", and the last one
// may end with the output.
func TestReadWorkerLineEnds(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Close()
		w.WriteString("first\r\n{\"id\": \"1\", \"ok\": true}\r\n")
		w.WriteString("{\"id\": \"2\", \"ok\": tr")
		w.WriteString("ue}\nlast")
	}()
	logPath := filepath.Join(t.TempDir(), "x.log")
	openLog := func() (*os.File, error) { return os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) }
	var got []int
	readWorker(slog.New(slog.DiscardHandler), r, openLog, func(evs []feedEvent) bool {
		for _, ev := range evs {
			if ev.outcome != nil && ev.outcome.OK {
				got = append(got, ev.outcome.Index)
			}
		}
		return true
	})
	r.Close()
	if b, _ := os.ReadFile(logPath); string(b) != "first\nlast\n" || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("log %q, answers %v; want \"first\\nlast\\n\", [1 2]", b, got)
	}
}
