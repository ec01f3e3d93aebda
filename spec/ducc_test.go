package spec

import (
	"strings"
	"testing"
)

// DUCC's own spec files must read in one run: aliases and keys DUCC
// accepts silently are taken, every key ducc does not take is named in
// one error, and an undefined ${VAR} is a warning, as in DUCC.
func TestDUCCSpecForms(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	tests := []struct {
		name      string
		text      string
		wantErr   []string // all in the error; nil: no error
		wantWarn  []string // all in the warnings
		wantRaw   map[string]string
		notInWarn string
	}{
		{
			name:    "aliases",
			text:    "process_executable = /bin/true\nprocess_thread_count = 3\n",
			wantRaw: map[string]string{"process_pipeline_count": "3"},
		},
		{
			name:     "ignored keys warn",
			text:     "process_executable = /bin/true\nclasspath_order = ducc-before-user\nprocess_get_meta_time_max = 5\n",
			wantWarn: []string{"t:2: classpath_order is ignored", "t:3: process_get_meta_time_max is ignored"},
			wantRaw:  map[string]string{"process_executable": "/bin/true"},
		},
		{
			name:     "undefined variable stays",
			text:     "process_executable = ${NO_SUCH_DUCC_VAR}/bin/x\n",
			wantWarn: []string{"t:1: ${NO_SUCH_DUCC_VAR} is not defined"},
			wantRaw:  map[string]string{"process_executable": "${NO_SUCH_DUCC_VAR}/bin/x"},
		},
		{
			name: "all unknown keys at once",
			text: "driver_exception_handler = org.example.Handler\n" +
				"all_in_one = local\nprocess_error_window_size = 3\nbogus_key = 1\nprocess_executable = x\n",
			wantErr: []string{"4 keys are not taken by ducc", "line 1: key \"driver_exception_handler\" is not used by ducc",
				"line 2: key \"all_in_one\" is not used by ducc", "line 3: key \"process_error_window_size\"", "line 4: unknown key \"bogus_key\"",
				"'ducc submit --help' lists the keys"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, warn, err := ParseProperties([]byte(tc.text), "t", "", noEnv, KindJob)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error; want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(warn, "\n")
			for _, w := range tc.wantWarn {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q do not contain %q", all, w)
				}
			}
			if len(tc.wantWarn) == 0 && len(warn) > 0 {
				t.Errorf("unexpected warnings %q", warn)
			}
			for k, v := range tc.wantRaw {
				if raw[k].S != v {
					t.Errorf("%s = %q, want %q", k, raw[k].S, v)
				}
			}
		})
	}
}

func TestDUCCSpecFormsYAML(t *testing.T) {
	raw, warn, err := ParseYAML([]byte("process_executable: x\nprocess_thread_count: 2\nclasspath_order: user-before-ducc\n"), "j.yaml", "", KindJob)
	if err != nil {
		t.Fatal(err)
	}
	if raw["process_pipeline_count"].S != "2" {
		t.Errorf("process_thread_count not read as process_pipeline_count: %v", raw)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], "j.yaml:3: classpath_order is ignored") {
		t.Errorf("warnings = %q", warn)
	}
	_, _, err = ParseYAML([]byte("process_executable: x\nall_in_one: local\ndriver_exception_handler: h\n"), "j.yaml", "", KindJob)
	if err == nil || !strings.Contains(err.Error(), "2 keys are not taken") || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error = %v; want both keys named", err)
	}
}

func TestExpandEnv(t *testing.T) {
	environ := []string{"HOME=/home/a", "UIMA_HOME=/opt/uima", "UIMA_CP=/x", "LANG=C"}
	tests := []struct {
		env, want []string
	}{
		{[]string{"A=1"}, []string{"A=1"}},
		{[]string{"HOME"}, []string{"HOME=/home/a"}},
		{[]string{"UNSET"}, nil},
		{[]string{"UIMA*", "LANG=fr"}, []string{"UIMA_HOME=/opt/uima", "UIMA_CP=/x", "LANG=fr"}},
		{[]string{"HOME", "HOME=/tmp"}, []string{"HOME=/tmp"}},
	}
	for _, tc := range tests {
		got := ExpandEnv(tc.env, environ)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("ExpandEnv(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
	raw, _, err := ParseProperties([]byte("process_executable = x\nenvironment = TERM=xterm LANG UIMA*\n"), "t", "", nil, KindJob)
	if err != nil {
		t.Fatal(err)
	}
	j, err := BuildJob(raw, "/")
	if err != nil {
		t.Fatalf("DUCC environment forms refused: %v", err)
	}
	if got := strings.Join(j.Spec.Environment, " "); got != "TERM=xterm LANG UIMA*" {
		t.Errorf("environment = %q", got)
	}
	raw, _, _ = ParseProperties([]byte("process_executable = x\nenvironment = 9BAD\n"), "t", "", nil, KindJob)
	if _, err := BuildJob(raw, "/"); err == nil || !strings.Contains(err.Error(), "NAME=VALUE, NAME or PREFIX*") {
		t.Errorf("bad entry error = %v", err)
	}
}
