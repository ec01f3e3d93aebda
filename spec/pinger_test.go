package spec

import (
	"archive/zip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// TestJavaPingerKeys: DUCC's Java pinger keys are read from a DUCC
// properties file (the misspelt service_ping_jvmargs too) and none of
// them is refused or ignored any more.
func TestJavaPingerKeys(t *testing.T) {
	file := `service_request_endpoint = CUSTOM:stats:127.0.0.1:7000
service_ping_class = ducc.pinger.test.CustomPing
service_ping_classpath = /opt/ping/ping.jar:lib/*
service_ping_jvmargs = -Xmx64m -Dx=1
service_ping_arguments = a=1,b=2
service_ping_timeout = 2000
service_ping_dolog = true
`
	raw, warn, err := ParseProperties([]byte(file), "s.service", "/base", env, KindService)
	if err != nil || len(warn) > 0 {
		t.Fatalf("ParseProperties: %v, warnings %q", err, warn)
	}
	s, keys, err := BuildService(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.ServiceSpec{Endpoint: "CUSTOM:stats:127.0.0.1:7000", PingClass: "ducc.pinger.test.CustomPing",
		PingClasspath: "/opt/ping/ping.jar:lib/*", PingJVMArgs: []string{"-Xmx64m", "-Dx=1"}, PingArgs: []string{"a=1,b=2"},
		PingTimeoutMS: 2000, PingDoLog: true}
	if s.PingClass != want.PingClass || s.PingClasspath != want.PingClasspath || !slices.Equal(s.PingJVMArgs, want.PingJVMArgs) ||
		!slices.Equal(s.PingArgs, want.PingArgs) || s.PingTimeoutMS != want.PingTimeoutMS || !s.PingDoLog {
		t.Errorf("built %+v\nwant %+v", s, want)
	}
	if err := ValidateService(s); err != nil {
		t.Errorf("ValidateService: %v", err)
	}
	for _, k := range []string{"service_ping_class", "service_ping_classpath", "service_ping_jvm_args", "service_ping_dolog"} {
		if !slices.Contains(keys, k) || CheckModify([]string{k}) != nil {
			t.Errorf("%s: given %v, modifiable: %v", k, slices.Contains(keys, k), CheckModify([]string{k}))
		}
	}
}

func TestValidateJavaPinger(t *testing.T) {
	base := func(f func(*wire.ServiceSpec)) wire.ServiceSpec {
		s := wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "com.example.Ping", PingClasspath: "/p.jar"}
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		s    wire.ServiceSpec
		want string // "" = accepted
	}{
		{"java pinger", base(func(*wire.ServiceSpec) {}), ""},
		{"nested class", base(func(s *wire.ServiceSpec) { s.PingClass = "a.B$C" }), ""},
		{"mixed with a command", base(func(s *wire.ServiceSpec) { s.PingExecutable = "/bin/ping.sh" }),
			"service_ping_executable (a command pinger) cannot be mixed with service_ping_class, service_ping_classpath (a Java pinger)"},
		{"jvm args with a command", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingExecutable: "/p", PingJVMArgs: []string{"-Xmx1g"}},
			"cannot be mixed with service_ping_jvm_args"},
		{"dolog with a command", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingExecutable: "/p", PingDoLog: true},
			"cannot be mixed with service_ping_dolog"},
		{"classpath alone", wire.ServiceSpec{Endpoint: "TCP:h:1", PingClasspath: "/p.jar"}, "service_ping_classpath needs service_ping_class"},
		{"jvm args alone", wire.ServiceSpec{Endpoint: "TCP:h:1", PingJVMArgs: []string{"-Xmx1g"}},
			"service_ping_jvm_args are for Java pingers: give service_ping_class"},
		{"uima-as default pinger takes jvm args", wire.ServiceSpec{Endpoint: "UIMA-AS:q:tcp://127.0.0.1:61616", PingJVMArgs: []string{"-Xmx1g"}, PingDoLog: true}, ""},
		{"custom needs a pinger", wire.ServiceSpec{Endpoint: "CUSTOM:x"}, "service_ping_executable (a command) or service_ping_class (a Java pinger)"},
		{"bad class", base(func(s *wire.ServiceSpec) { s.PingClass = "com..Ping" }), "service_ping_class: bad class name"},
		{"class path of a file", base(func(s *wire.ServiceSpec) { s.PingClass = "../../etc/x" }), "bad class name"},
		{"uima-as endpoint", wire.ServiceSpec{Endpoint: "UIMA-AS:TopLevelTaeQueue:tcp://127.0.0.1:61616"}, ""},
		{"uima-as endpoint without broker", wire.ServiceSpec{Endpoint: "UIMA-AS:q"}, "UIMA-AS endpoints are UIMA-AS:<queue>:<broker-url>"},
		{"uima-as endpoint without queue", wire.ServiceSpec{Endpoint: "UIMA-AS::tcp://h:1"}, "UIMA-AS endpoints are UIMA-AS:<queue>:<broker-url>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateService(tc.s)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestJavaPingerDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    wire.ServiceSpec
		want int64
	}{
		{"command pinger", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingExecutable: "/p"}, 500},
		{"java pinger", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "a.B"}, 5000},
		{"uima-as pinger", wire.ServiceSpec{Endpoint: "UIMA-AS:q:tcp://h:1"}, 5000},
		{"uima-as with a command pinger", wire.ServiceSpec{Endpoint: "UIMA-AS:q:tcp://h:1", PingExecutable: "/p"}, 500},
		{"given", wire.ServiceSpec{Endpoint: "CUSTOM:x", PingClass: "a.B", PingTimeoutMS: 800}, 800},
	} {
		s := tc.s
		ServiceDefaults(&s)
		if s.PingTimeoutMS != tc.want {
			t.Errorf("%s: timeout %d, want %d", tc.name, s.PingTimeoutMS, tc.want)
		}
	}
}

// writeJar writes a jar with the given entries.
func writeJar(t *testing.T, path string, entries ...string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for _, e := range entries {
		w, err := z.Create(e)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte{0xca, 0xfe, 0xba, 0xbe})
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckPingClasspath(t *testing.T) {
	dir := t.TempDir()
	writeJar(t, filepath.Join(dir, "ping.jar"), "META-INF/MANIFEST.MF", "com/example/Ping.class", "com/example/Ping$Inner.class")
	if err := os.MkdirAll(filepath.Join(dir, "classes", "org", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "classes", "org", "x", "P.class"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeJar(t, filepath.Join(dir, "lib", "a.jar"), "a/A.class")
	writeJar(t, filepath.Join(dir, "lib", "b.jar"), "b/B.class")
	if err := os.WriteFile(filepath.Join(dir, "notajar.jar"), []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, class, cp   string
		found, err, warns string
	}{
		{"in a jar", "com.example.Ping", "ping.jar", filepath.Join(dir, "ping.jar"), "", ""},
		{"nested, absolute", "com.example.Ping$Inner", filepath.Join(dir, "ping.jar"), filepath.Join(dir, "ping.jar"), "", ""},
		{"in a folder", "org.x.P", "lib/*:classes", filepath.Join(dir, "classes"), "", ""},
		{"in dir/*", "b.B", "classes:lib/*", filepath.Join(dir, "lib", "b.jar"), "", ""},
		{"nowhere", "com.example.Nope", "ping.jar:classes:lib/*", "",
			"service_ping_class com.example.Nope is not in service_ping_classpath: looked for com/example/Nope.class in " +
				filepath.Join(dir, "ping.jar") + ", " + filepath.Join(dir, "classes") + ", " + filepath.Join(dir, "lib", "a.jar") + ", " + filepath.Join(dir, "lib", "b.jar") + " on this node", ""},
		{"missing entry: a warning, not a refusal", "com.example.Nope", "ping.jar:missing.jar", "", "",
			"could not check all of service_ping_classpath on this node (not readable here: " + filepath.Join(dir, "missing.jar")},
		{"not a jar: a warning", "com.example.Nope", "notajar.jar", "", "", "not a jar"},
		{"empty", "a.B", " : ", "", `service_ping_classpath " : " names nothing`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CheckPingClasspath(tc.class, tc.cp, dir)
			if c.Found != tc.found {
				t.Errorf("found in %q, want %q (%+v)", c.Found, tc.found, c)
			}
			err := c.Error(tc.class, tc.cp)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			w := c.Warning(tc.class)
			if (tc.warns == "") != (w == "") || !strings.Contains(w, tc.warns) {
				t.Errorf("warning %q, want %q", w, tc.warns)
			}
		})
	}
}

func TestRegisteredPinger(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("org.apache.uima.ducc.sm.UimaAsPing", `# DUCC's service_monitors file
service_ping_class = org.example.BetterPing
service_ping_classpath = /opt/better/better.jar
service_ping_jvmargs = -Xmx32m
service_ping_arguments = meta-timeout=3000
service_ping_timeout = 4000
service_ping_dolog = true
internal = true
`)
	write("plain.Ping", "service_ping_classpath = /opt/p.jar\n")
	write("bad.Key", "service_ping_classpath = /opt/p.jar\nprocess_executable = /bin/sh\n")
	write("bad.Internal", "internal = maybe\n")

	p, ok, err := ReadRegisteredPinger(dir, "org.apache.uima.ducc.sm.UimaAsPing")
	want := RegisteredPinger{Name: "org.apache.uima.ducc.sm.UimaAsPing", Class: "org.example.BetterPing", Classpath: "/opt/better/better.jar",
		JVMArgs: []string{"-Xmx32m"}, Arguments: []string{"meta-timeout=3000"}, TimeoutMS: 4000, DoLog: true, Internal: true}
	if err != nil || !ok || p.Name != want.Name || p.Class != want.Class || p.Classpath != want.Classpath || !slices.Equal(p.JVMArgs, want.JVMArgs) ||
		!slices.Equal(p.Arguments, want.Arguments) || p.TimeoutMS != want.TimeoutMS || !p.DoLog || !p.Internal {
		t.Errorf("read %+v, %v, %v\nwant %+v", p, ok, err, want)
	}
	if p, ok, err := ReadRegisteredPinger(dir, "plain.Ping"); err != nil || !ok || p.Class != "plain.Ping" || p.Internal {
		t.Errorf("plain.Ping: %+v, %v, %v; want the file's name as its class, not internal", p, ok, err)
	}
	for _, name := range []string{"no.Such", "../etc/passwd", ""} {
		if _, ok, err := ReadRegisteredPinger(dir, name); ok || err != nil {
			t.Errorf("%q: ok %v, %v; want not registered", name, ok, err)
		}
	}
	if _, _, err := ReadRegisteredPinger(dir, "bad.Key"); err == nil || !strings.Contains(err.Error(), `key "process_executable" is not one of a registered pinger's`) {
		t.Errorf("bad.Key: %v", err)
	}
	if _, _, err := ReadRegisteredPinger(dir, "bad.Internal"); err == nil || !strings.Contains(err.Error(), `internal: "maybe" is not true or false`) {
		t.Errorf("bad.Internal: %v", err)
	}
}

// FuzzRegisteredPinger: any registered pinger file is read or refused
// without a panic, and one that is read names a valid class.
func FuzzRegisteredPinger(f *testing.F) {
	for _, s := range []string{"service_ping_class = a.B\ninternal = true\n", "internal\n", "service_ping_jvmargs = '-Xmx1g\n",
		"service_ping_timeout = -1\n", "service_ping_class = ../x\n", "internal = \\\n true\n", "service_ping_dolog = \\u00\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseRegisteredPinger(data, "/etc/ducc/service_monitors/x.Y")
		if err != nil {
			return
		}
		if _, err := CheckPingClass(p.Class); err != nil {
			t.Fatalf("read a registered pinger with class %q: %v", p.Class, err)
		}
		if p.TimeoutMS < 0 {
			t.Fatalf("negative timeout %d", p.TimeoutMS)
		}
	})
}

// FuzzCheckPingClass: a class name is accepted or refused without a
// panic; an accepted one is a relative path of its own (no "..", no "/",
// nothing empty) and checks again to itself.
func FuzzCheckPingClass(f *testing.F) {
	for _, s := range []string{"a.B", "a.B$C", " a.B ", "..", "a..b", "a/b", "", "1a.B", "é.Ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := CheckPingClass(s)
		if err != nil {
			return
		}
		if strings.Contains(c, "/") || strings.Contains(c, "..") || c == "" || strings.ContainsAny(c, " \t\n\x00") {
			t.Fatalf("accepted class %q as %q", s, c)
		}
		if again, err := CheckPingClass(c); err != nil || again != c {
			t.Fatalf("%q checks to %q, then %q, %v", s, c, again, err)
		}
	})
}
