package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// The UIMA tests run real JVMs with Debian's UIMA: ducc-uima.jar (java/),
// the test reader, annotators and descriptors (java/test/), and
// uima-examples' own reader and annotators. They build the jars with
// `make java-test`.

// uimaJars are the class path pieces of the UIMA tests.
type uimaJars struct {
	ducc, test, core, examples string
	root                       string // the repository
}

// classpath joins the ducc jar, extra entries and UIMA's core jar.
func (j uimaJars) classpath(extra ...string) string {
	return strings.Join(append(append([]string{j.ducc}, extra...), j.core), ":")
}

var (
	uimaOnce  sync.Once
	uimaBuilt uimaJars
	uimaSkip  string
)

// needUIMA builds the jars once, or skips the test when Java or UIMA is
// not installed (it fails instead under CI, which installs them).
func needUIMA(t testing.TB) uimaJars {
	t.Helper()
	uimaOnce.Do(func() {
		for _, tool := range []string{"java", "javac", "jar", "make"} {
			if _, err := exec.LookPath(tool); err != nil {
				uimaSkip = tool + " is not installed"
				return
			}
		}
		j := uimaJars{core: "/usr/share/java/uimaj-core.jar", examples: "/usr/share/java/uimaj-examples.jar"}
		for _, f := range []string{j.core, j.examples} {
			if _, err := os.Stat(f); err != nil {
				uimaSkip = f + " is missing"
				return
			}
		}
		root, err := filepath.Abs("..")
		if err != nil {
			uimaSkip = err.Error()
			return
		}
		j.root = root
		mk := exec.Command("make", "-s", "java-test")
		mk.Dir = root
		if out, err := mk.CombinedOutput(); err != nil {
			uimaSkip = fmt.Sprintf("make java-test failed: %v\n%s", err, out)
			return
		}
		j.ducc, j.test = filepath.Join(root, "dist", "ducc-uima.jar"), filepath.Join(root, "dist", "ducc-uima-test.jar")
		uimaBuilt = j
	})
	if uimaSkip != "" {
		msg := "UIMA tests need a JDK and Debian's UIMA (apt-get install default-jdk-headless libuima-core-java libuima-cpe-java uima-examples): " + uimaSkip
		if os.Getenv("CI") != "" || strings.HasPrefix(uimaSkip, "make java-test") {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return uimaBuilt
}

// javaProc is a JVM running one of ducc-uima.jar's mains, spoken to over
// its standard input and output.
type javaProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr bytes.Buffer
}

func startJava(t testing.TB, dir, classpath string, args ...string) *javaProc {
	t.Helper()
	p := &javaProc{t: t, cmd: exec.Command("java", append([]string{"-cp", classpath}, args...)...)}
	p.cmd.Dir = dir
	p.cmd.Stderr = &p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(make([]byte, 0, 1<<16), 8<<20)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// send writes one JSON line.
func (p *javaProc) send(v any) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write to the JVM: %v; stderr:\n%s", err, p.stderr.String())
	}
}

// recv reads one JSON line.
func (p *javaProc) recv() map[string]any {
	p.t.Helper()
	if !p.out.Scan() {
		p.t.Fatalf("the JVM closed its output (%v); stderr:\n%s", p.out.Err(), p.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
		p.t.Fatalf("JVM line %q: %v", p.out.Text(), err)
	}
	return m
}

// finish closes standard input and returns the exit code.
func (p *javaProc) finish() int {
	p.t.Helper()
	p.in.Close()
	for p.out.Scan() {
		p.t.Errorf("unexpected line after the end: %q", p.out.Text())
	}
	err := p.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0
}

// readAll drives a DriverMain to its end, asking for batch items at a
// time, and returns the items.
func readAll(t testing.TB, p *javaProc, batch int) (items []string, total float64) {
	t.Helper()
	if m := p.recv(); m["ready"] != true {
		t.Fatalf("first line %v, want ready", m)
	}
	for {
		p.send(map[string]int{"more": batch})
		got := 0
		for {
			m := p.recv()
			if tot, ok := m["total"].(float64); ok {
				total = tot
				continue
			}
			if m["end"] == true {
				return items, total
			}
			it, ok := m["item"].(string)
			if !ok {
				t.Fatalf("driver line %v", m)
			}
			items = append(items, it)
			if got++; got == batch {
				break
			}
		}
	}
}

// label is a CAS item's label.
func label(item string) string {
	f := strings.SplitN(item, " ", 3)
	if len(f) != 3 || f[0] != "uima-cas:xmi.gz" {
		return ""
	}
	return f[1]
}

// TestUIMADriverProtocol runs DriverMain with the test reader and speaks
// the driver protocol to it: ready, the total, exactly as many items as
// asked, the end as the answer to a request it cannot fill, and exit 0
// after the end without waiting for its standard input to close.
func TestUIMADriverProtocol(t *testing.T) {
	j := needUIMA(t)
	p := startJava(t, t.TempDir(), j.classpath(j.test), "ducc.uima.DriverMain",
		"--cr", "ducc.uima.test.CountingReader", "--cr-override", "Count=20")
	if m := p.recv(); m["ready"] != true {
		t.Fatalf("first line %v", m)
	}
	if m := p.recv(); m["total"] != 20.0 {
		t.Fatalf("second line %v, want the total", m)
	}
	var labels []string
	for round := range 3 {
		p.send(map[string]int{"more": 10})
		if round == 2 {
			// The reader ended with the second request: the third gets
			// the end, and no item.
			if m := p.recv(); m["end"] != true {
				t.Fatalf("third request answered %v, want the end", m)
			}
			break
		}
		for range 10 {
			m := p.recv()
			it, ok := m["item"].(string)
			if !ok {
				t.Fatalf("round %d: %v, want an item", round, m)
			}
			labels = append(labels, label(it))
		}
	}
	// Had the driver read ahead or ended early, the second round's lines
	// would have been something else than its ten items.
	for i, l := range labels {
		if l != "count:"+strconv.Itoa(i) {
			t.Fatalf("item %d has label %q", i, l)
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("driver exit: %v; stderr:\n%s", err, p.stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the driver did not exit after the end; stderr:\n%s", p.stderr.String())
	}
}

// TestUIMAInitFailures: a reader or a pipeline that cannot start prints
// the UIMA exception and exits 1; a remote delegate is refused.
func TestUIMAInitFailures(t *testing.T) {
	j := needUIMA(t)
	dd := filepath.Join(j.root, "java", "test", "resources", "ducc", "uima", "test", "dd")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"reader fails", []string{"ducc.uima.DriverMain", "--cr", "ducc.uima.test.CountingReader", "--cr-override", "FailAtInit=true"}, "CountingReader told to fail at init"},
		{"no such reader", []string{"ducc.uima.DriverMain", "--cr", "no.such.Reader"}, "neither a file nor found by name on the class path (as no/such/Reader.xml)"},
		{"undeclared override", []string{"ducc.uima.DriverMain", "--cr", "ducc.uima.test.CountingReader", "--cr-override", "Cnt=3"}, "declares no such configuration parameter; it declares Count"},
		{"annotator fails", []string{"ducc.uima.JobProcessMain", "--ae", "ducc.uima.test.WordAnnotator", "--ae-override", "FailAtInit=true"}, "WordAnnotator told to fail at init"},
		{"missing file", []string{"ducc.uima.JobProcessMain", "--ae", "nowhere/ae.xml"}, "descriptor file nowhere/ae.xml not found"},
		{"remote delegate", []string{"ducc.uima.JobProcessMain", "--dd", filepath.Join(dd, "Remote.xml")}, "has a UIMA-AS remote delegate (Words)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startJava(t, t.TempDir(), j.classpath(j.test), tc.args...)
			if p.out.Scan() {
				t.Errorf("printed %q before failing", p.out.Text())
			}
			if code := p.finish(); code != 1 || !strings.Contains(p.stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and %q", code, p.stderr.String(), tc.want)
			}
		})
	}
}

// TestUIMAJobProcessDirect feeds JobProcessMain CAS items from DriverMain
// and plain texts over the stream protocol: results, a per-item error
// with the exception, a deployment descriptor's aggregate, and
// collectionProcessComplete in every pipeline at the end.
func TestUIMAJobProcessDirect(t *testing.T) {
	j := needUIMA(t)
	dir := t.TempDir()
	d := startJava(t, dir, j.classpath(j.test), "ducc.uima.DriverMain", "--cr", "ducc.uima.test.CountingReader",
		"--cr-override", "Count=6", "--cr-override", "Marker=BOOM", "--cr-override", "MarkEvery=3")
	items, total := readAll(t, d, 4)
	if len(items) != 6 || total != 6 {
		t.Fatalf("%d items, total %v", len(items), total)
	}
	if code := d.finish(); code != 0 {
		t.Fatalf("driver exit %d", code)
	}
	items = append(items, "a plain text document")
	dd := filepath.Join(j.root, "java", "test", "resources", "ducc", "uima", "test", "dd", "WordsAndLines.xml")
	for _, pipeline := range [][]string{
		{"--ae", "ducc.uima.test.WordAnnotator", "--ae-override", "FailOn=BOOM", "--cc", "ducc.uima.test.LineWriter", "--cc-override", "OutputDirectory=" + filepath.Join(dir, "cc")},
		{"--dd", dd},
	} {
		p := startJava(t, dir, j.classpath(j.test), append([]string{"ducc.uima.JobProcessMain", "--pipelines", "2"}, pipeline...)...)
		if m := p.recv(); m["ready"] != true {
			t.Fatalf("first line %v", m)
		}
		for i, it := range items {
			p.send(map[string]string{"id": strconv.Itoa(i), "item": it})
		}
		byID := map[string]map[string]any{}
		for range items {
			m := p.recv()
			byID[m["id"].(string)] = m
		}
		if code := p.finish(); code != 0 {
			t.Fatalf("job process exit %d; stderr:\n%s", code, p.stderr.String())
		}
		failOn := pipeline[0] == "--ae"
		for i := range items {
			m := byID[strconv.Itoa(i)]
			if failOn && (i == 2 || i == 5) {
				if e, _ := m["error"].(string); !strings.Contains(e, "marked document: document "+strconv.Itoa(i)) || !strings.Contains(e, "at ducc.uima.test.WordAnnotator.process") {
					t.Errorf("item %d: %v, want the annotator's exception", i, m)
				}
				continue
			}
			res, _ := m["result"].(map[string]any)
			types, _ := res["types"].(map[string]any)
			if m["ok"] != true || types["ducc.test.Word"] == nil {
				t.Errorf("item %d: %v, want words counted", i, m)
			}
		}
		out := filepath.Join(dir, "cc")
		if !failOn {
			out = filepath.Join(dir, "linewriter-out")
		}
		want := []string{"a plain text document", "count:0", "count:1", "count:3", "count:4"}
		if !failOn {
			want = append(want, "count:2", "count:5")
			sort.Strings(want)
		}
		checkLineWriter(t, out, want, 2)
	}
}

// checkLineWriter checks the test CAS consumer's files in dir: every line
// of want once in all, and files instances each closed by
// collectionProcessComplete ("complete N"). A job's processes are stopped
// after it ended: it waits for them to complete their collection.
func checkLineWriter(t *testing.T, dir string, want []string, instances int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
		complete := len(files) > 0
		for _, f := range files {
			b, _ := os.ReadFile(f)
			complete = complete && strings.Contains(string(b), "complete ")
		}
		if complete {
			break
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	if instances > 0 && len(files) != instances {
		t.Errorf("%d CAS consumer files, want %d", len(files), instances)
	}
	var got []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		last := lines[len(lines)-1]
		if last != "complete "+strconv.Itoa(len(lines)-1) {
			t.Errorf("%s ends with %q, want collectionProcessComplete's line", f, last)
		}
		got = append(got, lines[:len(lines)-1]...)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		if len(got) > 20 || len(want) > 20 {
			t.Errorf("the CAS consumer saw %d CASes, want %d (each once); the first differences: %s", len(got), len(want), firstDiffs(got, want))
		} else {
			t.Errorf("the CAS consumer saw %q, want %q", got, want)
		}
	}
}

// TestUIMADriverMemoryFlat: a reader of 1,000,000 CASes runs to its end in
// a driver JVM of 24 MB of heap, far less than the CASes it makes: the
// driver holds one CAS at a time (back-pressure is the protocol's).
func TestUIMADriverMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 CASes: skipped in -short mode")
	}
	j := needUIMA(t)
	const n = 1_000_000
	p := startJava(t, t.TempDir(), j.classpath(j.test), "-Xmx24m", "ducc.uima.DriverMain",
		"--cr", "ducc.uima.test.CountingReader", "--cr-override", "Count="+strconv.Itoa(n))
	if m := p.recv(); m["ready"] != true {
		t.Fatalf("first line %v", m)
	}
	p.recv() // the total
	// The lines are looked at, not decoded: a million JSON decodes would
	// cost the test more than the driver.
	count, bytes := 0, 0
	for ended := false; !ended; {
		p.send(map[string]int{"more": 1000})
		for got := 0; got < 1000 && !ended; {
			if !p.out.Scan() {
				t.Fatalf("the driver closed its output after %d CASes; stderr:\n%s", count, p.stderr.String())
			}
			switch line := p.out.Bytes(); {
			case bytes0(line, `{"item": "uima-cas:xmi.gz count:`+strconv.Itoa(count)+` `):
				got++
				count++
				bytes += len(line)
			case string(line) == `{"end": true}`:
				ended = true
			default:
				t.Fatalf("after %d CASes: %.200q", count, line)
			}
		}
	}
	if count != n {
		t.Fatalf("%d CASes, want %d", count, n)
	}
	if code := p.finish(); code != 0 {
		t.Fatalf("driver exit %d; stderr:\n%s", code, p.stderr.String())
	}
	t.Logf("%d CASes, %d MB of items, through a 24 MB heap", count, bytes>>20)
}

// bytes0 reports whether b starts with prefix.
func bytes0(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// uimaFixture is a dev cluster whose CLI finds the jars of this tree.
type uimaFixture struct {
	*cluster
	jars uimaJars
	logs string
}

func newUIMAFixture(t testing.TB) *uimaFixture {
	j := needUIMA(t)
	t.Setenv("DUCC_UIMA_JAR", j.ducc)
	t.Setenv("DUCC_UIMA_CLASSPATH", j.core)
	// Prediction off (fairConfig): these jobs are short enough that the
	// scheduler would rightly not add processes, and they are about
	// several job processes.
	cfg := filepath.Join(t.TempDir(), "ducc.yaml")
	if err := os.WriteFile(cfg, []byte(fairConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "--config", cfg)
	return &uimaFixture{cluster: c, jars: j, logs: sharedLogDir(t, filepath.Join(c.dir, "logs"))}
}

// submitSpec writes a DUCC properties spec and submits it.
func (f *uimaFixture) submitSpec(t testing.TB, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(f.dir, name)
	lines = append(lines, "log_directory = "+f.logs, "process_memory_size = 1")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := f.ducc("submit", "--specification", path)
	if code != 0 {
		t.Fatalf("submit %s: exit %d: %s %s", name, code, out, errs)
	}
	fields := strings.Fields(out)
	if len(fields) < 2 || fields[0] != "Job" {
		t.Fatalf("submit printed %q", out)
	}
	return fields[1]
}

// driverItems runs DriverMain to its end and writes its items to a file,
// one per line, as ducc's driver process hands them to the job driver.
func (f *uimaFixture) driverItems(t testing.TB, name, classpath string, args ...string) (string, []string) {
	t.Helper()
	p := startJava(t, f.dir, classpath, append([]string{"ducc.uima.DriverMain"}, args...)...)
	items, _ := readAll(t, p, 500)
	if code := p.finish(); code != 0 {
		t.Fatalf("driver exit %d; stderr:\n%s", code, p.stderr.String())
	}
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(items, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, items
}

func (f *uimaFixture) results(t testing.TB, id string, flags ...string) []map[string]any {
	t.Helper()
	out, errs, code := f.ducc(append([]string{"results", id}, flags...)...)
	if code != 0 {
		t.Fatalf("results: exit %d: %s", code, errs)
	}
	var rs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("results line %q: %v", l, err)
		}
		rs = append(rs, m)
	}
	return rs
}

// TestUIMAJob: 2,000 CASes from the test reader (as the driver process
// makes them) run to the end over four job processes of two pipelines
// each; the annotator throws on one, which is in results --failed with
// its exception; the CAS consumer saw every other CAS once and each of
// its instances was completed.
func TestUIMAJob(t *testing.T) {
	f := newUIMAFixture(t)
	const n = 2000
	input, _ := f.driverItems(t, "cas-items", f.jars.classpath(f.jars.test), "--cr", "ducc.uima.test.CountingReader",
		"--cr-override", "Count="+strconv.Itoa(n), "--cr-override", "Marker=BOOM", "--cr-override", "MarkEvery=1500")
	out := filepath.Join(f.dir, "cc-out")
	id := f.submitSpec(t, "uima.job",
		"description = UIMA words",
		"classpath = "+f.jars.test,
		"process_descriptor_AE = ducc.uima.test.WordAnnotator",
		// 10 ms a CAS: long enough for the job to grow to several processes.
		"process_descriptor_AE_overrides = FailOn=BOOM SleepMs=10",
		"process_descriptor_CC = ducc.uima.test.LineWriter",
		"process_descriptor_CC_overrides = OutputDirectory="+out,
		"process_thread_count = 2",
		"process_deployments_max = 4",
		"process_jvm_args = -Xmx128m",
		"input_file = "+input)
	w := f.checkMarkedJob(t, id, out, n)
	if len(w.Procs) < 2 {
		t.Errorf("the job ran in %d job processes, want several", len(w.Procs))
	}
}

// checkMarkedJob waits for a job of the counting reader's n documents,
// every 1500th marked so that the word annotator throws (MarkEvery=1500),
// and checks that exactly document 1499 failed, with the exception, and
// that the CAS consumer wrote every other document once.
func (f *uimaFixture) checkMarkedJob(t *testing.T, id, out string, n int) wire.WorkInfo {
	t.Helper()
	w := f.waitEnd(t, id, 5*time.Minute)
	if w.Job.Done != n-1 || w.Job.Failed != 1 {
		t.Fatalf("job ended %s %q: %+v", w.Completion, w.Reason, w.Job)
	}
	failed := f.results(t, id, "--failed")
	if len(failed) != 1 || !strings.Contains(failed[0]["error"].(string), "marked document: document 1499") ||
		label(failed[0]["item"].(string)) != "count:1499" {
		t.Fatalf("failed results: %v", failed)
	}
	var want []string
	for i := range n {
		if i != 1499 {
			want = append(want, "count:"+strconv.Itoa(i))
		}
	}
	checkLineWriter(t, out, want, 0)
	return w
}

// TestUIMAJobPlainTextAndKill: plain-text items from an input file; a job
// process killed mid-item loses its CASes to the others, and every item
// ends once.
func TestUIMAJobPlainTextAndKill(t *testing.T) {
	f := newUIMAFixture(t)
	const n = 300
	var lines []string
	for i := range n {
		lines = append(lines, "text "+strconv.Itoa(i)+" of the plain kind")
	}
	input := filepath.Join(f.dir, "texts")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := f.submitSpec(t, "texts.job",
		"classpath = "+f.jars.test,
		"process_descriptor_AE = ducc.uima.test.WordAnnotator",
		"process_descriptor_AE_overrides = SleepMs=10",
		"process_pipeline_count = 2",
		"process_deployments_max = 2",
		"input_file = "+input)
	var victim int
	deadline := time.Now().Add(2 * time.Minute)
	for victim == 0 && time.Now().Before(deadline) {
		for _, p := range f.show(id).Procs {
			if p.State == "Running" && p.Done > 5 && p.PID > 0 {
				victim = p.PID
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if victim == 0 {
		t.Fatalf("no job process got going: %+v", f.show(id))
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w := f.waitEnd(t, id, 5*time.Minute)
	if w.Completion != "EndOfJob" || w.Job.Done != n || w.Job.Failed != 0 {
		t.Fatalf("job ended %s %q: %+v", w.Completion, w.Reason, w.Job)
	}
	if w.Job.Preempted == 0 {
		t.Errorf("no item was re-queued after the kill: %+v", w.Job)
	}
	rs := f.results(t, id)
	seen := map[string]bool{}
	for _, r := range rs {
		it := r["item"].(string)
		res, _ := r["result"].(map[string]any)
		if seen[it] || r["ok"] != true || res["annotations"] != 6.0 {
			t.Fatalf("result %v (seen before: %v)", r, seen[it])
		}
		seen[it] = true
	}
	if len(seen) != n {
		t.Fatalf("%d results, want %d", len(seen), n)
	}
}

// TestUIMAExamples runs uima-examples' file-system collection reader,
// person-title annotator and annotation printer unchanged, with only a
// ducc spec file written for them.
func TestUIMAExamples(t *testing.T) {
	f := newUIMAFixture(t)
	const ex = "/usr/share/uima/examples"
	texts, _ := filepath.Glob(ex + "/data/text/*.txt")
	if len(texts) == 0 {
		t.Skip("uima-examples' texts are missing")
	}
	input, items := f.driverItems(t, "example-items", f.jars.classpath(f.jars.examples),
		"--cr", ex+"/descriptors/collectionReader/FileSystemCollectionReader.xml",
		"--cr-override", "InputDirectory="+ex+"/data/text")
	if len(items) != len(texts) {
		t.Fatalf("the reader made %d CASes for %d files", len(items), len(texts))
	}
	printed := filepath.Join(f.dir, "printer", "annotations.txt")
	id := f.submitSpec(t, "examples.job",
		"classpath = /usr/share/java/uimaj-examples.jar",
		"process_descriptor_AE = "+ex+"/descriptors/analysisEngine/text/PersonTitleAnnotator.xml",
		"process_descriptor_CC = "+ex+"/descriptors/casConsumer/AnnotationPrinter.xml",
		"process_descriptor_CC_overrides = outputFile="+printed,
		// The printer writes one file: one pipeline in one process.
		"process_pipeline_count = 1",
		"process_deployments_max = 1",
		"input_file = "+input)
	w := f.waitEnd(t, id, 3*time.Minute)
	if w.Completion != "EndOfJob" || w.Job.Done != len(texts) {
		t.Fatalf("job ended %s %q: %+v", w.Completion, w.Reason, w.Job)
	}
	titles := 0
	for _, r := range f.results(t, id) {
		res, _ := r["result"].(map[string]any)
		types, _ := res["types"].(map[string]any)
		if c, ok := types["example.PersonTitle"].(float64); ok {
			titles += int(c)
		}
	}
	if titles == 0 {
		t.Errorf("no person titles found in %d documents", len(texts))
	}
	// The printer's file is complete once its job process ended
	// (collectionProcessComplete closes it).
	var b []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, _ = os.ReadFile(printed); strings.Count(string(b), "DOCUMENT URI:file:") == len(texts) && strings.Count(string(b), "example.PersonTitle ") == titles {
			return
		}
	}
	t.Fatalf("the annotation printer wrote %d documents and %d titles, want %d and %d:\n%s",
		strings.Count(string(b), "DOCUMENT URI:"), strings.Count(string(b), "example.PersonTitle "), len(texts), titles, b)
}

// firstDiffs names a few lines that are in one sorted list and not the
// other, or repeated.
func firstDiffs(got, want []string) string {
	count := map[string]int{}
	for _, g := range got {
		count[g]++
	}
	for _, w := range want {
		count[w] -= 1
	}
	var d []string
	for k, v := range count {
		if v != 0 && len(d) < 10 {
			d = append(d, fmt.Sprintf("%s (%+d)", k, v))
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

// casItems makes n CAS items of the test reader, as the driver process
// would.
func casItems(b *testing.B, j uimaJars, dir string, n int) []string {
	p := startJava(b, dir, j.classpath(j.test), "ducc.uima.DriverMain", "--cr", "ducc.uima.test.CountingReader", "--cr-override", "Count="+strconv.Itoa(n))
	items, _ := readAll(b, p, 1000)
	if code := p.finish(); code != 0 {
		b.Fatalf("driver exit %d", code)
	}
	return items
}

// BenchmarkUIMAJob: CASes of the test reader through a trivial annotator
// (one annotation per word) in 4 job processes × 2 pipelines, from
// submit to the end of the job (JVM starts and the growth from one
// process to four included). The CASes come from an input file.
func BenchmarkUIMAJob(b *testing.B) { benchUIMAJob(b, false) }

// BenchmarkUIMAJobWithDriver: the same with the reader in the driver
// process (skipped where the binary has none).
func BenchmarkUIMAJobWithDriver(b *testing.B) { benchUIMAJob(b, true) }

func benchUIMAJob(b *testing.B, driver bool) {
	const n = 20_000
	f := newUIMAFixture(b)
	source := []string{"driver_descriptor_CR = ducc.uima.test.CountingReader", "driver_descriptor_CR_overrides = Count=" + strconv.Itoa(n)}
	if driver {
		out, _ := exec.Command(duccBin, "submit", "--help").CombinedOutput()
		if !strings.Contains(string(out), "--driver-executable") {
			b.Skip("this ducc has no driver process (driver_executable)")
		}
	} else {
		input := filepath.Join(f.dir, "cas-items")
		if err := os.WriteFile(input, []byte(strings.Join(casItems(b, f.jars, f.dir, n), "\n")+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		source = []string{"input_file = " + input}
	}
	var total time.Duration
	procs := 0
	b.ResetTimer()
	for i := range b.N {
		id := f.submitSpec(b, "bench"+strconv.Itoa(i)+".job", append([]string{
			"classpath = " + f.jars.test,
			"process_descriptor_AE = ducc.uima.test.WordAnnotator",
			"process_pipeline_count = 2",
			"process_deployments_max = 4"}, source...)...)
		w := f.waitEnd(b, id, 10*time.Minute)
		if w.Completion != "EndOfJob" || w.Job.Done != n {
			b.Fatalf("job ended %s: %+v", w.Completion, w.Job)
		}
		total += time.UnixMilli(w.EndedAt).Sub(time.UnixMilli(w.SubmittedAt))
		procs = max(procs, len(w.Procs))
		for _, p := range w.Procs {
			b.Logf("process %s: started %.1fs after submit, init %d ms, %d CASes, %.1f CPU s",
				p.ID, float64(p.StartedAt-w.SubmittedAt)/1000, p.InitMS, p.Done, p.CPUSeconds)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "CASes/s")
	b.ReportMetric(float64(total.Microseconds())/float64(n*b.N), "µs/CAS")
	b.ReportMetric(float64(procs), "processes")
}

// BenchmarkUIMAJobProcess: the same CASes through one JobProcessMain of
// 2 pipelines fed directly over a pipe: the JVM's own cost per CAS
// (deserializing, the annotator, the answer), without ducc.
func BenchmarkUIMAJobProcess(b *testing.B) {
	const n = 20_000
	j := needUIMA(b)
	dir := b.TempDir()
	items := casItems(b, j, dir, n)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		p := startJava(b, dir, j.classpath(j.test), "ducc.uima.JobProcessMain", "--ae", "ducc.uima.test.WordAnnotator", "--pipelines", "2")
		if m := p.recv(); m["ready"] != true {
			b.Fatalf("first line %v", m)
		}
		start := time.Now()
		go func() {
			for i, it := range items {
				line, _ := json.Marshal(map[string]string{"id": strconv.Itoa(i), "item": it})
				if _, err := p.in.Write(append(line, '\n')); err != nil {
					return
				}
			}
		}()
		for range items {
			if m := p.recv(); m["ok"] != true {
				b.Fatalf("answer %v", m)
			}
		}
		total += time.Since(start)
		p.in.Close()
		_ = p.cmd.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "CASes/s")
	b.ReportMetric(float64(total.Microseconds())/float64(n*b.N), "µs/CAS")
}

// TestUIMACasMultiplier: process_descriptor_CM, _AE and _CC composed into
// one aggregate: uima-examples' text segmenter splits each item, only the
// segments go on to the CAS consumer.
func TestUIMACasMultiplier(t *testing.T) {
	j := needUIMA(t)
	dir := t.TempDir()
	const ex = "/usr/share/uima/examples/descriptors"
	out := filepath.Join(dir, "cc")
	p := startJava(t, dir, j.classpath(j.test, j.examples), "ducc.uima.JobProcessMain", "--pipelines", "1",
		"--cm", ex+"/casMultiplier/SimpleTextSegmenter.xml", "--cm-override", "SegmentSize=1",
		"--ae", "ducc.uima.test.WordAnnotator", "--cc", "ducc.uima.test.LineWriter", "--cc-override", "OutputDirectory="+out)
	if m := p.recv(); m["ready"] != true {
		t.Fatalf("first line %v", m)
	}
	p.send(map[string]string{"id": "1", "item": "one\ntwo\nthree\n"})
	if m := p.recv(); m["ok"] != true {
		t.Fatalf("answer %v", m)
	}
	if code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.txt"))
	if len(files) != 1 {
		t.Fatalf("CAS consumer files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	// Each segment is a line of the item (ending in its newline, then the
	// consumer's), and the item itself did not reach the consumer.
	if string(b) != "one\n\ntwo\n\nthree\n\ncomplete 3\n" {
		t.Fatalf("the CAS consumer wrote %q", b)
	}
}

// needDriverProcess skips a test when the binary has no driver process
// (driver_executable: the driver-process change of docs/jobs.md).
func needDriverProcess(t *testing.T) {
	t.Helper()
	out, _ := exec.Command(duccBin, "submit", "--help").CombinedOutput()
	if !strings.Contains(string(out), "--driver-executable") {
		t.Skip("this ducc has no driver process (driver_executable) to run a collection reader in")
	}
}

// TestUIMAJobWithDriver: a DUCC job spec whose collection reader makes
// 2,000 CASes runs to its end: the reader in the driver process, the
// aggregate in several job processes of 2 pipelines; the CAS the
// annotator throws on is in results --failed with its exception and
// label; the CAS consumer saw every other CAS once.
func TestUIMAJobWithDriver(t *testing.T) {
	needDriverProcess(t)
	f := newUIMAFixture(t)
	const n = 2000
	out := filepath.Join(f.dir, "cc-out")
	id := f.submitSpec(t, "uima-driver.job",
		"description = UIMA words with a reader",
		"classpath = "+f.jars.test,
		"driver_descriptor_CR = ducc.uima.test.CountingReader",
		"driver_descriptor_CR_overrides = Count="+strconv.Itoa(n)+" Marker=BOOM MarkEvery=1500",
		"driver_jvm_args = -Xmx64m",
		"process_descriptor_AE = ducc.uima.test.WordAnnotator",
		"process_descriptor_AE_overrides = FailOn=BOOM SleepMs=10",
		"process_descriptor_CC = ducc.uima.test.LineWriter",
		"process_descriptor_CC_overrides = OutputDirectory="+out,
		"process_pipeline_count = 2",
		"process_deployments_max = 4",
		"process_jvm_args = -Xmx128m")
	f.checkMarkedJob(t, id, out, n)
}

// TestUIMAExamplesWithDriver: uima-examples' file-system reader, person
// title annotator and annotation printer, unchanged, from one ducc spec
// file.
func TestUIMAExamplesWithDriver(t *testing.T) {
	needDriverProcess(t)
	f := newUIMAFixture(t)
	const ex = "/usr/share/uima/examples"
	texts, _ := filepath.Glob(ex + "/data/text/*.txt")
	printed := filepath.Join(f.dir, "printer", "annotations.txt")
	id := f.submitSpec(t, "examples-driver.job",
		"classpath = /usr/share/java/uimaj-examples.jar",
		"driver_descriptor_CR = "+ex+"/descriptors/collectionReader/FileSystemCollectionReader.xml",
		"driver_descriptor_CR_overrides = InputDirectory="+ex+"/data/text",
		"process_descriptor_AE = "+ex+"/descriptors/analysisEngine/text/PersonTitleAnnotator.xml",
		"process_descriptor_CC = "+ex+"/descriptors/casConsumer/AnnotationPrinter.xml",
		"process_descriptor_CC_overrides = outputFile="+printed,
		"process_pipeline_count = 1",
		"process_deployments_max = 1")
	w := f.waitEnd(t, id, 3*time.Minute)
	if w.Completion != "EndOfJob" || w.Job.Done != len(texts) {
		t.Fatalf("job ended %s %q: %+v", w.Completion, w.Reason, w.Job)
	}
	var b []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, _ = os.ReadFile(printed); strings.Count(string(b), "DOCUMENT URI:file:") == len(texts) && strings.Contains(string(b), "example.PersonTitle ") {
			return
		}
	}
	t.Fatalf("the annotation printer wrote %d documents, want %d:\n%s", strings.Count(string(b), "DOCUMENT URI:"), len(texts), b)
}

// TestUIMADriverInitFailure: a collection reader that cannot start ends
// the job with DriverInitializationFailure and UIMA's message.
func TestUIMADriverInitFailure(t *testing.T) {
	needDriverProcess(t)
	f := newUIMAFixture(t)
	id := f.submitSpec(t, "bad-reader.job",
		"classpath = "+f.jars.test,
		"driver_descriptor_CR = ducc.uima.test.CountingReader",
		"driver_descriptor_CR_overrides = FailAtInit=true",
		"process_descriptor_AE = ducc.uima.test.WordAnnotator")
	w := f.waitEnd(t, id, 2*time.Minute)
	if w.Completion != "DriverInitializationFailure" || !strings.Contains(w.Reason, "CountingReader told to fail at init") {
		t.Fatalf("job ended %s %q", w.Completion, w.Reason)
	}
}
