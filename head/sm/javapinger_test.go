package sm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

var testPaths = spec.PingerPaths{Host: "/usr/share/ducc/ducc-pinger.jar", UIMAAS: "/usr/share/ducc/ducc-pinger-uimaas.jar",
	UIMAASClasspath: "/usr/share/java/uimaj-as-core.jar:/usr/share/java/activemq-client.jar", Monitors: "/nonexistent"}

func javaService(f func(*wire.ServiceSpec)) *state.Work {
	return service(1, "CUSTOM:stats:127.0.0.1:7000", started, proc(0, "R"), func(w *state.Work) {
		w.Service.Spec.PingClass, w.Service.Spec.PingClasspath = "ducc.pinger.test.CustomPing", "/opt/test.jar"
		w.Service.Spec.PingTimeoutMS, w.Service.Spec.PingIntervalMS = 0, 2000
		if f != nil {
			f(&w.Service.Spec)
		}
	})
}

// TestJavaPingerDecided: a service with service_ping_class, or a UIMA-AS:
// endpoint without a command pinger, gets a Java pinger (with the Java
// default timeout where it has none); one with a command pinger does not.
func TestJavaPingerDecided(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w       *state.Work
		class   string // "" = no Java pinger
		timeout time.Duration
	}{
		{"service_ping_class", javaService(nil), "ducc.pinger.test.CustomPing", spec.DefaultJavaPingTimeout},
		{"uima-as default", service(1, "UIMA-AS:q:tcp://127.0.0.1:61616", started, proc(0, "R")), spec.UIMAASPingClass, spec.DefaultJavaPingTimeout},
		{"uima-as with a command pinger", service(1, "UIMA-AS:q:tcp://127.0.0.1:61616", started, proc(0, "R"), func(w *state.Work) {
			w.Service.Spec.PingExecutable = "/bin/ping-it"
		}), "", 500 * time.Millisecond},
		{"command pinger", service(1, "CUSTOM:x", started, proc(0, "R"), func(w *state.Work) { w.Service.Spec.PingExecutable = "/bin/p" }), "", 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pingerOf(tc.w)
			if tc.w.Service.Spec.PingTimeoutMS == 0 && p.Timeout != tc.timeout {
				t.Errorf("timeout %s, want %s", p.Timeout, tc.timeout)
			}
			switch {
			case tc.class == "" && p.Java != nil:
				t.Errorf("a Java pinger %+v, want none", p.Java)
			case tc.class != "" && (p.Java == nil || p.Java.Class != tc.class):
				t.Errorf("Java pinger %+v, want class %s", p.Java, tc.class)
			}
		})
	}
}

// TestJavaPingerKey: modifying any Java pinger key restarts the pinger.
func TestJavaPingerKey(t *testing.T) {
	base := pingerOf(javaService(nil)).Key()
	for name, f := range map[string]func(*wire.ServiceSpec){
		"class":     func(s *wire.ServiceSpec) { s.PingClass = "a.Other" },
		"classpath": func(s *wire.ServiceSpec) { s.PingClasspath = "/opt/other.jar" },
		"jvm args":  func(s *wire.ServiceSpec) { s.PingJVMArgs = []string{"-Xmx32m"} },
		"jvmargs":   func(s *wire.ServiceSpec) { s.PingJVMArgs = []string{"-Xmx32m", "-Da=b"} },
		"arguments": func(s *wire.ServiceSpec) { s.PingArgs = []string{"x=1"} },
		"timeout":   func(s *wire.ServiceSpec) { s.PingTimeoutMS = 9000 },
		"dolog":     func(s *wire.ServiceSpec) { s.PingDoLog = true },
	} {
		if k := pingerOf(javaService(f)).Key(); k == base {
			t.Errorf("modifying %s leaves the pinger's key %q: it would not restart", name, k)
		}
	}
}

// TestJavaRequest: the command an agent runs for one ping of a Java
// pinger.
func TestJavaRequest(t *testing.T) {
	p := pingerOf(javaService(func(s *wire.ServiceSpec) {
		s.PingJVMArgs, s.PingArgs, s.PingDoLog, s.PingTimeoutMS = []string{"-Xmx48m"}, []string{"a=1", "b=2"}, true, 1500
		s.PingClasspath = " /opt/test.jar : /opt/lib/*::"
	}))
	st := wire.PingState{Service: 1, Endpoint: p.Endpoint}
	req, err := JavaRequest(p, st, testPaths)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx48m", "-jar", testPaths.Host,
		"--timeout", "1500", "--monitor-rate", "2000", "--classpath", "/opt/test.jar:/opt/lib/*", "--arguments", "a=1 b=2",
		"--failure-max", "5", "--failure-window", "30", "--do-log", "ducc.pinger.test.CustomPing"}
	if req.Path != "java" || !slices.Equal(req.Args, want) {
		t.Errorf("command %s %q\nwant java %q", req.Path, req.Args, want)
	}
	if req.TimeoutMS != 2*1500+javaStartAllowance.Milliseconds() || req.Name != "Java pinger ducc.pinger.test.CustomPing" ||
		req.User != "alice" || req.MemoryLimit != PingerMemoryLimit {
		t.Errorf("request %+v", req)
	}
}

// TestResolveJava: the UIMA-AS default and registered pingers.
func TestResolveJava(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("site.Ping", "service_ping_class = org.site.Ping\nservice_ping_classpath = /opt/site.jar\nservice_ping_arguments = x=1\nservice_ping_jvmargs = -Xmx16m\n")
	write("site.Internal", "service_ping_class = org.site.Ping\nservice_ping_classpath = /opt/site.jar\ninternal = true\n")
	write("site.Broken", "nonsense = 1\n")
	paths := testPaths
	paths.Monitors = dir
	uimaCP := testPaths.UIMAAS + ":" + testPaths.UIMAASClasspath
	for _, tc := range []struct {
		name    string
		j       JavaPing
		args    []string
		want    JavaPinger
		wantErr string
	}{
		{name: "user class", j: JavaPing{Class: "a.B", Classpath: "/b.jar"}, args: []string{"q"},
			want: JavaPinger{Class: "a.B", Classpath: "/b.jar", Arguments: []string{"q"}}},
		{name: "uima-as default", j: JavaPing{Class: spec.UIMAASPingClass},
			want: JavaPinger{Class: spec.UIMAASPingClass, Classpath: uimaCP}},
		{name: "uima-as default, more jars", j: JavaPing{Class: spec.UIMAASPingClass, Classpath: "/x.jar"},
			want: JavaPinger{Class: spec.UIMAASPingClass, Classpath: uimaCP + ":/x.jar"}},
		{name: "registered", j: JavaPing{Class: "site.Ping"},
			want: JavaPinger{Class: "org.site.Ping", Classpath: "/opt/site.jar", Arguments: []string{"x=1"}, JVMArgs: []string{"-Xmx16m"}, Registered: "site.Ping"}},
		{name: "registered, the service's own arguments", j: JavaPing{Class: "site.Ping", JVMArgs: []string{"-Xmx8m"}}, args: []string{"y=2"},
			want: JavaPinger{Class: "org.site.Ping", Classpath: "/opt/site.jar", Arguments: []string{"y=2"}, JVMArgs: []string{"-Xmx8m"}, Registered: "site.Ping"}},
		{name: "internal", j: JavaPing{Class: "site.Internal", DoLog: true},
			want: JavaPinger{Class: "org.site.Ping", Classpath: "/opt/site.jar", DoLog: true, Registered: "site.Internal"}},
		{name: "internal refuses overrides", j: JavaPing{Class: "site.Internal", Classpath: "/mine.jar"}, args: []string{"z"},
			wantErr: "service_ping_class site.Internal is a pinger the administrators registered with internal = true: it runs as they set it up; drop service_ping_classpath and service_ping_arguments"},
		{name: "broken registration", j: JavaPing{Class: "site.Broken"}, wantErr: `key "nonsense" is not one of a registered pinger's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveJava(tc.j, tc.args, paths)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Class != tc.want.Class || got.Classpath != tc.want.Classpath || !slices.Equal(got.Arguments, tc.want.Arguments) ||
				!slices.Equal(got.JVMArgs, tc.want.JVMArgs) || got.DoLog != tc.want.DoLog || got.Registered != tc.want.Registered {
				t.Errorf("resolved %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestPingJava: the Manager runs a Java pinger's JVM through the agent
// and reports the host's failures (a pinger that throws or hangs) as the
// ping's reason, and a broken registration without asking an agent.
func TestPingJava(t *testing.T) {
	p := pingerOf(javaService(func(s *wire.ServiceSpec) { s.PingClass = "missing.Registered"; s.PingClasspath = "" }))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "missing.Registered"), []byte("internal = perhaps\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := testPaths
	paths.Monitors = dir
	m := New(Config{PingerPaths: paths, RunPinger: func(context.Context, string, wire.PingRunRequest) (wire.PingRunReply, error) {
		t.Error("an agent was asked to run a pinger whose registration does not read")
		return wire.PingRunReply{}, nil
	}})
	if _, err := m.ping(context.Background(), p, wire.PingState{}, ""); err == nil || !strings.Contains(err.Error(), `internal: "perhaps" is not true or false`) {
		t.Errorf("err %v", err)
	}

	r := &fakeRunner{calls: make(chan pingCall, 1), reply: wire.PingRunReply{
		Error: "Java pinger a.Hangs: exited with code 3: ducc-pinger: a.Hangs.getStatistics() did not return within 1500 ms"}}
	m = New(Config{PingerPaths: testPaths, RunPinger: r.run})
	p = pingerOf(javaService(func(s *wire.ServiceSpec) { s.PingClass = "a.Hangs" }))
	_, err := m.ping(context.Background(), p, wire.PingState{}, "n1")
	if err == nil || !strings.Contains(err.Error(), "did not return within 1500 ms") {
		t.Errorf("err %v", err)
	}
	c := <-r.calls
	if c.node != "n1" || c.req.Path != "java" || c.req.Args[len(c.req.Args)-1] != "a.Hangs" {
		t.Errorf("ran %s %q on %q", c.req.Path, c.req.Args, c.node)
	}
	if dl, ok := c.ctx.Deadline(); !ok || time.Until(dl) < time.Duration(c.req.TimeoutMS)*time.Millisecond {
		t.Errorf("the head waits less than the pinger may take (%d ms)", c.req.TimeoutMS)
	}
}
