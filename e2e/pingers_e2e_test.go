package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Java pingers end to end (docs/services.md, "Java pingers"): DUCC's
// CustomPing sample and the test pingers of java/pinger/test, compiled
// against ducc's pinger API jar, run by the real agent in ducc's pinger
// host JVM as a real user.

// pingerJars are the jars the Java pinger tests use, copied into a folder
// every test user may read.
type pingerJars struct {
	host, test, uimaas string
	uimaasSkip         string // why the UIMA-AS pinger cannot be tested here
}

var (
	pingerOnce  sync.Once
	pingerBuilt pingerJars
	pingerSkip  string
)

// needPingers builds the pinger host and the test pingers once (make, as
// make java-pinger), and ducc's UIMA-AS pinger where Debian's UIMA-AS is
// installed; it skips without a JDK (fails under CI, which installs one).
func needPingers(t *testing.T) pingerJars {
	t.Helper()
	pingerOnce.Do(func() {
		for _, tool := range []string{"java", "javac", "jar", "make"} {
			if _, err := exec.LookPath(tool); err != nil {
				pingerSkip = tool + " is not installed"
				return
			}
		}
		root, err := filepath.Abs("..")
		if err != nil {
			pingerSkip = err.Error()
			return
		}
		mk := exec.Command("make", "-s", "dist/ducc-pinger.jar", "dist/ducc-pinger-test.jar")
		mk.Dir = root
		if out, err := mk.CombinedOutput(); err != nil {
			pingerSkip = fmt.Sprintf("make dist/ducc-pinger.jar dist/ducc-pinger-test.jar failed: %v\n%s", err, out)
			return
		}
		dir, err := os.MkdirTemp("", "ducc-e2e-pingers")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			pingerSkip = err.Error()
			return
		}
		j := pingerJars{host: filepath.Join(dir, "ducc-pinger.jar"), test: filepath.Join(dir, "ducc-pinger-test.jar"),
			uimaas: filepath.Join(dir, "ducc-pinger-uimaas.jar")}
		for _, c := range [][2]string{{"ducc-pinger.jar", j.host}, {"ducc-pinger-test.jar", j.test}} {
			if err := copyFile(filepath.Join(root, "dist", c[0]), c[1]); err != nil {
				pingerSkip = err.Error()
				return
			}
		}
		if _, err := os.Stat("/usr/share/java/uimaj-as-core.jar"); err != nil {
			j.uimaasSkip = "Debian's UIMA-AS is not installed (apt-get install libuima-as-java)"
		} else {
			mk := exec.Command("make", "-s", "dist/ducc-pinger-uimaas.jar")
			mk.Dir = root
			if out, err := mk.CombinedOutput(); err != nil {
				pingerSkip = fmt.Sprintf("make dist/ducc-pinger-uimaas.jar failed: %v\n%s", err, out)
				return
			}
			if err := copyFile(filepath.Join(root, "dist", "ducc-pinger-uimaas.jar"), j.uimaas); err != nil {
				pingerSkip = err.Error()
				return
			}
		}
		pingerBuilt = j
	})
	if pingerSkip != "" {
		msg := "Java pinger tests need a JDK (apt-get install default-jdk-headless): " + pingerSkip
		if os.Getenv("CI") != "" || strings.HasPrefix(pingerSkip, "make ") {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return pingerBuilt
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// statsServer runs the test jar's StatsServer, the service CustomPing
// pings, on a free loopback port; it is killed when the test ends.
type statsServer struct {
	cmd  *exec.Cmd
	port string
}

func startStatsServer(t *testing.T, testJar string) *statsServer {
	t.Helper()
	cmd := exec.Command("java", "-Xmx32m", "-cp", testJar, "ducc.pinger.test.StatsServer", "0", "100000")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &statsServer{cmd: cmd}
	t.Cleanup(s.kill)
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "port ") {
		t.Fatalf("the stats server did not say its port: %q %v", sc.Text(), sc.Err())
	}
	s.port = strings.TrimPrefix(sc.Text(), "port ")
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return s
}

func (s *statsServer) kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// TestJavaPingers: in one dev cluster, with each pinger a new JVM per
// ping, as a real user:
//   - DUCC's CustomPing, from a DUCC properties file (service_ping_jvmargs,
//     service_ping_dolog), drives a ping-only service's state and info;
//   - a pinger's additions and deletions scale a service up and down;
//   - a pinger that throws, or hangs past service_ping_timeout, is
//     reported as the service's reason, and nothing else is affected;
//   - an administrator's registered pinger (internal) runs for a service
//     that names it;
//   - a registration mixing a command pinger with Java pinger keys, naming
//     a class its class path does not have, a class that is neither
//     registered nor given a class path, or overriding an internal
//     registered pinger, is refused at once.
func TestJavaPingers(t *testing.T) {
	if !isRoot() {
		t.Skip("runs pingers as a test user: needs root")
	}
	jars := needPingers(t)
	user := ensureUser(t, "ducc-e2e")
	t.Setenv("DUCC_PINGER_JAR", jars.host)
	t.Setenv("DUCC_PINGER_UIMAAS_JAR", jars.uimaas)
	// An administrator's registered pinger (DUCC's service_monitors/<name>).
	monitors := t.TempDir()
	t.Setenv("DUCC_SERVICE_MONITORS", monitors)
	if err := os.WriteFile(filepath.Join(monitors, "site.StatsPing"), []byte(fmt.Sprintf(
		"service_ping_class = ducc.pinger.test.CustomPing\nservice_ping_classpath = %s\nservice_ping_jvmargs = -Xmx32m\ninternal = true\n", jars.test)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t)
	stats := startStatsServer(t, jars.test)
	as := []string{"--as", user.Username}

	// Refused at once, in words, with --json too.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"mixed", []string{"--service-request-endpoint", "CUSTOM:mixed", "--service-ping-executable", "/bin/true",
			"--service-ping-class", "ducc.pinger.test.CustomPing", "--service-ping-classpath", jars.test},
			"service_ping_executable (a command pinger) cannot be mixed with service_ping_class, service_ping_classpath (a Java pinger)"},
		{"not on the class path", []string{"--service-request-endpoint", "CUSTOM:missing", "--service-ping-class", "no.such.Ping",
			"--service-ping-classpath", jars.test},
			"service_ping_class no.such.Ping is not in service_ping_classpath: looked for no/such/Ping.class in " + jars.test + " on this node"},
		{"internal registered pinger with a class path", []string{"--service-request-endpoint", "CUSTOM:127.0.0.1:1",
			"--service-ping-class", "site.StatsPing", "--service-ping-classpath", jars.test},
			"service_ping_class site.StatsPing is a pinger the administrators registered with internal = true: it runs as they set it up; drop service_ping_classpath"},
		{"a class neither registered nor with a class path", []string{"--service-request-endpoint", "CUSTOM:x", "--service-ping-class", "site.Unknown"},
			"service_ping_class site.Unknown: give service_ping_classpath, the jars or folders that hold it (no pinger of that name is registered in " + monitors + " on the head)"},
	} {
		for _, mode := range [][]string{nil, {"--json"}} {
			args := append(append(append([]string{"services", "register"}, as...), mode...), tc.args...)
			out, errs, code := c.ducc(args...)
			if code != 2 || !strings.Contains(out+errs, tc.want) {
				t.Errorf("%s %v: exit %d, %s %s; want exit 2 and %q", tc.name, mode, code, out, errs, tc.want)
			}
		}
	}

	// CustomPing registered as the chapter registers it (DUCC's properties
	// format, endpoint CUSTOM:host:port).
	file := filepath.Join(c.dir, "custom.service")
	props := fmt.Sprintf(`# DUCC's CustomPing sample
description = stats via CustomPing
service_request_endpoint = CUSTOM:127.0.0.1:%s
service_ping_class = ducc.pinger.test.CustomPing
service_ping_classpath = %s
service_ping_jvmargs = -Xmx32m
service_ping_arguments = x=1
service_ping_dolog = true
service_ping_interval = 500
working_directory = %s
`, stats.port, jars.test, c.dir)
	if err := os.WriteFile(file, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	custom := c.register(t, append(as, file)...)

	// Scaling: a service of sleeping instances that the pinger keeps at two.
	scaling := c.register(t, append(as, "--service-request-endpoint", "CUSTOM:scaling", "--process-memory-size", "256M",
		"--max-instances", "3", "--service-ping-interval", "500ms", "--working-directory", c.dir,
		"--service-ping-class", "ducc.pinger.test.TestPings$Scaling", "--service-ping-classpath", jars.test,
		"--", "/bin/sleep", "3600")...)
	c.mustDucc(t, append([]string{"services", "start"}, append(as, scaling)...)...)

	// The registered pinger, named by a service that gives no class path.
	registered := c.register(t, append(as, "--service-request-endpoint", "CUSTOM:localhost:"+stats.port,
		"--service-ping-class", "site.StatsPing", "--service-ping-interval", "1s", "--working-directory", c.dir)...)

	// Failures.
	throws := c.register(t, append(as, "--service-request-endpoint", "CUSTOM:throws", "--service-ping-interval", "1s",
		"--working-directory", c.dir, "--service-ping-class", "ducc.pinger.test.TestPings$Throws", "--service-ping-classpath", jars.test)...)
	hangs := c.register(t, append(as, "--service-request-endpoint", "CUSTOM:hangs", "--service-ping-interval", "1s",
		"--service-ping-timeout", "1s", "--working-directory", c.dir,
		"--service-ping-class", "ducc.pinger.test.TestPings$Hangs", "--service-ping-classpath", jars.test)...)

	statsInfo := regexp.MustCompile(`^S1\[(\d+)\] S2\[2\] S3\[3\] S4\[4\]$`)
	s := c.waitService(custom, 60*time.Second, "Available with CustomPing's statistics", func(s wire.ServiceInfo) bool {
		return available(s) && statsInfo.MatchString(s.PingInfo)
	})
	first := statsInfo.FindStringSubmatch(s.PingInfo)[1]
	c.waitService(registered, 60*time.Second, "Available through the registered pinger", func(s wire.ServiceInfo) bool {
		return available(s) && statsInfo.MatchString(s.PingInfo)
	})
	// Each ping is a new connection: the server's counter moves on.
	c.waitService(custom, 60*time.Second, "pinged again", func(s wire.ServiceInfo) bool {
		m := statsInfo.FindStringSubmatch(s.PingInfo)
		return m != nil && m[1] != first
	})

	c.waitService(throws, 60*time.Second, "Waiting because its pinger throws", func(s wire.ServiceInfo) bool {
		return s.State == wire.SvcStateWaiting &&
			strings.Contains(s.Reason, "ducc.pinger.test.TestPings$Throws.getStatistics() threw java.lang.IllegalStateException: broker unreachable")
	})
	s = c.waitService(hangs, 60*time.Second, "Waiting because its pinger hangs", func(s wire.ServiceInfo) bool {
		return s.State == wire.SvcStateWaiting && strings.Contains(s.Reason,
			"Java pinger ducc.pinger.test.TestPings$Hangs: exited with code 3: ducc-pinger: ducc.pinger.test.TestPings$Hangs.getStatistics() did not return within 1000 ms")
	})

	t.Logf("hanging pinger: %s: %s", s.State, s.Reason)
	// Scale up: the pinger's additions bring the service to two instances.
	c.waitService(scaling, 90*time.Second, "scaled up to two instances by its pinger", func(s wire.ServiceInfo) bool {
		return s.Instances == 2 && s.Running == 2 && available(s)
	})
	// Scale down: a third instance asked for by hand is deleted by the
	// pinger (the highest id), leaving 0 and 1.
	c.mustDucc(t, append([]string{"services", "start", "--instances", "1"}, append(as, scaling)...)...)
	c.waitService(scaling, 30*time.Second, "given a third instance", func(s wire.ServiceInfo) bool { return s.Instances == 3 })
	s = c.waitService(scaling, 90*time.Second, "scaled down to two instances by its pinger", func(s wire.ServiceInfo) bool {
		if s.Instances != 2 || len(s.Procs) != 2 {
			return false
		}
		for _, p := range s.Procs {
			if p.Instance > 1 {
				return false
			}
		}
		return true
	})
	t.Logf("scaled down: instances %v, pinger: %s", s.Procs, s.PingInfo)

	// The service whose statistics server goes away: not alive, and why.
	stats.kill()
	c.waitService(custom, 60*time.Second, "Waiting once its server is gone", func(s wire.ServiceInfo) bool {
		return s.State == wire.SvcStateWaiting && strings.Contains(s.Reason, "127.0.0.1:"+stats.port+": java.net.ConnectException: Connection refused")
	})

	// The failing pingers took nothing else down: the failing services
	// are still registered and pinged.
	for _, id := range []string{throws, hangs} {
		if st := c.service(id); st.State != wire.SvcStateWaiting {
			t.Errorf("service %s: %s (%s), want Waiting", id, st.State, st.Reason)
		}
	}

	// modify of a Java pinger key restarts the pinger with the new value:
	// the hanging one becomes the sample, which cannot parse its endpoint.
	c.mustDucc(t, append([]string{"services", "modify", hangs}, append(as, "--service-ping-class", "ducc.pinger.test.CustomPing")...)...)
	s = c.waitService(hangs, 60*time.Second, "pinged by the modified pinger", func(s wire.ServiceInfo) bool {
		return s.Spec.PingClass == "ducc.pinger.test.CustomPing" && strings.Contains(s.Reason,
			"ducc-pinger: ducc.pinger.test.CustomPing.init() failed: java.lang.IllegalArgumentException: endpoint CUSTOM:hangs is not CUSTOM:host:port")
	})
	t.Logf("modified pinger: %s: %s", s.State, s.Reason)
}

// TestUIMAASDefaultPinger: a UIMA-AS: endpoint without a pinger of its
// own is pinged by ducc's UIMA-AS pinger in a JVM on an agent, as the
// service's owner: with no broker at the endpoint's URL it is not alive,
// with the UIMA-AS client's reason. (With a broker: the queue's statistics
// and an Available service are TestUIMAASService's, which starts the one
// broker of the tests.)
func TestUIMAASDefaultPinger(t *testing.T) {
	if !isRoot() {
		t.Skip("runs pingers as a test user: needs root")
	}
	jars := needPingers(t)
	if jars.uimaasSkip != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(jars.uimaasSkip)
		}
		t.Skip(jars.uimaasSkip)
	}
	user := ensureUser(t, "ducc-e2e")
	t.Setenv("DUCC_PINGER_JAR", jars.host)
	t.Setenv("DUCC_PINGER_UIMAAS_JAR", jars.uimaas)
	c := startCluster(t)
	port := freePorts(t, 1) // no broker listens there
	id := c.register(t, "--as", user.Username, "--service-request-endpoint", fmt.Sprintf("UIMA-AS:WordsQueue:tcp://127.0.0.1:%d", port),
		"--service-ping-interval", "2s", "--service-ping-arguments", "meta-timeout=2000,broker-jmx-port=none", "--working-directory", c.dir)
	s := c.waitService(id, 90*time.Second, "Waiting with the UIMA-AS client's reason", func(s wire.ServiceInfo) bool {
		return s.State == wire.SvcStateWaiting && strings.Contains(s.Reason,
			fmt.Sprintf("no getMeta answer from WordsQueue at tcp://127.0.0.1:%d: JMSException: Could not connect to broker URL", port))
	})
	t.Logf("UIMA-AS pinger without a broker: %s: %s", s.State, s.Reason)
	if s.Spec.PingTimeoutMS != 5000 {
		t.Errorf("service_ping_timeout %d, want the Java pinger default 5000", s.Spec.PingTimeoutMS)
	}
}
