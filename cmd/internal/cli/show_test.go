package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ducc-project/ducc/wire"
)

var showNow = time.UnixMilli(1_700_000_100_000)

func sampleWork() []wire.WorkInfo {
	return []wire.WorkInfo{
		{ID: 12, Kind: wire.WorkJob, User: "alice", Class: "normal", State: "Running", Memory: 256 << 20,
			MemoryCap: 1 << 30, Quantum: 1 << 30, SubmittedAt: 1_700_000_000_000, StartedAt: 1_700_000_010_000,
			Nodes: []string{"node01", "node02"}, Wanted: 4, Command: []string{"/usr/bin/python3", "worker.py"},
			Held:     "held at 2 of 10 processes by the prediction (class normal use_prediction): at the job's mean item time, 2 processes finish its 40 remaining items before more could start",
			HeldCode: wire.ReasonPrediction,
			Job:      &wire.JobStats{Total: 100, Done: 60, Failed: 2, Dispatched: 3, Rate: 4, Processes: 2, MeanMS: 500, MinMS: 100, MaxMS: 900},
			Procs: []wire.ProcInfo{
				{ID: "12.1", Node: "node01", State: wire.ProcRunning, PID: 4242, MemoryLimit: 1 << 30, Done: 30},
				{ID: "12.2", Node: "node02", State: wire.ProcRunning, PID: 4243, MemoryLimit: 1 << 30, Done: 30, Errors: 2,
					LogPath: "/var/log/ducc/alice/a-very-long-directory-name-for-the-logs/12-JP-node02-4243.log"},
				{ID: "12.3", Node: "node01", State: wire.ProcExited, PID: 4100, MemoryLimit: 1 << 30, ExitCode: 143,
					Reason: "killed by SIGTERM", Stopped: "preempted"},
			}},
		{ID: 13, Kind: wire.WorkReservation, User: "bob-with-a-long-name", Class: "reserve", State: "WaitingForResources",
			Memory: 4 << 30, ReasonCode: wire.ReasonNoFit, SubmittedAt: 1_700_000_000_000, Command: []string{""},
			Reason: "no machine in pool default has exactly 4 GiB (reservations get exactly their size); machines: 2 × 16 GiB"},
		{ID: 14, Kind: wire.WorkJob, User: "carol", Class: "a-class-with-a-long-name", State: "Completed", Completion: "EndOfJob", Ended: true,
			SubmittedAt: 1_700_000_000_000, StartedAt: 1_700_000_001_000, EndedAt: 1_700_000_051_000,
			Job: &wire.JobStats{Total: 100, Done: 100}},
	}
}

func TestJobsTable(t *testing.T) {
	ws := sampleWork()
	cols, err := pickJobColumns(defaultJobColumns)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		width  int
		header bool
		want   []string
		not    []string
	}{
		{"whole when piped", 0, true, []string{"DONE", "TOTAL", "ERR", "RATE", "NODES(REASON)", "60", "100", "4.0/s", "node01+1", "(NoFit)", "a-class-with-a-long-name"},
			[]string{"at fair share", "Prediction"}},
		{"fitted to 80 columns", 80, true, []string{"ID", "(NoFit)", "node01+1", "4.0/s"}, nil},
		{"fitted to 60 columns", 60, false, []string{"12", "…"}, []string{"USER"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if _, err := printWorkTable(&b, ws, cols, showNow, tt.width, tt.header); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				if tt.width > 0 && utf8.RuneCountInString(l) > tt.width {
					t.Errorf("line of %d columns, over %d: %q", utf8.RuneCountInString(l), tt.width, l)
				}
			}
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("table lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(out, s) {
					t.Errorf("table has %q:\n%s", s, out)
				}
			}
		})
	}
}

// At 80 columns and less the states of ended work and the ids are shown
// whole (they were cut to "Exit(1…" and "EndOfJ…"): other columns are cut
// or left out, and the table says which it left out.
func TestJobsTableKeepsStates(t *testing.T) {
	ws := sampleWork()
	for i, c := range []struct {
		completion string
		exit       int
	}{{"ProgramExit", 137}, {"EndOfJob", 0}, {"ProcessInitializationFailure", 1}, {"CanceledByAdministrator", 0}} {
		ws = append(ws, wire.WorkInfo{ID: uint64(123456 + i), Kind: wire.WorkManaged, User: "someone-with-a-long-name", Class: "fixed-but-long",
			State: "Completed", Completion: c.completion, ExitCode: c.exit, Ended: true, Description: "a description long enough to be cut",
			SubmittedAt: 1_700_000_000_000, StartedAt: 1_700_000_001_000, EndedAt: 1_700_000_051_000})
	}
	cols, err := pickJobColumns(defaultJobColumns)
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{80, 60} {
		var b bytes.Buffer
		dropped, err := printWorkTable(&b, ws, cols, showNow, width, true)
		if err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if utf8.RuneCountInString(l) > width {
				t.Errorf("%d: line of %d columns: %q", width, utf8.RuneCountInString(l), l)
			}
		}
		for _, s := range []string{"Exit(137)", "EndOfJob", "ProcessInitializationFailure", "CanceledByAdministrator", "123456", "123459", "Waiting", "Running"} {
			if !strings.Contains(out, s) {
				t.Errorf("%d columns: %q is not whole:\n%s", width, s, out)
			}
		}
		if len(dropped) == 0 || !slices.Contains(dropped, "RATE") {
			t.Errorf("%d columns: left out %q, want RATE first:\n%s", width, dropped, out)
		}
		for _, d := range dropped {
			if strings.Contains(out, d+" ") || strings.HasSuffix(strings.SplitN(out, "\n", 2)[0], d) {
				t.Errorf("%d columns: %s said left out but shown:\n%s", width, d, out)
			}
		}
	}
	// -o wide: more columns, whole.
	wide, err := pickJobColumns("wide")
	if err != nil || len(wide) <= len(cols) {
		t.Fatalf("-o wide: %d columns, %v", len(wide), err)
	}
}

func TestJobsColumns(t *testing.T) {
	cols, err := pickJobColumns("id, Reason,held")
	if err != nil || len(cols) != 3 || cols[1].head != "REASON" {
		t.Fatalf("columns %v, %v", cols, err)
	}
	var b bytes.Buffer
	if _, err := printWorkTable(&b, sampleWork()[:2], cols, showNow, 0, false); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "12  -      Prediction\n13  NoFit  -\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"id,nope", ""} {
		if _, err := pickJobColumns(bad); err == nil {
			t.Errorf("-o %q accepted", bad)
		}
	}
}

func TestShowText(t *testing.T) {
	ws := sampleWork()
	asked := ws[0]
	asked.MemoryCap = asked.Memory // a head that caps at the memory asked
	tests := []struct {
		name string
		w    wire.WorkInfo
		want []string
		not  []string
	}{
		{"running job", ws[0], []string{
			"Items: 60 of 100 done, 2 failed, 3 in flight",
			"Item time: mean 500ms, min 100ms, max 900ms",
			"Rate: 4.0 items/s; ETA 10s for 38 items left",
			"Memory: asked 256 MiB; capped at 1 GiB: memory is given in shares of 1 GiB",
			"Nodes: node01, node02",
			"Processes: 2 processes live, 4 wanted",
			"Held back: held at 2 of 10 processes by the prediction",
			"stopped: preempted",
		}, []string{"exit 143", "143", "EXIT 0", "killed by SIGTERM"}},
		{"reservation", ws[1], []string{"State: WaitingForResources (NoFit)", "Reason: no machine in pool default has exactly 4 GiB"},
			[]string{"Command:"}},
		{"capped as asked", asked, []string{"Memory: 256 MiB per process (held as 1 share of 1 GiB)"}, []string{"0 shares"}},
		{"ended job", ws[2], []string{"Rate: 2.0 items/s on average", "Run time: 50s"}, []string{"ETA"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkShow(t, tt.w, tt.want, tt.not)
		})
	}
}

func TestProcEnd(t *testing.T) {
	tests := []struct {
		p    wire.ProcInfo
		want string
	}{
		{wire.ProcInfo{State: wire.ProcRunning}, "-"},
		{wire.ProcInfo{State: "Initializing"}, "-"},
		{wire.ProcInfo{State: wire.ProcExited, ExitCode: 143, Reason: "exited with code 143", Stopped: "job ended"}, "stopped: job ended"},
		{wire.ProcInfo{State: wire.ProcExited, ExitCode: 1, Reason: "exited with code 1"}, "exited with code 1"},
		{wire.ProcInfo{State: wire.ProcExited, ExitCode: 3}, "exit 3"},
	}
	for _, tt := range tests {
		if got := procEnd(tt.p); got != tt.want {
			t.Errorf("procEnd(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  []string
	}{
		{"a b c", 0, []string{"a b c"}},
		{"aaa bbb ccc", 7, []string{"aaa bbb", "ccc"}},
		{"/a/very/long/path", 5, []string{"/a/ve", "ry/lo", "ng/pa", "th"}},
	}
	for _, tt := range tests {
		if got := wrap(tt.s, tt.width); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}

// checkShow prints w as ducc show does, full width and at 80 columns, and
// checks that no line is wider, that the text (its words joined by single
// spaces) says each of want, and that it holds none of not.
func checkShow(t *testing.T, w wire.WorkInfo, want, not []string) {
	t.Helper()
	for _, width := range []int{0, 80} {
		var b bytes.Buffer
		printWorkWidth(&b, w, width, showNow)
		out := b.String()
		flat := strings.Join(strings.Fields(out), " ")
		for _, l := range strings.Split(out, "\n") {
			if width > 0 && utf8.RuneCountInString(l) > width {
				t.Errorf("line of %d columns: %q", utf8.RuneCountInString(l), l)
			}
		}
		for _, s := range want {
			if !strings.Contains(flat, s) {
				t.Errorf("width %d: show lacks %q:\n%s", width, s, out)
			}
		}
		for _, s := range not {
			if strings.Contains(out, s) {
				t.Errorf("width %d: show has %q:\n%s", width, s, out)
			}
		}
	}
}
