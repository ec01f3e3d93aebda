package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

func TestDUCCArgs(t *testing.T) {
	tests := []struct {
		argv0 string
		args  []string
		want  string
	}{
		{"ducc", []string{"submit", "x"}, "submit x"},
		{"/usr/bin/ducc_submit", []string{"--specification", "j.job", "--wait_for_completion"}, "submit --specification j.job --wait_for_completion"},
		{"ducc_cancel", []string{"--id", "17"}, "cancel --id 17"},
		{"ducc_reserve", []string{"--memory_size", "30"}, "reserve --memory_size 30"},
		{"ducc_unreserve", []string{"--id", "3"}, "unreserve --id 3"},
		{"ducc_process_submit", []string{"-f", "mr.job"}, "run --detach -f mr.job"},
		{"ducc_process_submit", []string{"--wait_for_completion", "-f", "mr.job"}, "run --wait_for_completion -f mr.job"},
		{"ducc_process_submit", []string{"--attach-console", "--", "x", "--wait_for_completion"}, "run --attach-console -- x --wait_for_completion"},
		{"ducc_process_submit", []string{"--", "x", "--wait_for_completion"}, "run --detach -- x --wait_for_completion"},
		{"ducc_process_cancel", []string{"--id", "4"}, "cancel --id 4"},
		{"ducc_services", []string{"--register", "svc.props", "--instances", "2"}, "services register svc.props --instances 2"},
		{"ducc_services", []string{"--instances", "2", "--start=12"}, "services start 12 --instances 2"},
		{"ducc_services", []string{"--observe_references", "12"}, "services observe-references 12"},
		{"ducc_services", []string{"--query"}, "services query"},
	}
	for _, tc := range tests {
		if got := strings.Join(duccArgs(tc.argv0, tc.args), " "); got != tc.want {
			t.Errorf("duccArgs(%q, %q) = %q, want %q", tc.argv0, tc.args, got, tc.want)
		}
	}
}

// DUCC's command lines from its documentation run against ducc: program
// names, underscore options, --specification/-f, --id, --reason and
// DUCC's silent options.
func TestDUCCCommandLines(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "sleep.job")
	os.WriteFile(job, []byte("# a DUCC job spec\nprocess_executable = /bin/sleep\nprocess_executable_args = 1\n"+
		"process_thread_count = 2\nclasspath_order = ducc-before-user\nenvironment = DUCC_TEST_HOME LANG=C\ninput_file = "+filepath.Join(dir, "items")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "items"), []byte("a\nb\n"), 0o644)
	t.Setenv("DUCC_TEST_HOME", "/somewhere")

	fa := newFakeAgent(t)
	js := &jobServer{}
	js.install(fa)
	var cancel wire.CancelRequest
	fa.handle(wire.MethodCancel, func(b []byte) (any, error) {
		json.Unmarshal(b, &cancel)
		return wire.WorkInfo{ID: cancel.ID, State: "Completed", Completion: "CanceledByUser", Ended: true}, nil
	})
	fa.handle(wire.MethodShow, func(b []byte) (any, error) {
		var r wire.IDRequest
		json.Unmarshal(b, &r)
		return wire.WorkInfo{ID: r.ID, Kind: wire.WorkJob, State: "Running"}, nil
	})
	var run wire.RunRequest
	fa.handle(wire.MethodRun, func(b []byte) (any, error) {
		json.Unmarshal(b, &run)
		return wire.SubmitReply{ID: 21}, nil
	})
	mr := filepath.Join(dir, "mr.job")
	os.WriteFile(mr, []byte("process_executable = /bin/echo\nprocess_executable_args = hello there\nprocess_memory_size = 2\n"+
		"wait_for_completion = true\nenvironment = X=1\n"), 0o644)

	tests := []struct {
		argv0  string
		args   []string
		out    string
		errOut string
		check  func(t *testing.T)
	}{
		{"ducc_submit", []string{"--specification", job, "--process_memory_size", "2", "--role_administrator"}, "Job 17 submitted\n",
			"classpath_order is ignored", func(t *testing.T) {
				sp := js.spec
				if sp.Memory != 2<<30 || sp.Pipelines != 2 || sp.Executable != "/bin/sleep" {
					t.Errorf("spec %+v", sp)
				}
				if got := strings.Join(sp.Environment, " "); got != "DUCC_TEST_HOME=/somewhere LANG=C" {
					t.Errorf("environment %q", got)
				}
			}},
		{"ducc_cancel", []string{"--id", "17", "--reason", "back to the drawing board"}, "17 Completed (CanceledByUser)\n", "", func(t *testing.T) {
			if cancel.ID != 17 || cancel.Reason != "back to the drawing board" {
				t.Errorf("cancel %+v", cancel)
			}
		}},
		{"ducc_process_submit", []string{"--specification", mr}, "21\n", "", func(t *testing.T) {
			if run.Path != "/bin/echo" || strings.Join(run.Args, " ") != "hello there" || run.Memory != 2<<30 {
				t.Errorf("run %+v", run)
			}
			if !strings.Contains(strings.Join(run.Env, " "), "X=1") {
				t.Errorf("run env lacks X=1")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.argv0, func(t *testing.T) {
			root := newRoot("dev", nil)
			var out, errb bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errb)
			root.SetArgs(append([]string{"--socket", fa.sock}, duccArgs(tc.argv0, tc.args)...))
			if err := root.Execute(); err != nil {
				t.Fatalf("%s %q: %v (stderr %q)", tc.argv0, tc.args, err, errb.String())
			}
			if out.String() != tc.out {
				t.Errorf("stdout %q, want %q", out.String(), tc.out)
			}
			if !strings.Contains(errb.String(), tc.errOut) {
				t.Errorf("stderr %q lacks %q", errb.String(), tc.errOut)
			}
			tc.check(t)
		})
	}
}

// ducc_cancel --id 17 --dpid 3 and ducc cancel 17.3 cancel process 17.3.
func TestCancelOneProcess(t *testing.T) {
	fa := newFakeAgent(t)
	var got []wire.CancelRequest
	fa.handle(wire.MethodCancel, func(b []byte) (any, error) {
		var r wire.CancelRequest
		json.Unmarshal(b, &r)
		got = append(got, r)
		return wire.WorkInfo{ID: r.ID, State: "Running"}, nil
	})
	for _, args := range [][]string{
		duccArgs("ducc_cancel", []string{"--id", "17", "--dpid", "3"}),
		{"cancel", "17.3"},
	} {
		root := newRoot("dev", nil)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"--socket", fa.sock}, args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if out.String() != "Process 17.3 canceled; its items go to the job's other processes\n" {
			t.Errorf("%q printed %q", args, out.String())
		}
	}
	if len(got) != 2 || got[0].Process != "17.3" || got[1].Process != "17.3" || got[0].ID != 17 {
		t.Errorf("requests %+v", got)
	}
	root := newRoot("dev", nil)
	root.SetArgs([]string{"--socket", fa.sock, "cancel", "17.x"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "bad process number") {
		t.Errorf("17.x: %v", err)
	}
}

// Every DUCC program name and ducc_services verb leads to a ducc command.
func TestDUCCNamesExist(t *testing.T) {
	root := newRoot("dev", nil)
	for name, sub := range duccPrograms {
		if c, _, err := root.Find(sub); err != nil || c.Name() != sub[len(sub)-1] {
			t.Errorf("%s → %q: no such command (%v)", name, sub, err)
		}
	}
	for verb, sub := range duccServiceVerbs {
		if c, _, err := root.Find([]string{"services", sub}); err != nil || c.Name() != sub {
			t.Errorf("ducc_services %s → services %s: no such command (%v)", verb, sub, err)
		}
	}
}

// ducc cancel of work that has already ended says how and when it ended,
// goes on with the other ids and exits 1 (it printed the old state and
// exited 0).
func TestCancelEnded(t *testing.T) {
	fa := newFakeAgent(t)
	ended := time.Now().Add(-2 * time.Minute).UnixMilli()
	fa.handle(wire.MethodShow, func(b []byte) (any, error) {
		var r wire.IDRequest
		json.Unmarshal(b, &r)
		switch r.ID {
		case 5:
			return wire.WorkInfo{ID: 5, Kind: wire.WorkJob, State: "Completed", Completion: "EndOfJob", Ended: true, EndedAt: ended}, nil
		case 7:
			return wire.WorkInfo{ID: 7, Kind: wire.WorkManaged, State: "Completed", Completion: "ProgramExit", ExitCode: 3, Ended: true, EndedAt: ended}, nil
		}
		return wire.WorkInfo{ID: r.ID, Kind: wire.WorkJob, State: "Running"}, nil
	})
	var canceled []uint64
	fa.handle(wire.MethodCancel, func(b []byte) (any, error) {
		var r wire.CancelRequest
		json.Unmarshal(b, &r)
		canceled = append(canceled, r.ID)
		return wire.WorkInfo{ID: r.ID, Kind: wire.WorkJob, State: "Running"}, nil
	})
	root := newRoot("dev", nil)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"--socket", fa.sock, "cancel", "5", "6", "7"})
	err := root.Execute()
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFailed {
		t.Fatalf("cancel of ended work: %v, want exit 1", err)
	}
	if out.String() != "6 canceling\n" || !slices.Equal(canceled, []uint64{6}) {
		t.Errorf("stdout %q, canceled %v; want only 6 canceled", out.String(), canceled)
	}
	for _, want := range []string{"ducc: job 5 already ended at ", " ago), EndOfJob; nothing to cancel",
		"ducc: managed reservation 7 already ended at ", "ProgramExit, exit code 3; nothing to cancel"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
}
