package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// TestWorkExit: the exit code and the stderr line of 'ducc run' and 'ducc
// wait' for how a managed reservation ended; an OOM kill in the process's
// tree is never silent.
func TestWorkExit(t *testing.T) {
	const childKilled = "exited normally; memory cap hit: 1 process killed by the OOM killer (cap 64 MiB)"
	cases := []struct {
		name   string
		w      wire.WorkInfo
		code   int
		stderr string
	}{
		{"exit 0", wire.WorkInfo{ID: 5, Ended: true, Completion: "ProgramExit", Reason: "exited normally",
			Procs: []wire.ProcInfo{{ID: "5.1", PID: 10}}}, 0, ""},
		{"exit 7", wire.WorkInfo{ID: 5, Ended: true, Completion: "ProgramExit", ExitCode: 7, Reason: "exited with code 7",
			Procs: []wire.ProcInfo{{ID: "5.1", PID: 10, ExitCode: 7}}}, 7, "ducc: 5 exited with code 7\n"},
		{"killed at the cap", wire.WorkInfo{ID: 5, Ended: true, Completion: "ProgramExit", ExitCode: 137, Reason: "exceeded its memory limit of 64 MiB",
			Procs: []wire.ProcInfo{{ID: "5.1", PID: 10, ExitCode: 137, OOMKills: 1}}}, 137, "ducc: 5 exceeded its memory limit of 64 MiB\n"},
		{"child killed, exit 0", wire.WorkInfo{ID: 5, Ended: true, Completion: "ProgramExit", Reason: childKilled,
			Procs: []wire.ProcInfo{{ID: "5.1", PID: 10, OOMKills: 1}}}, wire.CodeMemoryCap, "ducc: 5 " + childKilled + "\n"},
		{"child killed, exit 3", wire.WorkInfo{ID: 5, Ended: true, Completion: "ProgramExit", ExitCode: 3, Reason: "exceeded its memory limit of 64 MiB",
			Procs: []wire.ProcInfo{{ID: "5.1", PID: 10, ExitCode: 3, OOMKills: 1}}}, 3, "ducc: 5 exceeded its memory limit of 64 MiB\n"},
		{"launch failure", wire.WorkInfo{ID: 5, Ended: true, Completion: "LaunchFailure", ExitCode: -1, Reason: "exec: /x: no such file or directory",
			Procs: []wire.ProcInfo{{ID: "5.1", ExitCode: -1}}}, wire.CodeError, ""},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		err := workExit(&c.w, &stderr)
		code := 0
		if err != nil {
			var ee *exitError
			if !errors.As(err, &ee) {
				t.Fatalf("%s: error %v is not an exit code", c.name, err)
			}
			code = ee.code
		}
		if code != c.code || stderr.String() != c.stderr {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", c.name, code, stderr.String(), c.code, c.stderr)
		}
	}
}

// TestShowOOMKills: 'ducc show' names the OOM kills of the work's
// processes, for a job (whose reason is its own) as for a run.
func TestShowOOMKills(t *testing.T) {
	w := wire.WorkInfo{ID: 9, Kind: wire.WorkJob, State: "Completed", Completion: "EndOfJob", Ended: true, Memory: 64 << 20,
		Procs: []wire.ProcInfo{
			{ID: "9.1", Node: "n1", PID: 10, State: wire.ProcExited, MemoryLimit: 64 << 20, Reason: "exited normally; memory cap hit: 2 processes killed by the OOM killer (cap 64 MiB)", OOMKills: 2},
			{ID: "9.2", Node: "n1", PID: 11, State: wire.ProcExited, MemoryLimit: 64 << 20, Reason: "exited normally"},
		}}
	var out bytes.Buffer
	printWork(&out, w)
	flat := strings.Join(strings.Fields(out.String()), " ") // column widths aside
	for _, want := range []string{"OOM kills: 2 (processes killed by the OOM killer at their memory cap", "memory cap hit: 2 processes killed by the OOM killer (cap 64 MiB)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	w.Procs[0].OOMKills, w.Procs[0].Reason = 0, "exited normally"
	out.Reset()
	printWork(&out, w)
	if strings.Contains(out.String(), "OOM") {
		t.Errorf("show names OOM kills there were none:\n%s", out.String())
	}
}
