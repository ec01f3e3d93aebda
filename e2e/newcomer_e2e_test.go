package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// duccWith runs the CLI against sock with stdin and extra environment.
func duccWith(sock string, stdin *os.File, env []string, args ...string) (string, string, int) {
	cmd := exec.Command(duccBin, args...)
	cmd.Env = append(append(os.Environ(), "DUCC_SOCKET="+sock), env...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return out.String(), errb.String(), code
}

// TestNewcomerAnswers: what a newcomer tried that answered wrongly, or
// silently, with exit 0 (issue 26), against a dev cluster: each now says
// what is wrong and exits with a code that says so.
func TestNewcomerAnswers(t *testing.T) {
	c := startCluster(t)
	out, errs, code := c.ducc("run", "--detach", "--", "true")
	if code != 0 {
		t.Fatalf("run --detach: exit %d: %s", code, errs)
	}
	run := regexp.MustCompile(`\d+`).FindString(out)
	c.waitEnd(t, run, time.Minute)

	dir := c.dir
	spec := filepath.Join(dir, "items.yaml")
	if err := os.WriteFile(spec, []byte("process_executable: /bin/echo\nworker_protocol: exec\nprocess_memory_size: 256M\ninput_items: [a, b]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	items := filepath.Join(dir, "two-thousand.txt")
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		b.WriteString(strings.Repeat("x", i%7+1) + "\n")
	}
	if err := os.WriteFile(items, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("process_executable: /bin/echo\nprocess_memmory_size: 1G\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	uima := filepath.Join(dir, "uima.properties")
	if err := os.WriteFile(uima, []byte("process_descriptor_AE = desc/Aggregate.xml\ninput_file = "+items+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin := func(t *testing.T, path string) *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}

	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		env   []string
		code  int
		want  []string
		not   []string
	}{
		{name: "history of an unknown state", args: []string{"history", "--state", "bogus"}, code: 2,
			want: []string{`--state "bogus" is not a state of ended work`, "EndOfJob", "FAILED"}},
		{name: "history of an unknown state, json", args: []string{"history", "--json", "--state", "bogus"}, code: 2,
			want: []string{`--state "bogus" is not a state of ended work`}},
		{name: "history of sacct's FAILED", args: []string{"history", "--state", "failed"}, code: 0},
		{name: "history of sacct's COMPLETED", args: []string{"history", "--state", "completed"}, code: 0, want: []string{run + " "}},
		{name: "cancel of ended work", args: []string{"cancel", run}, code: 1,
			want: []string{"managed reservation " + run + " already ended at ", "ProgramExit, exit code 0", "nothing to cancel"}},
		{name: "results of a run", args: []string{"results", run}, code: 2,
			want: []string{run + " is a managed reservation ('ducc run'), not a job", "'ducc logs " + run + "'"}, not: []string{"no job"}},
		{name: "services list", args: []string{"services", "list"}, code: 0, want: []string{"ENDPOINT"}, not: []string{"Usage:"}},
		{name: "items piped with a spec that has items", args: []string{"submit", spec}, stdin: items, code: 2,
			want: []string{"standard input has data, but " + spec + " gives 2 items in input_items", "--input-file -"}},
		{name: "unknown key", args: []string{"submit", typo}, code: 2,
			want: []string{`unknown key "process_memmory_size"; did you mean "process_memory_size"?`, "'ducc submit --help' lists the keys"},
			not:  []string{"scheduling_class, "}},
		{name: "negative memory", args: []string{"run", "--memory", "-1G", "--", "true"}, code: 2,
			want: []string{"ducc: --memory: "}, not: []string{"process_memory_size"}},
		{name: "unknown class for run", args: []string{"run", "--class", "nosuch", "--", "true"}, code: 2,
			want: []string{`unknown class "nosuch"; the classes 'ducc run' and services may use (FIXED_SHARE) are: `}, not: []string{"normal"}},
		{name: "UIMA job without ducc-uima.jar", args: []string{"submit", uima}, env: []string{"DUCC_UIMA_JAR=/nonexistent/ducc-uima.jar"}, code: 2,
			want: []string{"ducc-uima.jar, which runs its pipeline, is missing", "make java"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in *os.File
			if tc.stdin != "" {
				in = stdin(t, tc.stdin)
			}
			out, errs, code := duccWith(c.sock, in, tc.env, tc.args...)
			all := out + errs
			if code != tc.code {
				t.Errorf("ducc %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), code, tc.code, all)
			}
			flat := strings.Join(strings.Fields(all), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("ducc %s does not say %q:\n%s", strings.Join(tc.args, " "), w, all)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(all, n) {
					t.Errorf("ducc %s says %q:\n%s", strings.Join(tc.args, " "), n, all)
				}
			}
		})
	}
	// Nothing was submitted by the refused submissions.
	out, _, _ = c.ducc("jobs", "--all", "-o", "id", "--noheader")
	if ids := strings.Fields(out); len(ids) != 1 || ids[0] != run {
		t.Errorf("work after the refusals: %q, want only %s", ids, run)
	}
}
