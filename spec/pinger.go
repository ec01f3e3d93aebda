package spec

import (
	"archive/zip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ducc-project/ducc/wire"
)

// DefaultJavaPingTimeout is the default service_ping_timeout of a Java
// pinger (service_ping_class, or the UIMA-AS pinger): DUCC's default
// meta-timeout. A JVM starts in 0.1-0.2 s and a UIMA-AS getMeta takes up to
// 2 s cold (java/spike/FINDINGS.md), so ducc's 500 ms would miss every ping.
const DefaultJavaPingTimeout = 5 * time.Second

// UIMAASPingClass is ducc's default pinger of UIMA-AS: endpoints, by
// DUCC's name (java/pinger/uimaas): getMeta on the queue, the queue's
// statistics over the broker's JMX.
const UIMAASPingClass = "org.apache.uima.ducc.sm.UimaAsPing"

// Where the Java pingers' jars are by default: the package's place and
// Debian's UIMA-AS packages (java/spike/FINDINGS.md).
const (
	DefaultPingerJar       = "/usr/share/ducc/ducc-pinger.jar"
	DefaultUIMAASPingerJar = "/usr/share/ducc/ducc-pinger-uimaas.jar"
	DefaultServiceMonitors = "/etc/ducc/service_monitors"
)

// DefaultUIMAASClasspath is the UIMA-AS client's class path on Debian
// (libuima-as-java, libactivemq-java, Spring).
var DefaultUIMAASClasspath = strings.Join(func() []string {
	var cp []string
	for _, j := range []string{"uimaj-as-core", "uimaj-as-jms", "uimaj-as-activemq", "uimaj-core", "activemq-client",
		"geronimo-jms_1.1_spec", "geronimo-j2ee-management-1.1-spec", "hawtbuf", "spring3-core", "spring3-beans",
		"spring3-context", "spring3-expression", "spring3-aop", "spring3-jms", "spring3-transaction",
		"commons-logging", "slf4j-api", "slf4j-nop"} {
		cp = append(cp, "/usr/share/java/"+j+".jar")
	}
	return cp
}(), ":")

// JavaPinger reports whether a service's pinger is a Java pinger that
// ducc runs in its pinger host: service_ping_class, or a UIMA-AS: endpoint
// without a command pinger (ducc's UIMA-AS pinger).
func JavaPinger(s wire.ServiceSpec) bool {
	if s.PingClass != "" {
		return true
	}
	kind, _, err := ParseEndpoint(s.Endpoint)
	return err == nil && kind == EndpointUIMAAS && s.PingExecutable == ""
}

// CheckPingClass checks service_ping_class: a Java class name
// (com.example.MyPing, a nested class with $) or the name of a registered
// pinger, which has the same form.
func CheckPingClass(s string) (string, error) {
	t := strings.TrimSpace(s)
	bad := t == "" || len(t) > 512 || !utf8.ValidString(t)
	for _, part := range strings.Split(t, ".") {
		if part == "" {
			bad = true
		}
		for i, c := range part {
			letter := c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c > 0x7f
			if !letter && (i == 0 || c < '0' || c > '9') {
				bad = true
			}
		}
	}
	if bad {
		return "", fmt.Errorf("bad class name %q: write a Java class like com.example.MyPing (a nested class as Outer$Inner), or the name of a registered pinger", s)
	}
	return t, nil
}

// checkJavaPinger refuses a registration whose pinger keys contradict
// each other: a command pinger with Java pinger keys, a class path or JVM
// options without a Java pinger.
func checkJavaPinger(s wire.ServiceSpec, kind string) error {
	var java []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"service_ping_class", s.PingClass != ""}, {"service_ping_classpath", s.PingClasspath != ""},
		{"service_ping_jvm_args", len(s.PingJVMArgs) > 0}, {"service_ping_dolog", s.PingDoLog}} {
		if k.set {
			java = append(java, k.name)
		}
	}
	switch {
	case s.PingExecutable != "" && len(java) > 0:
		return fmt.Errorf("service_ping_executable (a command pinger) cannot be mixed with %s (a Java pinger): give one pinger, either a command or a Java class", strings.Join(java, ", "))
	case s.PingClass == "" && s.PingClasspath != "":
		return errors.New("service_ping_classpath needs service_ping_class: the pinger class to load from it")
	case s.PingClass == "" && len(java) > 0 && kind != EndpointUIMAAS:
		return fmt.Errorf("%s are for Java pingers: give service_ping_class (a UIMA-AS: endpoint's default pinger is one too)", strings.Join(java, " and "))
	}
	return nil
}

// PingerPaths are where the pinger host, ducc's UIMA-AS pinger, the
// UIMA-AS client's jars and the registered pingers are on this machine.
type PingerPaths struct {
	// Host is ducc-pinger.jar (the API and ducc.pinger.PingerHost).
	Host string
	// UIMAAS is ducc-pinger-uimaas.jar (UIMAASPingClass); UIMAASClasspath
	// the UIMA-AS client's jars it needs.
	UIMAAS, UIMAASClasspath string
	// Monitors is the folder of registered pingers (DUCC's
	// service_monitors): one properties file per pinger, named as
	// service_ping_class names it.
	Monitors string
}

// FindPingerPaths finds the pinger jars as UIMAPaths finds ducc-uima.jar:
// $DUCC_PINGER_JAR and $DUCC_PINGER_UIMAAS_JAR, else share/ducc/ beside the
// running binary's folder (a package), dist/ beside it (a source tree
// after make java-pinger), else the package's place; the UIMA-AS class
// path is $DUCC_UIMAAS_CLASSPATH, else Debian's; the registered pingers
// are in $DUCC_SERVICE_MONITORS, else /etc/ducc/service_monitors.
func FindPingerPaths() PingerPaths {
	p := PingerPaths{Host: os.Getenv("DUCC_PINGER_JAR"), UIMAAS: os.Getenv("DUCC_PINGER_UIMAAS_JAR"),
		UIMAASClasspath: os.Getenv("DUCC_UIMAAS_CLASSPATH"), Monitors: os.Getenv("DUCC_SERVICE_MONITORS")}
	if p.UIMAASClasspath == "" {
		p.UIMAASClasspath = DefaultUIMAASClasspath
	}
	if p.Monitors == "" {
		p.Monitors = DefaultServiceMonitors
	}
	dir := ""
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dir = filepath.Dir(exe)
	}
	find := func(name, def string) string {
		if dir != "" {
			for _, c := range []string{filepath.Join(dir, "..", "share", "ducc", name), filepath.Join(dir, "..", "dist", name)} {
				if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
					return filepath.Clean(c)
				}
			}
		}
		return def
	}
	if p.Host == "" {
		p.Host = find("ducc-pinger.jar", DefaultPingerJar)
	}
	if p.UIMAAS == "" {
		p.UIMAAS = find("ducc-pinger-uimaas.jar", DefaultUIMAASPingerJar)
	}
	return p
}

// ClassCheck is what CheckPingClasspath found.
type ClassCheck struct {
	// Found names the entry that has the class; "" if none.
	Found string
	// Checked are the entries looked in; Unreadable those that could not
	// be read here, with why.
	Checked, Unreadable []string
}

// CheckPingClasspath looks for a Java pinger's class in its class path on
// this machine (the registering node): in each folder as a .class file,
// in each jar as an entry, in each folder/* in its jars. Relative entries
// are relative to dir (the service's working directory, where the pinger
// runs).
func CheckPingClasspath(class, classpath, dir string) ClassCheck {
	var c ClassCheck
	file := strings.ReplaceAll(class, ".", "/") + ".class"
	look := func(entry string) {
		st, err := os.Stat(entry)
		if err != nil {
			c.Unreadable = append(c.Unreadable, fmt.Sprintf("%s (%v)", entry, errors.Unwrap(err)))
			return
		}
		c.Checked = append(c.Checked, entry)
		if st.IsDir() {
			if _, err := os.Stat(filepath.Join(entry, file)); err == nil {
				c.Found = entry
			}
			return
		}
		z, err := zip.OpenReader(entry)
		if err != nil {
			c.Checked = c.Checked[:len(c.Checked)-1]
			c.Unreadable = append(c.Unreadable, fmt.Sprintf("%s (not a jar: %v)", entry, err))
			return
		}
		defer z.Close()
		for _, f := range z.File {
			if f.Name == file {
				c.Found = entry
				return
			}
		}
	}
	for _, e := range filepath.SplitList(classpath) {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !filepath.IsAbs(e) {
			e = filepath.Join(dir, e)
		}
		if jars, wildcard, err := classpathJars(e); wildcard {
			if err != nil {
				c.Unreadable = append(c.Unreadable, fmt.Sprintf("%s (%v)", e, errors.Unwrap(err)))
				continue
			}
			for _, j := range jars {
				if look(j); c.Found != "" {
					return c
				}
			}
			continue
		}
		if look(e); c.Found != "" {
			return c
		}
	}
	return c
}

// Error is the refusal when the class was not found although every entry
// could be read; nil otherwise.
func (c ClassCheck) Error(class, classpath string) error {
	if c.Found != "" || len(c.Unreadable) > 0 {
		return nil
	}
	if len(c.Checked) == 0 {
		return fmt.Errorf("service_ping_classpath %q names nothing: give the jars or folders that hold service_ping_class %s", classpath, class)
	}
	return fmt.Errorf("service_ping_class %s is not in service_ping_classpath: looked for %s in %s on this node",
		class, strings.ReplaceAll(class, ".", "/")+".class", strings.Join(c.Checked, ", "))
}

// Warning says what could not be checked when the class was not found in
// what could be read; "" otherwise.
func (c ClassCheck) Warning(class string) string {
	if c.Found != "" || len(c.Unreadable) == 0 {
		return ""
	}
	return fmt.Sprintf("service_ping_class %s: could not check all of service_ping_classpath on this node (not readable here: %s); if the class is missing, the pinger's first ping will say so",
		class, strings.Join(c.Unreadable, ", "))
}

// RegisteredPinger is an administrator's registered pinger (DUCC's
// service_monitors/<name>): the Java pinger a service gets when its
// service_ping_class names the file.
type RegisteredPinger struct {
	Name      string
	Class     string
	Classpath string
	JVMArgs   []string
	Arguments []string
	TimeoutMS int64
	DoLog     bool
	// Internal: the pinger runs only as the administrators set it up; a
	// registration may not give its own class path, JVM options or
	// arguments for it.
	Internal bool
}

// registeredKeys are the keys of a registered pinger's file.
var registeredKeys = []string{"service_ping_class", "service_ping_classpath", "service_ping_jvm_args", "service_ping_arguments",
	"service_ping_timeout", "service_ping_dolog", "internal"}

// ReadRegisteredPinger reads the registered pinger name from dir; ok is
// false when there is no such file.
func ReadRegisteredPinger(dir, name string) (p RegisteredPinger, ok bool, err error) {
	if _, err := CheckPingClass(name); err != nil || dir == "" {
		return p, false, nil
	}
	path := filepath.Join(dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("registered pinger %s: %w", name, err)
	}
	p, err = ParseRegisteredPinger(data, path)
	p.Name = name
	return p, err == nil, err
}

// ParseRegisteredPinger reads a registered pinger's properties file:
// service_ping_class (default: the file's name), service_ping_classpath,
// service_ping_jvm_args (or DUCC's service_ping_jvmargs),
// service_ping_arguments, service_ping_timeout, service_ping_dolog and
// internal; anything else is an error.
func ParseRegisteredPinger(data []byte, path string) (RegisteredPinger, error) {
	var p RegisteredPinger
	// Only a registered pinger's keys, each named with its line; internal
	// is not a service key: its line is taken out before the rest is read
	// as a registration's.
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		start, line := i, strings.TrimLeft(lines[i], " \t\f")
		for continues(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v := splitProperty(line)
		name, err := unescapeProperty(k)
		if err != nil {
			return p, fmt.Errorf("%s:%d: %w", path, start+1, err)
		}
		switch lower := strings.ToLower(name); {
		case lower == "internal":
			b, err := parseBool(strings.TrimSpace(v))
			if err != nil {
				return p, fmt.Errorf("%s:%d: internal: %w", path, start+1, err)
			}
			p.Internal = b
			for j := start; j <= i; j++ {
				lines[j] = ""
			}
		case !slices.Contains(registeredKeys, lower) && lower != "service_ping_jvmargs":
			return p, fmt.Errorf("%s:%d: key %q is not one of a registered pinger's: %s", path, start+1, name, strings.Join(registeredKeys, ", "))
		}
	}
	raw, warn, err := ParseProperties([]byte(strings.Join(lines, "\n")), path, filepath.Dir(path),
		func(string) (string, bool) { return "", false }, KindService)
	if err != nil {
		return p, fmt.Errorf("registered pinger %s: %w", path, err)
	}
	if len(warn) > 0 { // an administrator's file: nothing in it is ignored
		return p, fmt.Errorf("registered pinger %s", strings.Join(warn, "; "))
	}
	s, _, err := BuildService(raw)
	if err != nil {
		return p, fmt.Errorf("registered pinger %s: %w", path, err)
	}
	p.Class, p.Classpath, p.JVMArgs, p.Arguments = s.PingClass, s.PingClasspath, s.PingJVMArgs, s.PingArgs
	p.TimeoutMS, p.DoLog = s.PingTimeoutMS, s.PingDoLog
	if p.Class == "" {
		p.Class = filepath.Base(path)
	}
	return p, nil
}
