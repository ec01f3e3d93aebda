package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ducc-project/ducc/wire"
)

// scriptedJob answers wait calls with a sequence of states, then repeats
// the last one; cancel switches it to CanceledByUser.
type scriptedJob struct {
	mu       sync.Mutex
	steps    []wire.WorkInfo
	i        int
	canceled bool
	waits    int
	fail     int // answer the first `fail` waits with "unreachable"
}

func (s *scriptedJob) install(fa *fakeAgent) {
	fa.handle(wire.MethodWait, func([]byte) (any, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.waits++
		if s.waits <= s.fail {
			return nil, &apiErr{3, "head unreachable"}
		}
		if s.canceled {
			return wire.WorkInfo{ID: 17, Kind: wire.WorkJob, State: "Completed", Completion: "CanceledByUser", Ended: true, Reason: "canceled by u", Job: &wire.JobStats{Total: 10, Done: 4}}, nil
		}
		info := s.steps[s.i]
		if s.i < len(s.steps)-1 {
			s.i++
		}
		return info, nil
	})
	fa.handle(wire.MethodCancel, func([]byte) (any, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.canceled = true
		return wire.WorkInfo{ID: 17}, nil
	})
}

func running(done, failed, procs int) wire.WorkInfo {
	return wire.WorkInfo{ID: 17, Kind: wire.WorkJob, State: "Running", Job: &wire.JobStats{Total: 10, Done: done, Failed: failed, Processes: procs}}
}

func ended(completion, reason string, done, failed int) wire.WorkInfo {
	return wire.WorkInfo{ID: 17, Kind: wire.WorkJob, State: "Completed", Completion: completion, Reason: reason, Ended: true,
		StartedAt: 1_000, EndedAt: 3_000, Job: &wire.JobStats{Total: 10, Done: done, Failed: failed}}
}

func testOpts() waitOpts {
	return waitOpts{poll: 5 * time.Millisecond, lineEvery: 0, quietEvery: time.Hour, now: time.Now, interrupt: make(chan os.Signal)}
}

func TestProgressWaitJob(t *testing.T) {
	waiting := wire.WorkInfo{ID: 17, Kind: wire.WorkJob, State: "WaitingForResources", Reason: "no node has 64 GiB free"}
	tests := []struct {
		name     string
		steps    []wire.WorkInfo
		json     bool
		wantOut  []string // substrings of stdout, in order
		wantErr  string   // "" = success
		failures int
	}{
		{
			name:  "plain lines to the end",
			steps: []wire.WorkInfo{waiting, running(0, 0, 2), running(5, 1, 4), ended("EndOfJob", "", 10, 0)},
			wantOut: []string{
				"job 17: WaitingForResources: no node has 64 GiB free\n",
				"job 17: 0/10 done, 0 errors, 2 processes",
				"job 17: 5/10 done, 1 error, 4 processes",
				"job 17 EndOfJob: 10/10 done, 0 errors in 2s (5.0 items/s)\n",
			},
		},
		{
			name:    "items failed",
			steps:   []wire.WorkInfo{running(3, 0, 1), ended("Error", "", 9, 1)},
			wantOut: []string{"job 17 Error: 9/10 done, 1 error"},
			wantErr: "job 17 ended Error: 1 of 10 items failed; see 'ducc results 17 --failed'",
		},
		{
			name:    "process failures",
			steps:   []wire.WorkInfo{ended("ProcessInitializationFailure", "worker exited with 1 before it was ready", 0, 0)},
			wantErr: "ended ProcessInitializationFailure: worker exited with 1 before it was ready",
		},
		{
			name:    "json prints only the final state",
			steps:   []wire.WorkInfo{running(1, 0, 1), ended("EndOfJob", "", 10, 0)},
			json:    true,
			wantOut: []string{`"completion": "EndOfJob"`},
		},
		{
			name:     "rides out a lost agent",
			steps:    []wire.WorkInfo{ended("EndOfJob", "", 10, 0)},
			failures: 2,
			wantOut:  []string{"job 17 EndOfJob"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fa := newFakeAgent(t)
			sj := &scriptedJob{steps: tc.steps, fail: tc.failures}
			sj.install(fa)
			var out, errOut bytes.Buffer
			o := testOpts()
			o.json = tc.json
			err := waitJobWith(context.Background(), fa.client(), 17, &out, &errOut, o)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error %v; stderr %s", err, errOut.String())
			}
			if tc.wantErr != "" {
				ee, ok := err.(*exitError)
				if !ok || ee.code != exitFailed || !strings.Contains(ee.msg, tc.wantErr) {
					t.Fatalf("got %#v, want exit 1 with %q", err, tc.wantErr)
				}
			}
			rest := out.String()
			for _, w := range tc.wantOut {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stdout %q lacks %q (in order)", out.String(), w)
				}
				rest = rest[i+len(w):]
			}
			if tc.json {
				var info wire.WorkInfo
				if err := json.Unmarshal(out.Bytes(), &info); err != nil {
					t.Fatalf("--json output is not one WorkInfo: %v\n%s", err, out.String())
				}
			}
			if tc.failures > 0 && !strings.Contains(errOut.String(), "lost the agent") {
				t.Errorf("stderr %q does not say the agent was lost", errOut.String())
			}
		})
	}
}

func TestProgressInterrupt(t *testing.T) {
	tests := []struct {
		name       string
		cancel     bool
		wantCancel bool
		wantErr    string
	}{
		{"cancel on interrupt", true, true, "ended CanceledByUser: canceled by u"},
		{"plain interrupt leaves the job running", false, false, "it keeps running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fa := newFakeAgent(t)
			sj := &scriptedJob{steps: []wire.WorkInfo{running(4, 0, 2)}}
			sj.install(fa)
			sig := make(chan os.Signal, 1)
			o := testOpts()
			o.interrupt = sig
			o.cancelOnInterrupt = tc.cancel
			go func() {
				time.Sleep(50 * time.Millisecond)
				sig <- syscall.SIGINT
			}()
			var out, errOut bytes.Buffer
			err := waitJobWith(context.Background(), fa.client(), 17, &out, &errOut, o)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			sj.mu.Lock()
			defer sj.mu.Unlock()
			if sj.canceled != tc.wantCancel {
				t.Fatalf("canceled %v, want %v", sj.canceled, tc.wantCancel)
			}
		})
	}
}

func TestProgressBarLine(t *testing.T) {
	rate := 812.0
	tests := []struct {
		name  string
		info  wire.WorkInfo
		width int
		want  []string
	}{
		{"running", wire.WorkInfo{ID: 17, State: "Running", Job: &wire.JobStats{Total: 10000, Done: 5000, Failed: 3, Processes: 4}}, 100,
			[]string{"job 17 [", "█", "░", "] 5003/10000  50%", "3 errors", "4 procs", "812/s", "ETA 6s"}},
		{"narrow terminal drops the bar", wire.WorkInfo{ID: 17, State: "Running", Job: &wire.JobStats{Total: 10, Done: 1, Processes: 1}}, 40,
			[]string{"job 17 1/10"}},
		{"no stats yet", wire.WorkInfo{ID: 17, State: "WaitingForResources", Reason: strings.Repeat("long reason ", 20)}, 60,
			[]string{"job 17 WaitingForResources: long reason", "…"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := barLine(&tc.info, rate, tc.width)
			if n := utf8.RuneCountInString(got); n >= tc.width {
				t.Errorf("line of %d columns for a %d-column terminal: %q", n, tc.width, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
	// The bar view redraws in place and ends with the final line.
	var buf bytes.Buffer
	v := &barView{w: &buf, width: 80, id: 17}
	r := &rateMeter{}
	v.update(&wire.WorkInfo{ID: 17, State: "Running", Job: &wire.JobStats{Total: 2, Done: 1}}, r, time.Now())
	fin := ended("EndOfJob", "", 10, 0)
	v.finish(&fin, r, time.Now())
	if s := buf.String(); !strings.HasPrefix(s, "\rjob 17 [") || !strings.HasSuffix(s, "\r\x1b[Kjob 17 EndOfJob: 10/10 done, 0 errors in 2s (5.0 items/s)\n") {
		t.Fatalf("bar output %q", s)
	}
}

func TestProgressRate(t *testing.T) {
	r := &rateMeter{}
	t0 := time.Unix(0, 0)
	for i := 0; i <= 30; i++ {
		r.add(t0.Add(time.Duration(i)*time.Second), i*100)
	}
	if got := r.rate(nil); got < 99 || got > 101 {
		t.Fatalf("rate %v, want 100", got)
	}
	if len(r.t) > 12 {
		t.Fatalf("the meter keeps %d samples, want about 10 s worth", len(r.t))
	}
	if got := r.rate(&wire.JobStats{Rate: 5}); got != 5 {
		t.Fatalf("the server's rate must win, got %v", got)
	}
}
