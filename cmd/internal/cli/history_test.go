package cli

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 22, 15, 30, 0, 0, time.Local)
	for _, tc := range []struct {
		in   string
		want time.Time
		zero bool
		bad  bool
	}{
		{in: "", zero: true},
		{in: "all", zero: true},
		{in: "2h", want: now.Add(-2 * time.Hour)},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "today", want: time.Date(2026, 11, 22, 0, 0, 0, 0, time.Local)},
		{in: "2026-11-20", want: time.Date(2026, 11, 20, 0, 0, 0, 0, time.Local)},
		{in: "2026-11-20T14:05", want: time.Date(2026, 11, 20, 14, 5, 0, 0, time.Local)},
		{in: "2026-11-20 14:05:06", want: time.Date(2026, 11, 20, 14, 5, 6, 0, time.Local)},
		{in: "2026-11-20T14:05:06Z", want: time.Date(2026, 11, 20, 14, 5, 6, 0, time.UTC)},
		{in: "yesterday", bad: true},
		{in: "-2h", bad: true},
	} {
		got, err := parseWhen(tc.in, now)
		switch {
		case tc.bad:
			if err == nil {
				t.Errorf("parseWhen(%q) = %d, want an error", tc.in, got)
			}
		case err != nil:
			t.Errorf("parseWhen(%q): %v", tc.in, err)
		case tc.zero && got != 0, !tc.zero && got != tc.want.UnixMilli():
			t.Errorf("parseWhen(%q) = %v, want %v", tc.in, time.UnixMilli(got), tc.want)
		}
	}
}

// --state takes completion reasons, their short names and sacct's states;
// anything else is a usage error that lists what it takes (an unknown
// state used to print an empty table with exit 0).
func TestParseStates(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  []string // the completions asked of the head
		err   string
		keep  []wire.HistoryRecord
		leave []wire.HistoryRecord
	}{
		{in: "done", want: []string{"EndOfJob"}},
		{in: "ProcFail,EndOfJob", want: []string{"ProcessFailure", "EndOfJob"}},
		{in: "error", want: []string{"Error"}},
		{in: "Exit", want: []string{"ProgramExit"}},
		{in: "DriverInit,driverprocessfailed", want: []string{"DriverInitializationFailure", "DriverProcessFailed"}},
		{in: "COMPLETED", want: []string{"EndOfJob", "ProgramExit"},
			keep:  []wire.HistoryRecord{{Completion: "EndOfJob"}, {Completion: "ProgramExit"}},
			leave: []wire.HistoryRecord{{Completion: "ProgramExit", ExitCode: 3}, {Completion: "Error", ExitCode: 1}}},
		{in: "failed", want: []string{"Error", "CanceledByDriver", "ProcessInitializationFailure", "ProcessFailure", "LaunchFailure",
			"DriverInitializationFailure", "DriverProcessFailed", "ServicesUnavailable", "ResourcesUnavailable", "ProgramExit"},
			keep:  []wire.HistoryRecord{{Completion: "ProgramExit", ExitCode: 3}, {Completion: "Error", ExitCode: 1}},
			leave: []wire.HistoryRecord{{Completion: "ProgramExit"}, {Completion: "ProgramExit", ExitCode: 137}, {Completion: "EndOfJob"}}},
		{in: "ca", want: []string{"CanceledByUser", "CanceledByAdministrator", "CanceledBySystem"}},
		{in: "out_of_memory", want: []string{"ProgramExit"},
			keep: []wire.HistoryRecord{{Completion: "ProgramExit", ExitCode: 137}}, leave: []wire.HistoryRecord{{Completion: "ProgramExit", ExitCode: 1}}},
		{in: "bogus", err: `--state "bogus" is not a state of ended work; give a completion reason (EndOfJob, Error, NoWorkItemsFound`},
		{in: "done,bogus", err: "sacct's states COMPLETED, FAILED, CANCELLED, OUT_OF_MEMORY"},
		{in: "timeout", err: "no time limit"},
		{in: "RUNNING", err: "'ducc jobs' lists work that waits or runs"},
	} {
		sels, err := parseStates([]string{tc.in})
		if tc.err != "" {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(ee.msg, tc.err) {
				t.Errorf("--state %s: %v, want a usage error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("--state %s: %v", tc.in, err)
			continue
		}
		if got := selCompletions(sels); !slices.Equal(got, tc.want) {
			t.Errorf("--state %s asks for %q, want %q", tc.in, got, tc.want)
		}
		recs := append(slices.Clone(tc.keep), tc.leave...)
		if got := filterStates(recs, sels); len(got) != len(tc.keep) {
			t.Errorf("--state %s keeps %+v of %+v, want %+v", tc.in, got, recs, tc.keep)
		}
	}
}

// Every completion reason has a short name that fits the table.
func TestHistoryStateNames(t *testing.T) {
	for _, c := range wire.Completions() {
		if c == wire.CompletionProgramExit {
			continue
		}
		r := wire.HistoryRecord{Completion: string(c)}
		if s := historyState(r); s != c.Short() || len(s) > 11 || strings.HasSuffix(s, "+") {
			t.Errorf("%s is %q in the table, want its short name %q whole", c, s, c.Short())
		}
	}
}

// The table fits 80 columns with long names, big numbers and every state.
func TestShortSize(t *testing.T) {
	for in, want := range map[int64]string{0: "-", 512: "512B", 1536: "1.5K", 5 << 20: "5M", 1023 << 20: "1023M", 1536 << 30: "1.5T"} {
		if got := shortSize(in); got != want {
			t.Errorf("shortSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestHistoryTableFits80Columns(t *testing.T) {
	now := time.Date(2026, 11, 22, 15, 30, 0, 0, time.Local)
	var recs []wire.HistoryRecord
	for _, full := range wire.Completions() {
		recs = append(recs, wire.HistoryRecord{
			ID: 12345678, Kind: wire.WorkJob, User: "a-very-long-user-name", Class: "a-very-long-class",
			StartedAt: now.Add(-80 * time.Hour).UnixMilli(), EndedAt: now.Add(-time.Hour).UnixMilli(),
			Completion: string(full), ExitCode: 255, MaxRSS: 1536 << 30, CPUSeconds: 1e6, Items: 1_000_000, Done: 999_990, Failed: 10,
		})
	}
	recs = append(recs, wire.HistoryRecord{ID: 1, Kind: wire.WorkManaged, User: "bob", EndedAt: now.Add(-48 * time.Hour).UnixMilli(),
		Completion: "ProgramExit", ExitCode: 137, MaxRSS: 5 << 20, CPUSeconds: 0.25})
	var out bytes.Buffer
	printHistory(&out, recs, now)
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if len(line) > 80 {
			t.Errorf("%d columns: %q", len(line), line)
		}
	}
	if !strings.Contains(out.String(), "Exit(137)") || !strings.Contains(out.String(), "999k/1000k 10F") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestHistoryAndJobsAgree: a job that ended EndOfJob, or a run that
// exited 3, reads the same in 'ducc history' as in 'ducc jobs --all'; the
// former short name "Done" still selects EndOfJob.
func TestHistoryAndJobsAgree(t *testing.T) {
	for _, tc := range []struct {
		c    wire.Completion
		exit int
		want string
	}{
		{wire.CompletionEndOfJob, 0, "EndOfJob"},
		{wire.CompletionError, 0, "Error"},
		{wire.CompletionProgramExit, 3, "Exit(3)"},
	} {
		h := historyState(wire.HistoryRecord{Completion: string(tc.c), ExitCode: tc.exit})
		j := tableState(&wire.WorkInfo{Ended: true, Completion: string(tc.c), ExitCode: tc.exit})
		if h != tc.want || j != tc.want {
			t.Errorf("%s: history %q, jobs %q; want %q in both", tc.c, h, j, tc.want)
		}
	}
	if c, ok := wire.ParseCompletion("done"); !ok || c != wire.CompletionEndOfJob {
		t.Errorf("ParseCompletion(done) = %q, %v", c, ok)
	}
}
