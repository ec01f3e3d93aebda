package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			events := make(chan feedEvent, 16)
			readWorker(context.Background(), slog.New(slog.NewTextHandler(&agentLog, nil)), r, openLog, events)
			r.Close()

			var ready, outcomes int
			for ev := range events {
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
	events := make(chan feedEvent, 16)
	readWorker(context.Background(), slog.New(slog.DiscardHandler), r, func() (*os.File, error) { return nil, errors.New("no log") }, events)
	r.Close()
	var got []string
	for ev := range events {
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
