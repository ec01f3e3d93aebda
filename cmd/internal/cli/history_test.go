package cli

import (
	"bytes"
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

func TestCompletionOf(t *testing.T) {
	for in, want := range map[string]string{
		"done": "EndOfJob", "ProcFail": "ProcessFailure", "error": "error", "EndOfJob": "EndOfJob", "Exit": "ProgramExit", "x": "x",
	} {
		if got := completionOf(in); got != want {
			t.Errorf("completionOf(%q) = %q, want %q", in, got, want)
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
	for full := range shortCompletion {
		recs = append(recs, wire.HistoryRecord{
			ID: 12345678, Kind: wire.WorkJob, User: "a-very-long-user-name", Class: "a-very-long-class",
			StartedAt: now.Add(-80 * time.Hour).UnixMilli(), EndedAt: now.Add(-time.Hour).UnixMilli(),
			Completion: full, ExitCode: 255, MaxRSS: 1536 << 30, CPUSeconds: 1e6, Items: 1_000_000, Done: 999_990, Failed: 10,
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
