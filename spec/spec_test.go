package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

func writeSpec(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSpecYAMLAllKeys(t *testing.T) {
	p := writeSpec(t, "job.yaml", `
description: word count
scheduling_class: normal
process_executable: ./worker.sh
process_executable_args: [-v, "two words"]
worker_protocol: exec
input_items: [a, "b c", ""]
process_memory_size: 512M
process_pipeline_count: 8
process_deployments_max: 3
process_initialization_time_max: 2.5
process_initialization_failures_cap: 5
process_failures_limit: 7
process_per_item_time_max: 90s
max_job_errors: 4
max_item_retries: 2
service_dependency: [CUSTOM:db, "HTTP:http://x:8080/ping"]
working_directory: /tmp/wd
log_directory: logs
environment: {LANG: C.UTF-8, EMPTY: }
machine_list: n1, n2
umask: 077
share_with_group: proj
wait_for_completion: true
cancel_on_interrupt: no
attach_console: false
`)
	raw, _, err := ParseFile(p, KindJob)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := BuildJob(raw, "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	want := wire.JobSpec{
		Description: "word count", Class: "normal",
		Executable: filepath.Join(dir, "worker.sh"), Args: []string{"-v", "two words"},
		WorkerProtocol: "exec", Memory: 512 << 20, Pipelines: 8, DeploymentsMax: 3,
		InitTimeMaxMS: 150_000, InitFailuresCap: 5, FailuresLimit: 7, PerItemTimeMaxMS: 90_000,
		MaxJobErrors: 4, MaxItemRetries: 2,
		ServiceDependency: []string{"CUSTOM:db", "HTTP:http://x:8080/ping"},
		WorkingDirectory:  "/tmp/wd", LogDirectory: filepath.Join(dir, "logs"),
		Environment: []string{"LANG=C.UTF-8", "EMPTY="},
		MachineList: []string{"n1", "n2"}, Umask: "0077", ShareGroup: "proj",
	}
	if !reflect.DeepEqual(jr.Spec, want) {
		t.Fatalf("spec\n got %+v\nwant %+v", jr.Spec, want)
	}
	if !jr.Wait || jr.CancelOnInterrupt || jr.AttachConsole || !jr.HaveItems || len(jr.Items) != 3 {
		t.Fatalf("CLI behaviour wrong: %+v", jr)
	}
}

func TestSpecProperties(t *testing.T) {
	t.Setenv("DUCC_TEST_DATA", "/data")
	p := writeSpec(t, "job.properties", `# a DUCC job
! also a comment
description = counts ${DUCC_TEST_DATA} words
process_executable: /usr/bin/python3
process_executable_args  -u worker.py \
    --model "${DUCC_TEST_DATA}/m 1" \
    --tab\tx
working_directory = ${DUCC_TEST_DATA}/work
log_directory = ${working_directory}/logs
environment = A=1 B='two words' C=$${literal}
process_memory_size = 4GiB
process_initialization_time_max = 10
service_dependency = CUSTOM:a, CUSTOM:b CUSTOM:c
wait_for_completion
input_file = items.txt
`)
	raw, _, err := ParseFile(p, KindJob)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := BuildJob(raw, "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	sp := jr.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"description", sp.Description, "counts /data words"},
		{"executable", sp.Executable, "/usr/bin/python3"},
		{"args", sp.Args, []string{"-u", "worker.py", "--model", "/data/m 1", "--tab", "x"}},
		{"working_directory", sp.WorkingDirectory, "/data/work"},
		{"log_directory", sp.LogDirectory, "/data/work/logs"},
		{"environment", sp.Environment, []string{"A=1", "B=two words", "C=${literal}"}},
		{"memory", sp.Memory, int64(4 << 30)},
		{"init time", sp.InitTimeMaxMS, int64(600_000)},
		{"services", sp.ServiceDependency, []string{"CUSTOM:a", "CUSTOM:b", "CUSTOM:c"}},
		{"wait", jr.Wait, true},
		{"input_file", jr.InputFile, filepath.Join(filepath.Dir(p), "items.txt")},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
	// The tab escape sits inside --tab\tx: Java unescapes it to a real tab,
	// which the shell split then separates.
}

func TestSpecDefaults(t *testing.T) {
	jr, err := BuildJob(Raw{"process_executable": {S: "true"}}, "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	want := wire.JobSpec{Executable: "true", WorkingDirectory: "/home/u"}
	if !reflect.DeepEqual(jr.Spec, want) {
		t.Fatalf("got %+v, want %+v", jr.Spec, want)
	}
	if jr.Wait || jr.InputFile != "" || jr.HaveItems {
		t.Fatalf("defaults: %+v", jr)
	}
	jr, err = BuildJob(Raw{"process_executable": {S: "true"}, "cancel_on_interrupt": {S: "true"}}, "/")
	if err != nil || !jr.Wait {
		t.Fatalf("cancel_on_interrupt must imply waiting: %+v %v", jr, err)
	}
}

func TestSpecErrors(t *testing.T) {
	tests := []struct {
		name, file, text string
		want             []string // substrings of the error
	}{
		{"unknown YAML key", "j.yaml", "process_executable: x\nprocess_memmory_size: 4G\n",
			[]string{`line 2`, `unknown key "process_memmory_size"; did you mean "process_memory_size"?`, "'ducc submit --help' lists the keys"}},
		{"unknown properties key", "j.properties", "process_executable = x\nfoo = 1\n",
			[]string{"(properties)", "line 2", `unknown key "foo"`, "'ducc submit --help' lists the keys (as flags), docs/jobs.md"}},
		{"DUCC key with a hint", "j.properties", "driver_exception_handler = org.example.Handler\n",
			[]string{`"driver_exception_handler" is not used by ducc`, "max_job_errors"}},
		{"dashes instead of underscores", "j.yaml", "process-executable: x\n",
			[]string{`did you mean "process_executable"`}},
		{"duplicate YAML key", "j.yaml", "process_executable: x\nprocess_executable: y\n",
			[]string{"line 2", `key "process_executable" given twice`}},
		{"missing executable", "j.yaml", "description: x\n",
			[]string{"process_executable is required"}},
		{"bad number", "j.yaml", "process_executable: x\nprocess_pipeline_count: four\n",
			[]string{"process_pipeline_count", `"four" is not a whole number`}},
		{"negative", "j.yaml", "process_executable: x\nmax_item_retries: -1\n",
			[]string{"max_item_retries", "must not be negative"}},
		{"zero pipelines", "j.yaml", "process_executable: x\nprocess_pipeline_count: 0\n",
			[]string{"must be at least 1"}},
		{"bad size", "j.yaml", "process_executable: x\nprocess_memory_size: 4X\n",
			[]string{"process_memory_size", "unknown unit"}},
		{"bad minutes", "j.yaml", "process_executable: x\nprocess_per_item_time_max: soon\n",
			[]string{"process_per_item_time_max", "neither minutes"}},
		{"minutes that overflow", "j.yaml", "process_executable: x\nprocess_per_item_time_max: 153722868\n",
			[]string{"process_per_item_time_max", "too large: at most 153722867 minutes"}},
		{"zero minutes", "j.yaml", "process_executable: x\nprocess_initialization_time_max: 0\n",
			[]string{"more than zero"}},
		{"bad protocol", "j.yaml", "process_executable: x\nworker_protocol: uima\n",
			[]string{`unknown worker protocol "uima"`, `"stream"`, `"exec"`}},
		{"input_items in properties", "j.properties", "process_executable = x\ninput_items = a\n",
			[]string{"input_items is only accepted in YAML"}},
		{"input_items not a list", "j.yaml", "process_executable: x\ninput_items: a\n",
			[]string{"input_items is a list"}},
		{"both input_file and input_items", "j.yaml", "process_executable: x\ninput_file: f\ninput_items: [a]\n",
			[]string{"both input_file and input_items"}},
		{"list for a scalar key", "j.yaml", "process_executable: [a, b]\n",
			[]string{"takes one value, not a list"}},
		{"bad environment", "j.yaml", "process_executable: x\nenvironment: [A=1, \"B C\"]\n",
			[]string{`"B C" is not NAME=VALUE`}},
		{"unterminated quote", "j.properties", "process_executable = x\nprocess_executable_args = -c 'echo\n",
			[]string{"unterminated '"}},
		{"bad bool", "j.yaml", "process_executable: x\nwait_for_completion: maybe\n",
			[]string{`"maybe" is not true or false`}},
		{"not a mapping", "j.yaml", "- a\n- b\n",
			[]string{"a job spec is a mapping"}},
		{"neither format", "j.spec", "process_executable: [x\n  - : :\n",
			[]string{"neither a properties file", "nor YAML"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeSpec(t, tc.file, tc.text)
			raw, _, err := ParseFile(p, KindJob)
			if err == nil {
				_, err = BuildJob(raw, "/")
			}
			if err == nil {
				t.Fatalf("no error; want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSpecUnknownExtensionFallsBackToYAML(t *testing.T) {
	p := writeSpec(t, "job.spec", "process_executable: x\nprocess_executable_args:\n  - a b\n  - c\n")
	raw, _, err := ParseFile(p, KindJob)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := BuildJob(raw, "/")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jr.Spec.Args, []string{"a b", "c"}) {
		t.Fatalf("args %q", jr.Spec.Args)
	}
}

func TestSpecSplitShell(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b ", []string{"a", "b"}},
		{`-c 'echo "$X"; exit 3'`, []string{"-c", `echo "$X"; exit 3`}},
		{`"a \"b\" \\ \$HOME" c\ d`, []string{`a "b" \ $HOME`, "c d"}},
		{`''`, []string{""}},
		{`a'b'"c"`, []string{"abc"}},
	}
	for _, tc := range tests {
		got, err := SplitShell(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitShell(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestSpecPropertiesSyntax(t *testing.T) {
	tests := []struct {
		text, key, want string
	}{
		{"description=a=b", "description", "a=b"},
		{"description : x", "description", "x"},
		{"description x y  ", "description", "x y"},
		{`description = caf\u00e9`, "description", "café"},
		{"description = a \\\\", "description", `a \`},
		{"description = one \\\n   two", "description", "one two"},
		{"   description=indented", "description", "indented"},
		{"description=", "description", ""},
	}
	for _, tc := range tests {
		raw, _, err := ParseProperties([]byte(tc.text), "t", "", func(string) (string, bool) { return "", false }, KindJob)
		if err != nil {
			t.Errorf("%q: %v", tc.text, err)
			continue
		}
		if got := raw[tc.key].S; got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestSpecExamples keeps the shipped examples valid.
func TestSpecExamples(t *testing.T) {
	files, _ := filepath.Glob("../examples/*/*.yaml")
	props, _ := filepath.Glob("../examples/*/*.properties")
	files = append(files, props...)
	if len(files) < 5 {
		t.Fatalf("found only %d example specs", len(files))
	}
	for _, f := range files {
		if d := filepath.Base(filepath.Dir(f)); d == "services" || d == "uima-as" {
			continue // service registrations: TestServiceExamples, TestUIMAASExamples
		}
		raw, _, err := ParseFile(f, KindJob)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		jr, err := BuildJob(raw, "/")
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if strings.HasPrefix(jr.Spec.Executable, "/") {
			if _, err := os.Stat(jr.Spec.Executable); err != nil {
				t.Errorf("%s: worker %s: %v", f, jr.Spec.Executable, err)
			}
		}
		if jr.InputFile != "" {
			if _, err := os.Stat(jr.InputFile); err != nil {
				t.Errorf("%s: input: %v", f, err)
			}
		}
	}
}

// TestServiceExamples: the example registrations parse strictly.
func TestServiceExamples(t *testing.T) {
	files, _ := filepath.Glob("../examples/services/*.yaml")
	if len(files) < 2 {
		t.Fatalf("found only %d example registrations", len(files))
	}
	for _, f := range files {
		raw, _, err := ParseFile(f, KindService)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		sp, _, err := BuildService(raw)
		if err != nil || sp.Endpoint == "" || sp.Executable == "" {
			t.Errorf("%s: %v %+v", f, err, sp)
			continue
		}
		if len(sp.Args) == 0 {
			t.Errorf("%s: no script", f)
		} else if _, err := os.Stat(filepath.Join(sp.WorkingDirectory, sp.Args[0])); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// An unknown key gets the nearest keys of its kind (by their names, DUCC
// aliases and flags), not a list of every key on one line.
func TestUnknownKeySuggestions(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		key  string
		want string // "" = no suggestion
	}{
		{KindJob, "process_memmory_size", `did you mean "process_memory_size"?`},
		{KindJob, "proces_executable", `did you mean "process_executable"`},
		{KindJob, "process-pipline-count", `did you mean "process_pipeline_count"?`},
		{KindJob, "process_thread_cont", `did you mean "process_pipeline_count"?`}, // DUCC's alias, misspelt
		{KindJob, "memory", `did you mean "process_gpu_memory", "process_memory_size" or "driver_memory_size"?`},
		{KindJob, "gpus", `did you mean "process_gpus"?`}, // the flag, written as a key
		{KindJob, "input_item", `did you mean "input_items"?`},
		{KindService, "insatnces", `did you mean "instances"`},
		{KindRun, "scheduling_clas", `did you mean "scheduling_class"?`},
		{KindJob, "xyzzy", ""},
	} {
		err := unknown(tc.kind, tc.key)
		msg := err.Error()
		if tc.want == "" && strings.Contains(msg, "did you mean") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s key %q: %q, want %q", tc.kind, tc.key, msg, tc.want)
		}
		if strings.Contains(msg, "description, ") || !strings.Contains(msg, "--help' lists the keys") {
			t.Errorf("%s key %q: %q lists the keys instead of pointing to the help", tc.kind, tc.key, msg)
		}
	}
}
