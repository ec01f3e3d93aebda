package proc

import "testing"

func TestFormatReason(t *testing.T) {
	cases := []struct {
		name string
		st   Status
		want string
	}{
		{"normal", Status{}, "exited normally"},
		{"code", Status{ExitCode: 7}, "exited with code 7"},
		{"signal", Status{ExitCode: -1, Signal: "SIGTERM"}, "killed by SIGTERM"},
		{"oom", Status{ExitCode: -1, Signal: "SIGKILL", OOMKilled: true, OOMKills: 1, MemoryLimit: 64 << 20}, "exceeded its memory limit of 64 MiB"},
		{"oom several", Status{ExitCode: 1, OOMKilled: true, OOMKills: 3, MemoryLimit: 64 << 20}, "exceeded its memory limit of 64 MiB: 3 processes killed by the OOM killer"},
		{"oom no cap", Status{ExitCode: -1, Signal: "SIGKILL", OOMKilled: true, OOMKills: 1}, "killed by the kernel OOM killer"},
		{"child killed", Status{OOMKills: 1, MemoryLimit: 64 << 20}, "exited normally; memory cap hit: 1 process killed by the OOM killer (cap 64 MiB)"},
		{"children killed", Status{OOMKills: 2, MemoryLimit: 1 << 30}, "exited normally; memory cap hit: 2 processes killed by the OOM killer (cap 1 GiB)"},
		{"child killed, stopped", Status{ExitCode: -1, Signal: "SIGTERM", OOMKills: 1, MemoryLimit: 64 << 20}, "killed by SIGTERM; memory cap hit: 1 process killed by the OOM killer (cap 64 MiB)"},
		{"child killed, no cap", Status{OOMKills: 1}, "exited normally; 1 process killed by the OOM killer"},
	}
	for _, c := range cases {
		if got := formatReason(&c.st); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestOOMVerdict(t *testing.T) {
	cases := []struct {
		name   string
		st     Status
		rise   uint64
		exact  bool
		killed bool
		kills  uint64
	}{
		{"exact: killed", Status{ExitCode: -1, Signal: "SIGKILL"}, 1, true, true, 1},
		{"exact: child killed, exit 0", Status{}, 2, true, false, 2},
		{"exact: child killed, failed", Status{ExitCode: 137}, 1, true, true, 1},
		{"failcnt: killed", Status{ExitCode: -1, Signal: "SIGKILL"}, 1, false, true, 1},
		{"failcnt: shell reports SIGKILL", Status{ExitCode: 137}, 1, false, true, 1},
		{"failcnt: limit reached, exit 0", Status{}, 1, false, false, 0},
		{"failcnt: limit reached, failed", Status{ExitCode: 2}, 1, false, false, 0},
		{"exact: child killed, then stopped", Status{ExitCode: 143, Stopped: true}, 2, true, false, 2},
		{"failcnt: killed after the grace", Status{ExitCode: -1, Signal: "SIGKILL", Stopped: true}, 1, false, false, 0},
	}
	for _, c := range cases {
		killed, kills := oomVerdict(&c.st, c.rise, c.exact)
		if killed != c.killed || kills != c.kills {
			t.Errorf("%s: got %v, %d; want %v, %d", c.name, killed, kills, c.killed, c.kills)
		}
	}
}

// TestOOMLogLine: the line the shim appends to the log when the memory cap
// killed the process or one of its tree, and none otherwise.
func TestOOMLogLine(t *testing.T) {
	cases := []struct {
		name string
		st   Status
		want string
	}{
		{"killed at the cap", Status{ID: "5.1", ExitCode: -1, Signal: "SIGKILL", OOMKilled: true, OOMKills: 1, MemoryLimit: 256 << 20},
			"ducc: process 5.1 was killed by the OOM killer: it exceeded its memory limit of 256 MiB\n"},
		{"killed, no cap", Status{ID: "5.1", ExitCode: -1, Signal: "SIGKILL", OOMKilled: true, OOMKills: 1},
			"ducc: process 5.1 was killed by the kernel OOM killer\n"},
		{"a child killed", Status{ID: "7.2", OOMKills: 1, MemoryLimit: 512 << 20},
			"ducc: process 7.2 exited normally; memory cap hit: 1 process killed by the OOM killer (cap 512 MiB)\n"},
		{"no kill", Status{ID: "5.1", ExitCode: 3}, ""},
		{"killed by a signal", Status{ID: "5.1", ExitCode: -1, Signal: "SIGKILL"}, ""},
	}
	for _, c := range cases {
		c.st.Reason = formatReason(&c.st)
		if got := oomLogLine(&c.st); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
