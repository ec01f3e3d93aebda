package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuildUIMA(t *testing.T) {
	jar := filepath.Join(t.TempDir(), "ducc-uima.jar")
	if err := os.WriteFile(jar, []byte("PK"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DUCC_UIMA_JAR", jar)
	t.Setenv("DUCC_UIMA_CLASSPATH", "/u/core.jar")
	cp := jar + ":lib/app.jar:/opt/x/*:/u/core.jar"
	tests := []struct {
		name    string
		text    string
		exe     string
		args    []string
		driver  []string // DriverArgs; nil: no driver process
		wantErr string
	}{
		{
			name: "DUCC job with a collection reader",
			text: "driver_descriptor_CR = org.apache.uima.examples.cpe.FileSystemCollectionReader\n" +
				"driver_descriptor_CR_overrides = InputDirectory=/data Language='en us'\n" +
				"driver_jvm_args = -Xmx300M\n" +
				"process_descriptor_AE = desc/Aggregate.xml\nprocess_descriptor_AE_overrides = Threshold=3\n" +
				"process_descriptor_CC = org.example.Writer\nclasspath = lib/app.jar:/opt/x/*\n" +
				"process_jvm_args = -Xmx2G -Dx=y\nprocess_thread_count = 2\n",
			exe: "java",
			args: []string{"-Xmx2G", "-Dx=y", "-cp", cp, "ducc.uima.JobProcessMain",
				"--ae", "desc/Aggregate.xml", "--ae-override", "Threshold=3", "--cc", "org.example.Writer"},
			driver: []string{"-Xmx300M", "-cp", cp, "ducc.uima.DriverMain", "--cr", "org.apache.uima.examples.cpe.FileSystemCollectionReader",
				"--cr-override", "InputDirectory=/data", "--cr-override", "Language=en us"},
		},
		{
			name: "CM AE CC with items from a file and a jvm",
			text: "process_descriptor_CM = cm.xml\nprocess_descriptor_CM_overrides = A=1\nprocess_descriptor_AE = ae.xml\n" +
				"process_descriptor_CC = cc.xml\nprocess_descriptor_CC_overrides = Out=/tmp/o\njvm = /opt/jdk/bin/java\ninput_file = items\n",
			exe: "/opt/jdk/bin/java",
			args: []string{"-cp", jar + ":/u/core.jar", "ducc.uima.JobProcessMain",
				"--cm", "cm.xml", "--cm-override", "A=1", "--ae", "ae.xml", "--cc", "cc.xml", "--cc-override", "Out=/tmp/o"},
		},
		{
			name:   "deployment descriptor by DUCC's other name",
			text:   "process_DD = dd.xml\ndriver_descriptor_CR = cr.xml\n",
			exe:    "java",
			args:   []string{"-cp", jar + ":/u/core.jar", "ducc.uima.JobProcessMain", "--dd", "dd.xml"},
			driver: []string{"-cp", jar + ":/u/core.jar", "ducc.uima.DriverMain", "--cr", "cr.xml"},
		},
		{name: "reader without a pipeline", text: "driver_descriptor_CR = cr.xml\n", wantErr: "driver_descriptor_CR needs a pipeline"},
		{name: "pipeline and a worker command", text: "process_descriptor_AE = ae.xml\nprocess_executable = /bin/cat\n", wantErr: "drop process_executable"},
		{name: "DD and AE", text: "process_descriptor_DD = dd.xml\nprocess_descriptor_AE = ae.xml\n", wantErr: "process_descriptor_DD names the whole pipeline"},
		{name: "overrides without descriptor", text: "process_descriptor_AE = ae.xml\nprocess_descriptor_CC_overrides = A=1\n", wantErr: "process_descriptor_CC_overrides without process_descriptor_CC"},
		{name: "override not name=value", text: "process_descriptor_AE = ae.xml\nprocess_descriptor_AE_overrides = A=1 oops\n", wantErr: `"oops" is not Name=value`},
		{name: "reader and an input file", text: "driver_descriptor_CR = cr.xml\nprocess_descriptor_AE = ae.xml\ninput_file = items\n", wantErr: "drop input_file"},
		{name: "class path without UIMA", text: "process_executable = /bin/cat\nclasspath = a.jar\n", wantErr: "for UIMA jobs"},
		{name: "driver JVM without reader", text: "process_descriptor_AE = ae.xml\ndriver_jvm_args = -Xmx1G\n", wantErr: "no driver process"},
		{name: "exec protocol", text: "process_descriptor_AE = ae.xml\nworker_protocol = exec\n", wantErr: "drop worker_protocol"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, _, err := ParseProperties([]byte(tc.text), "j", "/spec", func(string) (string, bool) { return "", false }, KindJob)
			if err != nil {
				t.Fatal(err)
			}
			j, err := BuildJob(raw, "/work")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if j.Spec.Executable != tc.exe || !slices.Equal(j.Spec.Args, tc.args) || j.Spec.WorkerProtocol != "stream" {
				t.Errorf("job process %q %q (%s), want %q %q", j.Spec.Executable, j.Spec.Args, j.Spec.WorkerProtocol, tc.exe, tc.args)
			}
			if tc.driver == nil {
				if j.Spec.DriverExecutable != "" {
					t.Errorf("driver %q %q, want none", j.Spec.DriverExecutable, j.Spec.DriverArgs)
				}
			} else if j.Spec.DriverExecutable != tc.exe || !slices.Equal(j.Spec.DriverArgs, tc.driver) {
				t.Errorf("driver %q %q, want %q %q", j.Spec.DriverExecutable, j.Spec.DriverArgs, tc.exe, tc.driver)
			}
			if err := ValidateJob(j.Spec); err != nil {
				t.Errorf("ValidateJob: %v", err)
			}
		})
	}
}

// A UIMA job is refused at once where ducc-uima.jar is missing, saying
// how to get it (it used to be submitted and end with a Java stack trace:
// "Could not find or load main class ducc.uima.DriverMain").
func TestBuildUIMAWithoutTheJar(t *testing.T) {
	raw, _, err := ParseProperties([]byte("process_descriptor_AE = ae.xml\n"), "j", "/spec", func(string) (string, bool) { return "", false }, KindJob)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DUCC_UIMA_JAR", "/no/such/ducc-uima.jar")
	_, err = BuildJob(raw, "/work")
	for _, want := range []string{"ducc-uima.jar, which runs its pipeline, is missing: $DUCC_UIMA_JAR names /no/such/ducc-uima.jar", "make java", DefaultUIMAJar} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
	t.Setenv("DUCC_UIMA_JAR", "")
	if _, err := os.Stat(DefaultUIMAJar); err == nil {
		t.Skipf("%s is installed", DefaultUIMAJar)
	}
	_, err = BuildJob(raw, "/work")
	if err == nil || !strings.Contains(err.Error(), "it is not at ") || !strings.Contains(err.Error(), "dist/ducc-uima.jar, "+DefaultUIMAJar) {
		t.Errorf("error %v, want one naming where the jar was looked for", err)
	}
	// A job without UIMA keys needs no jar.
	if _, err := BuildJob(Raw{"process_executable": {S: "/bin/cat"}}, "/work"); err != nil {
		t.Errorf("a plain job: %v", err)
	}
}

func TestUIMAPathsDefault(t *testing.T) {
	t.Setenv("DUCC_UIMA_JAR", "")
	t.Setenv("DUCC_UIMA_CLASSPATH", "")
	jar, cp := UIMAPaths()
	// The test binary lives in a temporary folder: neither a package nor
	// a source tree is beside it.
	if jar != DefaultUIMAJar || cp != DefaultUIMAClasspath {
		t.Errorf("UIMAPaths() = %q, %q; want the defaults", jar, cp)
	}
}
