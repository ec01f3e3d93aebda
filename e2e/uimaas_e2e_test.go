package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// UIMA-AS services end to end (docs/services.md, "UIMA-AS services"): real
// JVMs with Debian's UIMA-AS 2.3.1 (libuima-as-java), and Debian's
// ActiveMQ (activemq) as the broker, run as an ordinary ducc service from
// the shipped registration (examples/uima-as/activemq.yaml), on 127.0.0.1.
// Every UIMA-AS test runs in TestUIMAASService, against the one broker it
// starts: a broker JVM costs seconds of CPU on a 2-core machine.

// uimaasDefaultPinger: the service is pinged by ducc's default UIMA-AS
// pinger (getMeta and the broker's JMX queue statistics); false pings it
// with a command pinger, ducc.uima.test.AsClient's getMeta, instead.
const uimaasDefaultPinger = true

// words1Service is DUCC's sleepjobs/1.service with ducc's paths: the DD
// (%[1]s) and the class path (%[2]s). Nothing else is changed.
const words1Service = `# 
# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.
# 

service_request_endpoint       UIMA-AS:words:${DefaultBrokerURL}
description                    Test service 1

process_DD				       %[1]s

classpath                      %[2]s

process_jvm_args               -Xmx100M -DDefaultBrokerURL=${DefaultBrokerURL}
process_memory_size            2
environment                    AE_INIT_TIME=5 AE_INIT_RANGE=5 INIT_ERROR=0 LD_LIBRARY_PATH=/yet/a/nother/dumb/path
instances                      1
autostart					   true
`

// wordsAndLinesDD deploys java/test's WordsAndLines aggregate (WordAnnotator,
// then LineWriter) synchronously, as DUCC's DDSleepDescriptor.xml does its
// aggregate: no async attribute, a delegate's scaleout.
const wordsAndLinesDD = `<?xml version="1.0" encoding="UTF-8"?>
<analysisEngineDeploymentDescription xmlns="http://uima.apache.org/resourceSpecifier">
  <name>Words and lines</name>
  <deployment protocol="jms" provider="activemq">
    <casPool numberOfCASes="2"/>
    <service>
      <inputQueue endpoint="wordsAndLines" brokerURL="${defaultBrokerURL}"/>
      <topDescriptor><import name="ducc.uima.test.WordsAndLines"/></topDescriptor>
      <analysisEngine>
        <delegates>
          <analysisEngine key="Words"><scaleout numberOfInstances="4"/></analysisEngine>
        </delegates>
      </analysisEngine>
    </service>
  </deployment>
</analysisEngineDeploymentDescription>
`

// needUIMAAS is needUIMA, and Debian's UIMA-AS and ActiveMQ; it returns
// the UIMA-AS class path (spec.UIMAASServiceClasspath).
func needUIMAAS(t *testing.T) (uimaJars, string) {
	t.Helper()
	j := needUIMA(t)
	for _, f := range append(strings.Split(spec.UIMAASServiceClasspath, ":"), "/usr/share/activemq/bin/activemq.jar") {
		if _, err := os.Stat(f); err != nil {
			msg := "UIMA-AS tests need Debian's UIMA-AS and ActiveMQ (apt-get install libuima-as-java activemq): " + f + " is missing"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return j, spec.UIMAASServiceClasspath
}

// TestUIMAASService: DUCC's sleepjobs/1.service pattern. The broker runs
// as a ducc service from examples/uima-as/activemq.yaml; a UIMA-AS service
// registered from a DUCC-format .service file (java/test's WordAnnotator
// in a DD) deploys in a JVM as its user and becomes Available; a
// registration whose endpoint does not match the DD is refused with both;
// a job that depends on it waits, then runs; a UIMA-AS client's CAS
// through its queue is answered; killing the broker makes the service
// unavailable with a reason, and it comes back with the broker (which
// ducc restarts as a failed instance).
func TestUIMAASService(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to run the services as a test user in cgroups")
	}
	j, uimaas := needUIMAAS(t)
	ensureUser(t, "ducc-e2e")
	port := freePorts(t, 2) // the broker's, its JMX port
	brokerURL := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	cfg := filepath.Join(t.TempDir(), "ducc.yaml")
	writeFile(t, cfg, "head:\n  default_broker_url: "+brokerURL+"\n")
	t.Setenv("DUCC_UIMA_JAR", j.ducc)
	if uimaasDefaultPinger {
		jars := needPingers(t)
		if jars.uimaasSkip != "" {
			t.Fatal(jars.uimaasSkip) // needUIMAAS found UIMA-AS
		}
		t.Setenv("DUCC_PINGER_JAR", jars.host)
		t.Setenv("DUCC_PINGER_UIMAAS_JAR", jars.uimaas)
	}
	c := startCluster(t, "--config", cfg)
	work := sharedDir(t, c.dir, "uimaas")
	logs := sharedDir(t, c.dir, "logs")

	// The broker: the shipped registration, on this test's ports.
	brokerEP := fmt.Sprintf("TCP:127.0.0.1:%d", port)
	example, err := filepath.Abs(filepath.Join("..", "examples", "uima-as"))
	if err != nil {
		t.Fatal(err)
	}
	broker := c.register(t, "--as", "ducc-e2e", filepath.Join(example, "activemq.yaml"),
		"--service-request-endpoint", brokerEP, "--log-directory", logs,
		"--process-executable-args", fmt.Sprintf("%d %d %s", port, port+1, filepath.Join(work, "activemq")))
	c.waitService(broker, 120*time.Second, "Available (the broker)", available)

	// The UIMA-AS service, from the .service file; the pinger (until
	// ducc's default UIMA-AS pinger) and the dependency on the broker are
	// flags.
	svcFile := filepath.Join(work, "1.service")
	writeFile(t, svcFile, fmt.Sprintf(words1Service, filepath.Join(example, "WordsDD.xml"), j.test))
	// ducc-uima.jar first: its UimaAsVersion answers the client's version
	// check of the getMeta reply too.
	pingCP := j.ducc + ":" + j.test + ":" + uimaas
	flags := []string{"--as", "ducc-e2e", svcFile, "--service-dependency", brokerEP, "--log-directory", logs,
		"--service-ping-timeout", "60s", "--service-ping-interval", "2s"}
	if uimaasDefaultPinger {
		flags = append(flags, "--service-ping-arguments", fmt.Sprintf("meta-timeout=10000,broker-jmx-port=%d", port+1))
	} else {
		flags = append(flags, "--service-ping-executable", "java",
			"--service-ping-arguments", "-Xmx64m -cp "+pingCP+" ducc.uima.test.AsClient ping 10000")
	}

	// An endpoint other than the DD's is refused, naming both, in
	// either output mode.
	other := append(append([]string{}, flags...), "--service-request-endpoint", "UIMA-AS:other:${DefaultBrokerURL}")
	for _, mode := range [][]string{nil, {"--json"}} {
		_, errs, code := c.ducc(append(append([]string{"services", "register"}, mode...), other...)...)
		if code != 2 || !strings.Contains(errs, "UIMA-AS:other:"+brokerURL) || !strings.Contains(errs, "UIMA-AS:words:"+brokerURL) {
			t.Errorf("mismatching endpoint %v: exit %d: %s", mode, code, errs)
		}
	}

	id := c.register(t, flags...)
	// A job that depends on it (as DUCC writes it) waits for it: the
	// service's JVM has not deployed yet.
	// (As root: the exec worker is in the test's private build folder.)
	out := c.mustDucc(t, "submit", "--worker-protocol", "exec", "--service-dependency", "UIMA-AS:words:${DefaultBrokerURL}",
		"--input-file", writeItems(t, work, "2"), "--process-memory-size", "1G", "--log-directory", logs, "--", "true")
	job := strings.Fields(out)[1]
	if w := c.show(job); w.Ended || w.ReasonCode != wire.ReasonServices || !strings.Contains(w.Reason, "UIMA-AS:words:"+brokerURL) {
		t.Fatalf("the job should wait for UIMA-AS:words:%s: %+v", brokerURL, w)
	}
	s := c.waitService(id, 180*time.Second, "Available", available)
	if s.Endpoint != "UIMA-AS:words:"+brokerURL || s.User != "ducc-e2e" || s.Spec.ProcessDD == "" {
		t.Errorf("service: %+v", s)
	}
	if uimaasDefaultPinger {
		// The default pinger's info: the queue's statistics from the
		// broker's JMX, the service's instances among its consumers.
		stats := regexp.MustCompile(`QDEPTH\[\d+\] AveNQ\[[0-9.]+\] Consum\[[1-9]\d*\] Prod\[\d+\] minNQ\[\d+\] maxNQ\[\d+\] expCnt\[\d+\] inFlt\[\d+\] DQ\[\d+\] NQ\[\d+\] Disp\[\d+\]`)
		s = c.waitService(id, 60*time.Second, "Available with the queue's statistics", func(s wire.ServiceInfo) bool {
			return s.State == wire.SvcStateAvailable && stats.MatchString(s.PingInfo)
		})
		if out := c.mustDucc(t, "services", "query", id); !stats.MatchString(out) {
			t.Errorf("ducc services query %s does not show the queue's statistics:\n%s", id, out)
		}
	}
	if pid := instancePID(s, 0); pid == 0 || !strings.Contains(cmdline(pid), "ducc.uima.ServiceMain") || procUID(t, pid) != uidOf(t, "ducc-e2e") {
		t.Errorf("instance 0 (pid %d) is not ServiceMain as ducc-e2e: %q", pid, cmdline(pid))
	}
	if log := instanceLog(t, logs, id); !strings.Contains(log, "ducc: UIMA-AS service deployed: queue words on "+brokerURL+", 2 instances of *importByName:ducc.uima.test.WordAnnotator") {
		t.Errorf("the instance's log does not say what it deployed:\n%s", tail(log, 30))
	}
	if end := waitEnded(t, c, job, 120*time.Second); end.Completion != "EndOfJob" {
		t.Fatalf("the job that waited for the service: %+v", end)
	}

	// A UIMA-AS client's CAS through the queue is answered.
	client := func() (string, error) {
		b, err := exec.Command("java", "-Xmx128m", "-cp", pingCP, "ducc.uima.test.AsClient", "process", brokerURL, "words", "the quick brown fox").CombinedOutput()
		return string(b), err
	}
	if out, err := client(); err != nil || !strings.Contains(out, "words 4") {
		t.Fatalf("UIMA-AS client: %v\n%s", err, out)
	}

	// An aggregate deployed synchronously, as DUCC's DDSleepDescriptor.xml
	// is, with settings of a delegate (named in the log, not applied);
	// registered with flags alone, its endpoint read from the DD, whose
	// broker is UIMA-AS's ${defaultBrokerURL}.
	aggDD := filepath.Join(work, "WordsAndLinesDD.xml")
	writeFile(t, aggDD, wordsAndLinesDD)
	agg := c.register(t, "--as", "ducc-e2e", "--process-DD", aggDD, "--classpath", j.test, "--process-memory-size", "1G",
		"--working-directory", work, "--service-dependency", brokerEP, "--log-directory", logs, "--autostart",
		"--service-ping-executable", "java", "--service-ping-arguments", "-Xmx64m -cp "+pingCP+" ducc.uima.test.AsClient ping 10000",
		"--service-ping-timeout", "60s", "--service-ping-interval", "2s")
	as := c.waitService(agg, 180*time.Second, "Available (the aggregate)", available)
	if as.Endpoint != "UIMA-AS:wordsAndLines:"+brokerURL {
		t.Errorf("the aggregate's endpoint, read from its DD: %s", as.Endpoint)
	}
	b, err := exec.Command("java", "-Xmx128m", "-cp", pingCP, "ducc.uima.test.AsClient", "process", brokerURL, "wordsAndLines", "one two three").CombinedOutput()
	if err != nil || !strings.Contains(string(b), "words 3") {
		t.Errorf("UIMA-AS client of the aggregate: %v\n%s", err, b)
	}
	if log := instanceLog(t, logs, agg); !strings.Contains(log, "ducc: the settings of delegate Words in the DD are not applied") {
		t.Errorf("the aggregate's log does not name the delegate settings it ignores:\n%s", tail(log, 30))
	}
	c.mustDucc(t, "services", "unregister", agg)

	// The broker dies: the service is unavailable, with a reason. (Its
	// service is disabled first, so that ducc does not start it again at
	// once, before the pinger could see it gone; its instance keeps
	// running until it is killed.)
	bpid := instancePID(c.service(broker), 0)
	if bpid == 0 {
		t.Fatal("the broker's instance is not running")
	}
	c.mustDucc(t, "services", "disable", broker)
	if err := syscall.Kill(bpid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	down := c.waitService(id, 120*time.Second, "unavailable after the broker died, its pinger not alive", func(s wire.ServiceInfo) bool {
		return s.State != wire.SvcStateAvailable && s.Reason != "" && !s.Alive && (strings.Contains(s.PingInfo, "failed") || strings.Contains(s.PingInfo, "no getMeta answer"))
	})
	t.Logf("with the broker killed: %s: %s (pinger: %s)", down.State, down.Reason, down.PingInfo)
	if instancePID(down, 0) != instancePID(s, 0) {
		t.Errorf("the service's instance should run on through the outage: %+v", down)
	}
	// ducc starts the broker again, and the service reconnects to it.
	c.mustDucc(t, "services", "enable", broker)
	c.waitService(broker, 120*time.Second, "Available again (the broker)", func(s wire.ServiceInfo) bool {
		return available(s) && instancePID(s, 0) != 0 && instancePID(s, 0) != bpid
	})
	c.waitService(id, 180*time.Second, "Available again", available)
	t.Logf("the instance's log has %d lines after the broker outage", strings.Count(instanceLog(t, logs, id), "\n"))
	if out, err := client(); err != nil || !strings.Contains(out, "words 4") {
		t.Fatalf("UIMA-AS client after the broker came back: %v\n%s", err, out)
	}
	c.mustDucc(t, "services", "unregister", id)
	c.mustDucc(t, "services", "unregister", broker)
}

// cmdline is a process's command line, blanks between the arguments.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// procUID is the real uid a process runs as.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return int(st.Uid)
}

func uidOf(t *testing.T, name string) int {
	t.Helper()
	u := lookupOrAddUser(t, name)
	n, _ := strconv.Atoi(u.Uid)
	return n
}

// instanceLog is the log of a service's instances (all of them, joined).
func instanceLog(t *testing.T, logs, id string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(logs, id, "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}
