package head_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// TestRegisterJavaPinger: the head checks a Java pinger's class against
// its registered pingers (DUCC's service_monitors), gives Java pingers
// their default timeout, and refuses what cannot run, with why.
func TestRegisterJavaPinger(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"site.Ping":     "service_ping_class = org.site.Ping\nservice_ping_classpath = /opt/site.jar\nservice_ping_timeout = 3000\n",
		"site.Internal": "service_ping_class = org.site.Ping\nservice_ping_classpath = /opt/site.jar\ninternal = true\n",
		"site.Broken":   "internal = sometimes\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The registered pingers' folder as the agent's head.service_monitors
	// gives it.
	f := newFixture(t, options{monitors: dir})
	f.node("n1", 8*gib)

	const notFound = "service_ping_class a.B is not in service_ping_classpath: looked for a/B.class in /b.jar on this node"
	refused := []struct {
		name     string
		spec     wire.ServiceSpec
		notFound string // the CLI's finding
		parts    []string
	}{
		{"not in its class path on the registering node", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "a.B", PingClasspath: "/b.jar"}, notFound,
			[]string{notFound}},
		{"no class path, not registered", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "a.B"}, "",
			[]string{"service_ping_class a.B: give service_ping_classpath", "no pinger of that name is registered in " + dir}},
		{"internal with overrides", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "site.Internal", PingClasspath: "/mine.jar", PingArgs: []string{"x"}}, notFound,
			[]string{"registered with internal = true", "drop service_ping_classpath and service_ping_arguments"}},
		{"broken registration", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "site.Broken"}, "",
			[]string{"names a registered pinger that cannot be used (ask the administrators to fix it)", `"sometimes" is not true or false`}},
		{"mixed", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "a.B", PingClasspath: "/b.jar", PingExecutable: "/bin/p"}, "",
			[]string{"service_ping_executable (a command pinger) cannot be mixed with service_ping_class, service_ping_classpath"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, wire.MethodServiceRegister, alice, wire.ServiceRegisterRequest{Spec: tc.spec, ClassNotFound: tc.notFound}, &wire.SubmitReply{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
		})
	}

	// Registered: the CLI's finding about the name is not the head's
	// concern (a registered pinger's class is the file's); nor for ducc's
	// UIMA-AS pinger, which is in ducc's jar.
	for _, tc := range []struct {
		name    string
		spec    wire.ServiceSpec
		timeout int64
	}{
		{"registered, its timeout", wire.ServiceSpec{Endpoint: "CUSTOM:b", PingClass: "site.Ping"}, 3000},
		{"registered, the service's timeout", wire.ServiceSpec{Endpoint: "CUSTOM:c", PingClass: "site.Ping", PingTimeoutMS: 700}, 700},
		{"internal, no overrides", wire.ServiceSpec{Endpoint: "CUSTOM:d", PingClass: "site.Internal", PingDoLog: true}, 5000},
		{"uima-as default pinger", wire.ServiceSpec{Endpoint: "UIMA-AS:q:tcp://127.0.0.1:61616"}, 5000},
		{"uima-as pinger named", wire.ServiceSpec{Endpoint: "UIMA-AS:r:tcp://127.0.0.1:61616", PingClass: spec.UIMAASPingClass}, 5000},
		{"uima-as pinger with more jars", wire.ServiceSpec{Endpoint: "UIMA-AS:s:tcp://127.0.0.1:61616", PingClass: spec.UIMAASPingClass, PingClasspath: "/x.jar"}, 5000},
		{"registered, not internal, the service's class path", wire.ServiceSpec{Endpoint: "CUSTOM:e", PingClass: "site.Ping", PingClasspath: "/mine.jar"}, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rep wire.SubmitReply
			f.mustCall(t, wire.MethodServiceRegister, alice, wire.ServiceRegisterRequest{Spec: tc.spec, ClassNotFound: "the CLI did not find it"}, &rep)
			id := rep.ID
			if got := f.query(t, strconv.FormatUint(id, 10)).Spec.PingTimeoutMS; got != tc.timeout {
				t.Errorf("service_ping_timeout %d, want %d", got, tc.timeout)
			}
		})
	}

	if id := f.register(t, alice, wire.ServiceSpec{Endpoint: "CUSTOM:a", PingClass: "a.B", PingClasspath: "/b.jar"}); f.query(t, strconv.FormatUint(id, 10)).Spec.PingTimeoutMS != 5000 {
		t.Errorf("a user's Java pinger: not the Java default timeout")
	}

	// A command pinger turned into a Java one by modify gets the Java
	// default timeout; one whose timeout was given keeps it.
	cmd := f.register(t, alice, wire.ServiceSpec{Endpoint: "CUSTOM:m", PingExecutable: "/bin/p"})
	var info wire.ServiceInfo
	err := call(t, f.h, wire.MethodServiceControl, alice, wire.ServiceControlRequest{Service: strconv.FormatUint(cmd, 10), Action: wire.SvcModify,
		Keys: []string{"service_ping_executable", "service_ping_class", "service_ping_classpath"},
		Spec: wire.ServiceSpec{PingClass: "a.B", PingClasspath: "/b.jar"}}, &info)
	if err != nil || info.Spec.PingClass != "a.B" || info.Spec.PingExecutable != "" || info.Spec.PingTimeoutMS != 5000 {
		t.Errorf("modify to a Java pinger: %v, %+v", err, info.Spec)
	}
	err = call(t, f.h, wire.MethodServiceControl, alice, wire.ServiceControlRequest{Service: strconv.FormatUint(cmd, 10), Action: wire.SvcModify,
		Keys: []string{"service_ping_classpath"}}, &info)
	wantErr(t, err, wire.CodeUsage, "service_ping_class a.B: give service_ping_classpath")
}
