package spec

import (
	"strings"
	"testing"
)

func TestDriverKeys(t *testing.T) {
	for _, tc := range []struct {
		name, props, err string
		check            func(t *testing.T, j *Job)
	}{
		{name: "driver", props: "process_executable = w\ndriver_executable = /opt/reader\ndriver_executable_args = --corpus \"/data/c 1\"\ndriver_memory_size = 1G\n",
			check: func(t *testing.T, j *Job) {
				s := j.Spec
				if s.DriverExecutable != "/opt/reader" || strings.Join(s.DriverArgs, "|") != "--corpus|/data/c 1" || s.DriverMemory != 1<<30 {
					t.Errorf("spec %+v", s)
				}
			}},
		{name: "driver and input_file", props: "process_executable = w\ndriver_executable = /opt/reader\ninput_file = /x\n",
			err: "a job has one item source"},
		{name: "arguments without a driver", props: "process_executable = w\ndriver_executable_args = -v\n",
			err: "driver_executable_args needs a driver_executable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _, err := ParseProperties([]byte(tc.props), "t", "", nil, KindJob)
			if err != nil {
				t.Fatal(err)
			}
			j, err := BuildJob(raw, "/")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, j)
			if err := ValidateJob(j.Spec); err != nil {
				t.Errorf("ValidateJob: %v", err)
			}
		})
	}
}
