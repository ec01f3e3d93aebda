package sm

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// A Java pinger (docs/services.md, "Java pingers") runs as a custom
// pinger whose command is a JVM: ducc's pinger host (dist/ducc-pinger.jar,
// java/pinger) loads the pinger's class, calls init, then getStatistics
// and the other hooks once, and answers in the custom pinger's format. One
// JVM per ping, as every custom pinger (docs/decisions.md, "Java pingers:
// one JVM per ping").

// javaStartAllowance is what a Java pinger's process gets beyond its calls'
// time: the JVM's start and class loading (0.1-0.2 s here; more on a
// loaded node).
const javaStartAllowance = 5 * time.Second

// javaOptions start the pinger's JVM quickly and small; the service's
// service_ping_jvm_args come after them, so they win.
var javaOptions = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}

// JavaPinger is a Java pinger resolved: what its JVM runs.
type JavaPinger struct {
	Class     string
	Classpath string
	JVMArgs   []string
	Arguments []string
	DoLog     bool
	// Registered names the registered pinger it comes from, if any.
	Registered string
}

// ResolveJava says what a service's Java pinger runs: a registered
// pinger's settings (DUCC's service_monitors/<name>, in paths.Monitors)
// with the service's own class path, JVM options and arguments in their
// place where it gives them (refused for a pinger registered with
// internal = true); ducc's UIMA-AS pinger from ducc's jar and the UIMA-AS
// client's; else the service's class from its class path.
func ResolveJava(j JavaPing, args []string, paths spec.PingerPaths) (JavaPinger, error) {
	r := JavaPinger{Class: j.Class, Classpath: j.Classpath, JVMArgs: j.JVMArgs, Arguments: args, DoLog: j.DoLog}
	reg, ok, err := spec.ReadRegisteredPinger(paths.Monitors, j.Class)
	if err != nil {
		return r, err
	}
	if ok {
		if err := CheckRegistered(reg, j.Classpath, j.JVMArgs, args); err != nil {
			return r, err
		}
		r.Registered, r.Class, r.DoLog = reg.Name, reg.Class, reg.DoLog || j.DoLog
		if r.Classpath == "" {
			r.Classpath = reg.Classpath
		}
		if len(r.JVMArgs) == 0 {
			r.JVMArgs = reg.JVMArgs
		}
		if len(r.Arguments) == 0 {
			r.Arguments = reg.Arguments
		}
	}
	if r.Class == spec.UIMAASPingClass && (!ok || r.Classpath == "") {
		cp := paths.UIMAAS + ":" + paths.UIMAASClasspath
		if r.Classpath != "" {
			cp += ":" + r.Classpath
		}
		r.Classpath = cp
	}
	return r, nil
}

// CheckRegistered refuses the service's own class path, JVM options or
// arguments for a pinger registered with internal = true: it runs only as
// the administrators set it up.
func CheckRegistered(reg spec.RegisteredPinger, classpath string, jvmArgs, args []string) error {
	if !reg.Internal {
		return nil
	}
	var given []string
	if classpath != "" {
		given = append(given, "service_ping_classpath")
	}
	if len(jvmArgs) > 0 {
		given = append(given, "service_ping_jvm_args")
	}
	if len(args) > 0 {
		given = append(given, "service_ping_arguments")
	}
	if len(given) == 0 {
		return nil
	}
	return fmt.Errorf("service_ping_class %s is a pinger the administrators registered with internal = true: it runs as they set it up; drop %s",
		reg.Name, strings.Join(given, " and "))
}

// JavaRequest is what an agent runs for one ping of a Java pinger: java
// with the pinger host's jar, the pinger's class path, its JVM options
// and init's values (arguments, monitor rate, failure limit and window),
// as the service's owner. Every call into the pinger gets the service's
// service_ping_timeout (the host reports one that takes longer); the
// process as a whole twice that plus javaStartAllowance.
func JavaRequest(p Pinger, st wire.PingState, paths spec.PingerPaths) (wire.PingRunRequest, error) {
	j, err := ResolveJava(*p.Java, p.Args, paths)
	if err != nil {
		return wire.PingRunRequest{}, err
	}
	req := PingRequest(p, st)
	args := append(append([]string{}, javaOptions...), j.JVMArgs...)
	args = append(args, "-jar", paths.Host, "--timeout", strconv.FormatInt(p.Timeout.Milliseconds(), 10),
		"--monitor-rate", strconv.FormatInt(p.Interval.Milliseconds(), 10))
	if cp := cleanClasspath(j.Classpath); cp != "" {
		args = append(args, "--classpath", cp)
	}
	if len(j.Arguments) > 0 {
		args = append(args, "--arguments", strings.Join(j.Arguments, " "))
	}
	if p.Java.FailureMax > 0 {
		args = append(args, "--failure-max", strconv.Itoa(p.Java.FailureMax))
	}
	if p.Java.FailureWindowMin > 0 {
		args = append(args, "--failure-window", strconv.Itoa(p.Java.FailureWindowMin))
	}
	if j.DoLog {
		args = append(args, "--do-log")
	}
	req.Path, req.Args = "java", append(args, j.Class)
	req.TimeoutMS = (2*p.Timeout + javaStartAllowance).Milliseconds()
	req.Name = "Java pinger " + j.Class
	return req, nil
}

// cleanClasspath drops the blanks around a class path's entries and the
// empty ones ("a.jar : b.jar:" is "a.jar:b.jar"), as the CLI's check reads
// them.
func cleanClasspath(cp string) string {
	var out []string
	for _, e := range strings.Split(cp, ":") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return strings.Join(out, ":")
}
