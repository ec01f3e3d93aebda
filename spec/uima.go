package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// UIMA is what a DUCC job spec says about a UIMA job: the collection
// reader that the driver process runs, the pipeline of the job processes
// and their JVMs. BuildJob turns it into a stream-protocol job whose
// process_executable and driver_executable are JVMs running ducc-uima.jar
// (docs/jobs.md, "UIMA jobs").
type UIMA struct {
	CR, AE, CM, CC, DD            string
	CROverrides, AEOverrides      []string
	CMOverrides, CCOverrides      []string
	Classpath, JVM                string
	DriverJVMArgs, ProcessJVMArgs []string
}

// The main classes of ducc-uima.jar (java/ in the repository).
const (
	uimaDriverMain     = "ducc.uima.DriverMain"
	uimaJobProcessMain = "ducc.uima.JobProcessMain"
)

// Where ducc-uima.jar and UIMA's jars are, by default: the package's
// place and Debian's UIMA packages.
const (
	DefaultUIMAJar       = "/usr/share/ducc/ducc-uima.jar"
	DefaultUIMAClasspath = "/usr/share/java/uimaj-core.jar:/usr/share/java/uimaj-cpe.jar"
)

// uimaPaths are the class path entries ducc adds to a UIMA job's JVMs:
// its own jar and UIMA's. missing, when not "", says that ducc-uima.jar
// is not where it was looked for, and where that was.
type uimaPaths struct {
	jar, uima string
	missing   string
}

// UIMAPaths finds ducc-uima.jar and UIMA's jars for a job submitted from
// this machine; the job's nodes must have them at the same paths (the
// packages put them there). ducc-uima.jar is $DUCC_UIMA_JAR, else the
// first that exists of share/ducc/ducc-uima.jar beside the ducc binary's
// folder (an installed package), dist/ducc-uima.jar beside it (a source
// tree after make java), else DefaultUIMAJar. UIMA's jars are
// $DUCC_UIMA_CLASSPATH, else DefaultUIMAClasspath. A UIMA job is refused
// when the jar is in none of these places (BuildJob).
func UIMAPaths() (jar, uimaClasspath string) {
	p := defaultUIMAPaths()
	return p.jar, p.uima
}

func defaultUIMAPaths() uimaPaths {
	p := uimaPaths{jar: os.Getenv("DUCC_UIMA_JAR"), uima: os.Getenv("DUCC_UIMA_CLASSPATH")}
	if p.uima == "" {
		p.uima = DefaultUIMAClasspath
	}
	if p.jar != "" {
		if !isFile(p.jar) {
			p.missing = "$DUCC_UIMA_JAR names " + p.jar + ", which is not a file"
		}
		return p
	}
	p.jar = DefaultUIMAJar
	var looked []string
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dir := filepath.Dir(exe)
		for _, c := range []string{
			filepath.Join(dir, "..", "share", "ducc", "ducc-uima.jar"),
			filepath.Join(dir, "..", "dist", "ducc-uima.jar"),
		} {
			c = filepath.Clean(c)
			if isFile(c) {
				p.jar = c
				return p
			}
			looked = append(looked, c)
		}
	}
	if !isFile(DefaultUIMAJar) {
		p.missing = "it is not at " + strings.Join(append(looked, DefaultUIMAJar), ", ")
	}
	return p
}

// isFile reports whether path is a regular file (through symlinks).
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// given reports whether any UIMA key was given.
func (u *UIMA) given() bool {
	return u.CR != "" || u.pipeline() || u.Classpath != "" || u.JVM != "" ||
		len(u.CROverrides)+len(u.AEOverrides)+len(u.CMOverrides)+len(u.CCOverrides)+len(u.DriverJVMArgs)+len(u.ProcessJVMArgs) > 0
}

// pipeline reports whether the job processes run a UIMA pipeline.
func (u *UIMA) pipeline() bool {
	return u.AE != "" || u.CM != "" || u.CC != "" || u.DD != ""
}

// buildUIMA turns the UIMA keys of j into its job processes and driver
// process; a job without them is left alone.
func buildUIMA(j *Job, paths func() uimaPaths) error {
	u := &j.UIMA
	if !u.given() {
		return nil
	}
	if !u.pipeline() {
		if u.CR != "" {
			return errors.New("driver_descriptor_CR needs a pipeline for the job processes: give process_descriptor_AE (or process_descriptor_CM/_AE/_CC, or process_descriptor_DD)")
		}
		return errors.New("classpath, jvm, process_jvm_args, driver_jvm_args and the _overrides keys are for UIMA jobs: give the pipeline with process_descriptor_AE (or _CM/_AE/_CC, or process_descriptor_DD); a worker command takes its options in process_executable_args")
	}
	if j.Spec.Executable != "" || len(j.Spec.Args) > 0 {
		return errors.New("a UIMA job's job processes are JVMs that ducc starts for the process_descriptor_* keys: drop process_executable and process_executable_args (JVM options go in process_jvm_args, jars in classpath)")
	}
	if j.Spec.WorkerProtocol != "" && j.Spec.WorkerProtocol != wire.ProtocolStream {
		return fmt.Errorf("a UIMA job's job processes speak the %s protocol: drop worker_protocol %s", wire.ProtocolStream, j.Spec.WorkerProtocol)
	}
	if u.DD != "" && (u.AE != "" || u.CM != "" || u.CC != "") {
		return errors.New("process_descriptor_DD names the whole pipeline: give it alone, or process_descriptor_CM/_AE/_CC without it")
	}
	for _, o := range []struct {
		name      string
		desc      string
		overrides []string
	}{
		{"driver_descriptor_CR", u.CR, u.CROverrides},
		{"process_descriptor_CM", u.CM, u.CMOverrides},
		{"process_descriptor_AE", u.AE, u.AEOverrides},
		{"process_descriptor_CC", u.CC, u.CCOverrides},
	} {
		if o.desc == "" && len(o.overrides) > 0 {
			return fmt.Errorf("%s_overrides without %s: say which descriptor the overrides are for", o.name, o.name)
		}
		for _, kv := range o.overrides {
			if i := strings.IndexByte(kv, '='); i <= 0 {
				return fmt.Errorf("%s_overrides: %q is not Name=value (separate several with blanks; quote a value with blanks: Name='a b')", o.name, kv)
			}
		}
	}
	if len(u.DriverJVMArgs) > 0 && u.CR == "" {
		return errors.New("driver_jvm_args without driver_descriptor_CR: there is no driver process to give them to")
	}
	if u.CR != "" && j.Spec.DriverExecutable != "" {
		return errors.New("driver_descriptor_CR runs the collection reader as the job's driver process: drop driver_executable and driver_executable_args")
	}
	if u.CR != "" && (j.InputFile != "" || j.HaveItems) {
		return errors.New("driver_descriptor_CR makes the work items: drop input_file and input_items")
	}
	p := paths()
	if p.missing != "" {
		return fmt.Errorf("this is a UIMA job, and ducc-uima.jar, which runs its pipeline, is missing: %s. "+
			"In a source tree, build it with 'make java' ('make build' does when javac is installed; Debian: "+
			"apt install default-jdk-headless libuima-core-java); or install the ducc package, which puts it at %s; "+
			"or set DUCC_UIMA_JAR to its path. Every node of the job needs it at the same path", p.missing, DefaultUIMAJar)
	}
	var cp []string
	for _, e := range []string{p.jar, u.Classpath, p.uima} {
		if e = strings.Trim(strings.TrimSpace(e), ":"); e != "" {
			cp = append(cp, e)
		}
	}
	classpath := strings.Join(cp, ":")
	jvm := u.JVM
	if jvm == "" {
		jvm = "java"
	}
	args := append(append([]string{}, u.ProcessJVMArgs...), "-cp", classpath, uimaJobProcessMain)
	args = appendDescriptor(args, "cm", u.CM, u.CMOverrides)
	args = appendDescriptor(args, "ae", u.AE, u.AEOverrides)
	args = appendDescriptor(args, "cc", u.CC, u.CCOverrides)
	args = appendDescriptor(args, "dd", u.DD, nil)
	j.Spec.Executable, j.Spec.Args, j.Spec.WorkerProtocol = jvm, args, wire.ProtocolStream
	if u.CR != "" {
		d := append(append([]string{}, u.DriverJVMArgs...), "-cp", classpath, uimaDriverMain)
		j.Spec.DriverExecutable, j.Spec.DriverArgs = jvm, appendDescriptor(d, "cr", u.CR, u.CROverrides)
	}
	return nil
}

// appendDescriptor adds --part D and its --part-override N=V arguments.
func appendDescriptor(args []string, part, desc string, overrides []string) []string {
	if desc == "" {
		return args
	}
	args = append(args, "--"+part, desc)
	for _, o := range overrides {
		args = append(args, "--"+part+"-override", o)
	}
	return args
}
