package spec

import (
	"archive/zip"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// fakeDDs is a ddReader over a map: files by absolute path, classpath
// resources by entry and name ("entry!name").
type fakeDDs map[string]string

func (f fakeDDs) readFile(path string) ([]byte, error) {
	if s, ok := f[path]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

func (f fakeDDs) readOnClasspath(entries []string, name string) ([]byte, string, error) {
	for _, e := range entries {
		if s, ok := f[e+"!"+name]; ok {
			return []byte(s), e + "!/" + name, nil
		}
	}
	return nil, "", fs.ErrNotExist
}

func fakeUIMAASPaths() uimaasPaths {
	return uimaasPaths{jar: "/d/ducc-uima.jar", uimaas: "/u/as.jar:/u/core.jar"}
}

// dd is a deployment descriptor with the given service and casPool parts.
func dd(queue, broker, ae string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<analysisEngineDeploymentDescription xmlns="http://uima.apache.org/resourceSpecifier">
  <name>t</name>
  <deployment protocol="jms" provider="activemq">
    <casPool numberOfCASes="5" initialFsHeapSize="2000"/>
    <service>
      <inputQueue endpoint="` + queue + `" brokerURL="` + broker + `" prefetch="1"/>
      <topDescriptor><import name="org.example.Top"/></topDescriptor>
      ` + ae + `
    </service>
  </deployment>
</analysisEngineDeploymentDescription>`
}

// duccSleepDD is DUCC's DDSleepDescriptor.xml: a synchronous aggregate
// with delegate settings.
var duccSleepDD = dd("TopLevelTaeQueue", "${DefaultBrokerURL}", `<analysisEngine>
        <delegates>
          <analysisEngine key="SleepMultiplier"><casMultiplier poolSize="5"/></analysisEngine>
          <analysisEngine key="SleepAe"><scaleout numberOfInstances="4"/></analysisEngine>
        </delegates>
      </analysisEngine>`)

func TestBuildUIMAASService(t *testing.T) {
	files := fakeDDs{
		"/w/dd/Sleep.xml":           duccSleepDD,
		"/w/lib/app.jar!a/b/DD.xml": dd("byname", "tcp://b:61616", ""),
		"/w/Plain.xml":              dd("plain", "", `<analysisEngine key="k" async="false"><scaleout numberOfInstances="2"/></analysisEngine>`),
		"/w/Async.xml":              dd("q", "${defaultBrokerURL}", `<analysisEngine async="true"/>`),
		"/w/Remote.xml":             dd("q", "x", `<analysisEngine async="false"><delegates><remoteAnalysisEngine key="R"/></delegates></analysisEngine>`),
		"/w/CM.xml":                 dd("q", "x", `<analysisEngine><casMultiplier poolSize="2"/></analysisEngine>`),
		"/w/Scale0.xml":             dd("q", "x", `<analysisEngine><scaleout numberOfInstances="0"/></analysisEngine>`),
		"/w/Props.xml":              dd("${queue}", "${myBroker}", ""),
		"/w/Job.xml":                `<analysisEngineDescription xmlns="http://uima.apache.org/resourceSpecifier"/>`,
		"/w/Broken.xml":             `<analysisEngineDeploymentDescription><deployment>`,
	}
	cp := "/d/ducc-uima.jar:lib/app.jar:/u/as.jar:/u/core.jar"
	tests := []struct {
		name     string
		text     string
		endpoint string // the endpoint built
		ddEP     string
		args     []string
		exe      string
		wantErr  string
	}{
		{
			name: "DUCC's 1.service",
			text: "service_request_endpoint = UIMA-AS:TopLevelTaeQueue:${DefaultBrokerURL}\nprocess_DD = dd/Sleep.xml\nclasspath = lib/app.jar\n" +
				"process_jvm_args = -Xmx100M -DDefaultBrokerURL=${DefaultBrokerURL}\ninstances = 1\nautostart = true\n",
			endpoint: "UIMA-AS:TopLevelTaeQueue:${DefaultBrokerURL}", ddEP: "UIMA-AS:TopLevelTaeQueue:${DefaultBrokerURL}", exe: "java",
			args: []string{"-Xmx100M", "-DDefaultBrokerURL=${DefaultBrokerURL}", "-cp", cp, "ducc.uima.ServiceMain",
				"--dd", "dd/Sleep.xml", "--endpoint", "UIMA-AS:TopLevelTaeQueue:${DefaultBrokerURL}"},
		},
		{
			name: "endpoint read from a DD found by name, with a jvm",
			text: "process_DD = a.b.DD\nclasspath = lib/app.jar\njvm = /opt/jdk/bin/java\n", endpoint: "UIMA-AS:byname:tcp://b:61616",
			ddEP: "UIMA-AS:byname:tcp://b:61616", exe: "/opt/jdk/bin/java",
			args: []string{"-cp", cp, "ducc.uima.ServiceMain", "--dd", "a.b.DD", "--endpoint", "UIMA-AS:byname:tcp://b:61616"},
		},
		{
			name: "no brokerURL is UIMA-AS's default", text: "process_DD = /w/Plain.xml\n",
			endpoint: "UIMA-AS:plain:${defaultBrokerURL}", ddEP: "UIMA-AS:plain:${defaultBrokerURL}", exe: "java",
			args: []string{"-cp", "/d/ducc-uima.jar:/u/as.jar:/u/core.jar", "ducc.uima.ServiceMain", "--dd", "/w/Plain.xml", "--endpoint", "UIMA-AS:plain:${defaultBrokerURL}"},
		},
		{
			name: "placeholders from process_jvm_args", text: "process_DD = Props.xml\nprocess_jvm_args = -Dqueue=words -DmyBroker=tcp://h:1\n",
			endpoint: "UIMA-AS:words:tcp://h:1", ddEP: "UIMA-AS:words:tcp://h:1", exe: "java",
			args: []string{"-Dqueue=words", "-DmyBroker=tcp://h:1", "-cp", "/d/ducc-uima.jar:/u/as.jar:/u/core.jar", "ducc.uima.ServiceMain",
				"--dd", "Props.xml", "--endpoint", "UIMA-AS:words:tcp://h:1"},
		},
		{name: "async aggregate", text: "process_DD = Async.xml\n", wantErr: `process_DD Async.xml (/w/Async.xml): an async aggregate (async="true")`},
		{name: "remote delegate", text: "process_DD = Remote.xml\n", wantErr: "a remote delegate (R)"},
		{name: "top-level CAS multiplier", text: "process_DD = CM.xml\n", wantErr: "top-level CAS multipliers"},
		{name: "scaleout 0", text: "process_DD = Scale0.xml\n", wantErr: `scaleout numberOfInstances "0"`},
		{name: "not a DD", text: "process_DD = Job.xml\n", wantErr: "a <analysisEngineDescription>, not a UIMA-AS <analysisEngineDeploymentDescription>"},
		{name: "broken XML", text: "process_DD = Broken.xml\n", wantErr: "not a UIMA-AS deployment descriptor"},
		{name: "missing file", text: "process_DD = nope.xml\n", wantErr: "relative to working_directory /w"},
		{name: "missing name", text: "process_DD = org.nope.DD\nclasspath = lib/app.jar\n", wantErr: "nor found by name on classpath (as org/nope/DD.xml)"},
		{name: "DD and a command", text: "process_DD = Plain.xml\nprocess_executable = /bin/true\n", wantErr: "process_executable with process_DD"},
		{name: "DD and command arguments", text: "process_DD = Plain.xml\nprocess_executable_args = a\n", wantErr: "process_executable_args with process_DD"},
		{name: "class path without a DD", text: "process_executable = /bin/true\nclasspath = a.jar\n", wantErr: "classpath is for UIMA-AS services"},
		{name: "JVM options without a DD", text: "process_executable = /bin/true\nprocess_jvm_args = -Xmx1G\n", wantErr: "process_jvm_args is for UIMA-AS services"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, warn, err := ParseProperties([]byte(tc.text), "t", "/w", env, KindService)
			if err != nil {
				t.Fatal(err)
			}
			if len(warn) > 0 {
				t.Errorf("warnings: %q (${DefaultBrokerURL} is the head's to resolve, not left as written)", warn)
			}
			s, _, err := buildService(raw, "/w", files, fakeUIMAASPaths)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Endpoint != tc.endpoint || s.DDEndpoint != tc.ddEP || s.Executable != tc.exe || !slices.Equal(s.Args, tc.args) {
				t.Errorf("built endpoint %q, DD endpoint %q, command %q %q\nwant %q, %q, %q %q", s.Endpoint, s.DDEndpoint, s.Executable, s.Args, tc.endpoint, tc.ddEP, tc.exe, tc.args)
			}
		})
	}
}

// TestValidateUIMAASService: the endpoint and the DD's, once the head
// resolved ${DefaultBrokerURL} in both; a UIMA-AS endpoint needs a pinger
// until ducc has its default one.
func TestValidateUIMAASService(t *testing.T) {
	base := wire.ServiceSpec{Endpoint: "UIMA-AS:words:${DefaultBrokerURL}", DDEndpoint: "UIMA-AS:words:${DefaultBrokerURL}",
		ProcessDD: "dd.xml", Executable: "java", Args: []string{"--endpoint", "UIMA-AS:words:${DefaultBrokerURL}"}, PingExecutable: "ping"}
	tests := []struct {
		name    string
		change  func(s *wire.ServiceSpec)
		broker  string // head.default_broker_url; "-": not resolved (the CLI's check)
		wantErr string
	}{
		{name: "CLI: placeholders compared later", broker: "-"},
		{name: "CLI: another queue, placeholders left", broker: "-", change: func(s *wire.ServiceSpec) { s.Endpoint = "UIMA-AS:other:${DefaultBrokerURL}" }},
		{name: "head: resolved and equal", broker: "tcp://b:61616"},
		{name: "head: DD's defaultBrokerURL is the cluster's broker", broker: "tcp://b:61616", change: func(s *wire.ServiceSpec) { s.DDEndpoint = "UIMA-AS:words:${defaultBrokerURL}" }},
		{name: "head: another queue", broker: "tcp://b:61616", change: func(s *wire.ServiceSpec) { s.Endpoint = "UIMA-AS:other:${DefaultBrokerURL}" },
			wantErr: "service_request_endpoint UIMA-AS:other:tcp://b:61616 does not match the endpoint of process_DD dd.xml: UIMA-AS:words:tcp://b:61616"},
		{name: "head: another broker", broker: "tcp://b:61616", change: func(s *wire.ServiceSpec) { s.Endpoint = "UIMA-AS:words:tcp://c:61616" },
			wantErr: "UIMA-AS:words:tcp://c:61616 does not match the endpoint of process_DD dd.xml: UIMA-AS:words:tcp://b:61616"},
		{name: "head: no broker configured", broker: "",
			wantErr: "UIMA-AS:words:${DefaultBrokerURL}: ${DefaultBrokerURL} is the cluster's UIMA-AS broker, and this cluster names none"},
		{name: "head: another placeholder", broker: "tcp://b:61616", change: func(s *wire.ServiceSpec) { s.Endpoint, s.DDEndpoint = "UIMA-AS:${q}:x", "UIMA-AS:${q}:x" },
			wantErr: "only ${DefaultBrokerURL} is resolved by ducc"},
		{name: "kind in lower case", broker: "tcp://b:61616", change: func(s *wire.ServiceSpec) { s.Endpoint = "uima-as:words:${DefaultBrokerURL}" }},
		{name: "DD's endpoint missing (not registered by the CLI)", broker: "tcp://b:61616", change: func(s *wire.ServiceSpec) { s.DDEndpoint = "" },
			wantErr: "the endpoint its DD declares is missing from the registration"},
		{name: "DD with a TCP endpoint", broker: "-", change: func(s *wire.ServiceSpec) { s.Endpoint = "TCP:h:1" },
			wantErr: "its service_request_endpoint is UIMA-AS:<queue>:<broker-url>"},
		{name: "no pinger of its own: ducc's UIMA-AS pinger", broker: "tcp://b:1", change: func(s *wire.ServiceSpec) { s.PingExecutable = "" }},
		{name: "ping-only UIMA-AS service with a command pinger", broker: "tcp://b:1", change: func(s *wire.ServiceSpec) {
			s.ProcessDD, s.DDEndpoint, s.Executable, s.Args, s.Endpoint = "", "", "", nil, "UIMA-AS:q:tcp://x:1"
		}},
		{name: "bad UIMA-AS endpoint", broker: "-", change: func(s *wire.ServiceSpec) { s.Endpoint = "UIMA-AS:nobroker" },
			wantErr: "UIMA-AS endpoints are UIMA-AS:<queue>:<broker-url>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.Args = slices.Clone(base.Args)
			if tc.change != nil {
				tc.change(&s)
			}
			var err error
			if tc.broker != "-" {
				err = ResolveServiceBroker(&s, tc.broker)
			}
			if err == nil {
				err = ValidateService(s)
			}
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && tc.broker != "-" && tc.broker != "" && s.ProcessDD != "" && s.Args[1] != "UIMA-AS:words:"+tc.broker {
				t.Errorf("the instances' --endpoint is %q, not resolved", s.Args[1])
			}
		})
	}
}

// TestResolveBroker: both DUCC's and UIMA-AS's names; nothing without a
// broker.
func TestResolveBroker(t *testing.T) {
	for _, tc := range []struct{ in, url, want string }{
		{"UIMA-AS:q:${DefaultBrokerURL}", "tcp://b:1", "UIMA-AS:q:tcp://b:1"},
		{"UIMA-AS:q:${defaultBrokerURL}", "tcp://b:1", "UIMA-AS:q:tcp://b:1"},
		{"UIMA-AS:q:${DefaultBrokerURL}", "", "UIMA-AS:q:${DefaultBrokerURL}"},
		{"TCP:h:1", "tcp://b:1", "TCP:h:1"},
		{"UIMA-AS:q:${Other}", "tcp://b:1", "UIMA-AS:q:${Other}"},
	} {
		if got := ResolveBroker(tc.in, tc.url); got != tc.want {
			t.Errorf("ResolveBroker(%q, %q) = %q, want %q", tc.in, tc.url, got, tc.want)
		}
	}
}

// TestReadDDOnClasspath: the filesystem reader finds a DD by name in a
// folder, a jar and dir/*, as the JVM's class path would.
func TestReadDDOnClasspath(t *testing.T) {
	dir := t.TempDir()
	writeJar := func(path, name, content string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		z := zip.NewWriter(f)
		w, _ := z.Create(name)
		_, _ = w.Write([]byte(content))
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := os.MkdirAll(filepath.Join(dir, "classes", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "classes", "a", "b", "InDir.xml"), []byte(dd("indir", "x", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeJar(filepath.Join(dir, "one.jar"), "a/b/InJar.xml", dd("injar", "x", ""))
	writeJar(filepath.Join(dir, "lib", "star.jar"), "a/b/InStar.xml", dd("instar", "x", ""))
	entries := []string{filepath.Join(dir, "classes"), filepath.Join(dir, "one.jar"), filepath.Join(dir, "lib", "*")}
	for name, queue := range map[string]string{"a.b.InDir": "indir", "a.b.InJar": "injar", "a.b.InStar": "instar"} {
		data, where, err := readDD(name, dir, entries, osDDReader{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if q, _, err := ParseDD(data); err != nil || q != queue {
			t.Errorf("%s (%s): queue %q, %v", name, where, q, err)
		}
	}
	if _, _, err := readDD("a.b.Nope", dir, entries, osDDReader{}); err == nil {
		t.Error("found a.b.Nope")
	}
}

// TestUIMAASExamples: the shipped broker registration and DUCC-style
// service build; the DD is read from the repository.
func TestUIMAASExamples(t *testing.T) {
	raw, _, err := ParseFile("../examples/uima-as/activemq.yaml", KindService)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := BuildService(raw)
	if err != nil || b.Endpoint != "TCP:127.0.0.1:61616" || ValidateService(b) != nil {
		t.Fatalf("activemq.yaml: %v %+v", err, b)
	}
	if _, err := os.Stat(b.Executable); err != nil {
		t.Errorf("activemq.yaml: %v", err)
	}
	root, _ := filepath.Abs("..")
	raw, warn, err := ParseFile("../examples/uima-as/words.service", KindService)
	if err != nil || len(warn) > 0 {
		t.Fatalf("words.service: %v %q", err, warn)
	}
	s, _, err := buildService(raw, root, osDDReader{}, fakeUIMAASPaths)
	if err != nil || s.Endpoint != "UIMA-AS:words:${DefaultBrokerURL}" || s.DDEndpoint != s.Endpoint {
		t.Fatalf("words.service: %v %+v", err, s)
	}
	s.PingExecutable = "java"
	if err := ResolveServiceBroker(&s, "tcp://127.0.0.1:61616"); err != nil {
		t.Fatal(err)
	}
	if err := ValidateService(s); err != nil {
		t.Fatal(err)
	}
}
