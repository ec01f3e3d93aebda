package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Services end to end (docs/services.md): the example HTTP service and autoscaling
// pinger under examples/services, run by the real binary.

func examplePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "examples", "services", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// freePorts returns n consecutive free loopback ports.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := true
		for i := 1; i < n && ok; i++ {
			l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				continue
			}
			l2.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

func (c *cluster) service(id string) wire.ServiceInfo {
	c.t.Helper()
	out, errs, code := c.ducc("services", "query", id, "--json")
	if code != 0 {
		c.t.Fatalf("ducc services query %s: exit %d: %s", id, code, errs)
	}
	var l wire.ServiceList
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Services) != 1 {
		c.t.Fatalf("ducc services query %s: %v: %s", id, err, out)
	}
	return l.Services[0]
}

// waitService polls until cond holds.
func (c *cluster) waitService(id string, d time.Duration, what string, cond func(wire.ServiceInfo) bool) wire.ServiceInfo {
	c.t.Helper()
	deadline := time.Now().Add(d)
	var s wire.ServiceInfo
	for time.Now().Before(deadline) {
		s = c.service(id)
		if cond(s) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("service %s: not %s after %s: %+v\nagent log:\n%s", id, what, d, s, tail(c.agentLog(), 40))
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func available(s wire.ServiceInfo) bool { return s.State == wire.SvcStateAvailable }

func (c *cluster) register(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := c.ducc(append([]string{"services", "register"}, args...)...)
	if code != 0 || !strings.HasPrefix(out, "Service ") || !strings.Contains(out, " registered") {
		t.Fatalf("register: exit %d: %s %s", code, out, errs)
	}
	return strings.Fields(out)[1]
}

func (c *cluster) mustDucc(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := c.ducc(args...)
	if code != 0 {
		t.Fatalf("ducc %v: exit %d: %s %s", args, code, out, errs)
	}
	return out
}

func instancePID(s wire.ServiceInfo, inst int) int {
	for _, p := range s.Procs {
		if p.Instance == inst && p.Proc.State == wire.ProcRunning {
			return p.Proc.PID
		}
	}
	return 0
}

// TestServiceHTTPLifecycle: register and start an HTTP service; the
// built-in pinger makes it Available; a killed instance comes back with
// the same instance id; killed too often, the service is disabled with the
// reason; enable, stop, unregister.
func TestServiceHTTPLifecycle(t *testing.T) {
	py := needPython(t)
	c := startCluster(t)
	port := freePorts(t, 1)
	ep := fmt.Sprintf("HTTP:127.0.0.1:%d/", port)
	id := c.register(t, "--service-request-endpoint", ep, "--process-memory-size", "1G",
		"--service-ping-interval", "200ms", "--instance-failures-limit", "2", "--instance-failures-window", "10m",
		"--", py, examplePath(t, "http_service.py"), strconv.Itoa(port))
	if s := c.service(id); s.State != wire.SvcStateStopped || s.Policy != "reference" || s.Instances != 1 {
		t.Fatalf("after register: %+v", s)
	}
	// Strict registration: unknown keys, duplicate endpoints, other owners.
	if _, errs, code := c.ducc("services", "register", "--service-request-endpoint", ep, "--", "true"); code != 2 || !strings.Contains(errs, "already registered") {
		t.Fatalf("duplicate endpoint: exit %d: %s", code, errs)
	}
	bad := filepath.Join(c.dir, "bad.yaml")
	writeFile(t, bad, "service_request_endpoint: TCP:localhost:1\nprocess_executable: true\ninstance: 2\n")
	if _, errs, code := c.ducc("services", "register", bad); code != 2 || !strings.Contains(errs, `unknown key "instance"`) {
		t.Fatalf("unknown key: exit %d: %s", code, errs)
	}

	c.mustDucc(t, "services", "start", ep) // by endpoint
	s := c.waitService(id, 20*time.Second, "Available", available)
	pid := instancePID(s, 0)
	if pid == 0 || s.Running != 1 {
		t.Fatalf("no running instance 0: %+v", s)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// Kill instance 0 three times: it comes back as instance 0 twice; the
	// third failure passes instance_failures_limit 2.
	for i := 1; i <= 3; i++ {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			break
		}
		old := pid
		s = c.waitService(id, 20*time.Second, "back with instance 0", func(s wire.ServiceInfo) bool {
			p := instancePID(s, 0)
			return available(s) && p != 0 && p != old
		})
		pid = instancePID(s, 0)
		if s.Failures != i {
			t.Fatalf("after kill %d: failures %d", i, s.Failures)
		}
	}
	s = c.waitService(id, 20*time.Second, "Disabled", func(s wire.ServiceInfo) bool {
		return s.State == wire.SvcStateDisabled && s.Running == 0
	})
	if !strings.Contains(s.Reason, "Excessive runtime errors") {
		t.Fatalf("disabled without the reason: %+v", s)
	}
	if out := c.mustDucc(t, "services", "query"); !strings.Contains(out, "Excessive runtime errors") {
		t.Fatalf("query does not show the reason:\n%s", out)
	}
	if _, errs, code := c.ducc("services", "start", id); code != 2 || !strings.Contains(errs, "disabled") {
		t.Fatalf("start of a disabled service: exit %d: %s", code, errs)
	}
	c.mustDucc(t, "services", "enable", id)
	c.waitService(id, 20*time.Second, "Available again", available)
	c.mustDucc(t, "services", "stop", id)
	s = c.waitService(id, 20*time.Second, "stopped", func(s wire.ServiceInfo) bool { return len(s.Procs) == 0 })
	if s.State != wire.SvcStateDisabled || !strings.Contains(s.Reason, "stopped by") {
		t.Fatalf("after stop: %+v", s)
	}
	c.mustDucc(t, "services", "unregister", id)
	if _, errs, code := c.ducc("services", "query", id); code != 2 || !strings.Contains(errs, "no registered service") {
		t.Fatalf("query after unregister: exit %d: %s", code, errs)
	}
}

// TestServiceReferencedByJob: a job naming a reference-started service
// starts it, waits in WaitingForServices until it is Available, runs, and
// the service stops service_linger after the job ends. A job naming an
// unknown endpoint ends at once with ServicesUnavailable.
func TestServiceReferencedByJob(t *testing.T) {
	py := needPython(t)
	c := startCluster(t)
	port := freePorts(t, 1)
	ep := fmt.Sprintf("HTTP:127.0.0.1:%d/", port)
	// A second service depends on the first: a chain started in order.
	id := c.register(t, "--service-request-endpoint", ep, "--process-memory-size", "1G",
		"--service-ping-interval", "200ms", "--service-linger", "1s",
		"--", py, examplePath(t, "http_service.py"), strconv.Itoa(port), "1")
	port2 := freePorts(t, 1)
	ep2 := fmt.Sprintf("TCP:127.0.0.1:%d", port2)
	id2 := c.register(t, "--service-request-endpoint", ep2, "--process-memory-size", "1G",
		"--service-ping-interval", "200ms", "--service-linger", "1s", "--service-dependency", ep,
		"--", py, examplePath(t, "http_service.py"), strconv.Itoa(port2))

	out := c.mustDucc(t, "submit", "--worker-protocol", "exec", "--service-dependency", ep2,
		"--input-file", writeItems(t, c.dir, "3"), "--process-memory-size", "1G", "--", "sh", "-c", "echo {}")
	job := strings.Fields(out)[1]
	w := c.show(job)
	if w.State != "WaitingForServices" || !strings.Contains(w.Reason, "waiting for services") || w.ReasonCode != wire.ReasonServices {
		t.Fatalf("job should wait for its services: %+v", w)
	}
	if jobs := c.mustDucc(t, "jobs"); !strings.Contains(jobs, "(Services)") {
		t.Fatalf("ducc jobs does not say why the job waits:\n%s", jobs)
	}
	s := c.service(id)
	if !s.ByReferences || !s.Started {
		t.Fatalf("service not started by reference: %+v", s)
	}
	end := waitEnded(t, c, job, 40*time.Second)
	if end.Completion != "EndOfJob" {
		t.Fatalf("job: %+v", end)
	}
	// Both linger 1 s after the job, then stop.
	for _, x := range []string{id2, id} {
		c.waitService(x, 20*time.Second, "stopped after the linger", func(s wire.ServiceInfo) bool {
			return s.State == wire.SvcStateStopped && len(s.Procs) == 0
		})
	}

	// Unknown endpoint: the job ends at once, naming it.
	out, errs, code := c.ducc("submit", "--worker-protocol", "exec", "--service-dependency", "CUSTOM:nope",
		"--input-file", writeItems(t, c.dir, "1"), "--wait", "--", "true")
	if code != 1 {
		t.Fatalf("unknown endpoint: exit %d: %s %s", code, out, errs)
	}
	id3 := strings.Fields(out)[1]
	w = c.show(id3)
	if w.Completion != "ServicesUnavailable" || !strings.Contains(w.Reason, "CUSTOM:nope") {
		t.Fatalf("unknown endpoint: %+v", w)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeItems(t *testing.T, dir, n string) string {
	t.Helper()
	p := filepath.Join(dir, "items-"+n+".txt")
	k, _ := strconv.Atoi(n)
	var b strings.Builder
	for i := 1; i <= k; i++ {
		fmt.Fprintln(&b, i)
	}
	writeFile(t, p, b.String())
	return p
}

func waitEnded(t *testing.T, c *cluster, id string, d time.Duration) wire.WorkInfo {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		w := c.show(id)
		if w.Ended {
			return w
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("work %s did not end in %s: %+v", id, d, c.show(id))
	return wire.WorkInfo{}
}

// TestServiceAutoscale: the example autoscaling pinger grows the service
// under load, up to its max, and shrinks it, newest first, after.
func TestServiceAutoscale(t *testing.T) {
	py := needPython(t)
	c := startCluster(t)
	base := freePorts(t, 3)
	id := c.register(t, "--service-request-endpoint", "CUSTOM:autoscale", "--process-memory-size", "1G",
		"--max-instances", "3", "--service-ping-interval", "300ms", "--service-ping-timeout", "3s",
		"--working-directory", c.dir,
		"--service-ping-executable", py, "--service-ping-arguments",
		fmt.Sprintf("%s --port-base %d --min 1 --max 3 --growth-window 2 --shrink-window 3 --state-dir %s",
			examplePath(t, "autoscale_pinger.py"), base, c.dir),
		"--", py, examplePath(t, "http_service.py"), strconv.Itoa(base))
	c.mustDucc(t, "services", "start", id)
	c.waitService(id, 20*time.Second, "Available", available)

	// Load: 8 slow requests in flight at all times on instance 0.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/work?ms=400", base)); err == nil {
					resp.Body.Close()
				} else {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	s := c.waitService(id, 40*time.Second, "grown to 3 instances", func(s wire.ServiceInfo) bool { return s.Running == 3 })
	close(stop)
	wg.Wait()
	if s.Instances != 3 {
		t.Fatalf("grown: %+v", s)
	}
	s = c.waitService(id, 40*time.Second, "shrunk to 1 instance", func(s wire.ServiceInfo) bool {
		return s.Instances == 1 && len(s.Procs) == 1
	})
	if s.Procs[0].Instance != 0 {
		t.Fatalf("the oldest instance should stay: %+v", s.Procs)
	}
}

// TestServiceSurvivesRestart: registrations, their changes and the
// autostart policy survive a full cluster restart.
func TestServiceSurvivesRestart(t *testing.T) {
	py := needPython(t)
	c := startCluster(t)
	port := freePorts(t, 2)
	ep := fmt.Sprintf("HTTP:127.0.0.1:%d/", port)
	auto := c.register(t, "--service-request-endpoint", ep, "--process-memory-size", "1G", "--autostart",
		"--service-ping-interval", "200ms", "--", py, examplePath(t, "http_service.py"), strconv.Itoa(port))
	manual := c.register(t, "--service-request-endpoint", "TCP:127.0.0.1:1", "--description", "never started", "--", "true")
	c.waitService(auto, 20*time.Second, "Available", available)
	c.mustDucc(t, "services", "modify", auto, "--instances", "2")
	c.waitService(auto, 20*time.Second, "2 running", func(s wire.ServiceInfo) bool { return s.Running == 2 && available(s) })

	// Stop the whole cluster and kill the instances too: the autostart
	// service must come back from the registration alone.
	before := c.service(auto)
	c.stop()
	for _, p := range before.Procs {
		_ = syscall.Kill(p.Proc.PID, syscall.SIGKILL)
	}
	c.start()
	s := c.waitService(auto, 20*time.Second, "Available after restart", func(s wire.ServiceInfo) bool {
		return available(s) && s.Running == 2
	})
	if s.Policy != "autostart" || s.Endpoint != ep || s.Instances != 2 {
		t.Fatalf("after restart: %+v", s)
	}
	m := c.service(manual)
	if m.Spec.Description != "never started" || m.State != wire.SvcStateStopped {
		t.Fatalf("manual service after restart: %+v", m)
	}
}
