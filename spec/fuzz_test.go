package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// env is a fixed environment for ${VAR} in fuzzed properties files.
func env(name string) (string, bool) {
	if name == "HOME" {
		return "/home/u", true
	}
	return "", false
}

// seedFiles adds the shipped examples (and a few edge cases) to a corpus.
func seedFiles(f *testing.F, pattern string, extra ...string) {
	files, _ := filepath.Glob(pattern)
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, e := range extra {
		f.Add([]byte(e))
	}
}

// fuzzDDs are the deployment descriptors the fuzzed service specs may
// name (process_DD): never a file of the machine.
var fuzzDDs = fakeDDs{
	"/base/dd.xml":         duccSleepDD,
	"/base/cp.jar!a/D.xml": dd("q", "tcp://b:1", `<analysisEngine async="false"><scaleout numberOfInstances="2"/></analysisEngine>`),
	"/base/bad.xml":        dd("q", "x", `<analysisEngine async="true"/>`),
}

// FuzzParseProperties: any file is read or refused without a panic, and
// what is read builds a job or a service (or is refused) without a panic.
func FuzzParseProperties(f *testing.F) {
	seedFiles(f, "../examples/*/*.service", "process_DD = dd.xml\nprocess_jvm_args = -Dx=${DefaultBrokerURL}\n",
		"service_request_endpoint UIMA-AS:q:${DefaultBrokerURL}\nprocess_DD a.D\nclasspath cp.jar\njvm /j\nservice_ping_executable p\n")
	seedFiles(f, "../examples/*/*.properties",
		"process_executable = ${HOME}/w \\\n  more\nenvironment = A=1 B='x y'\n",
		"description = caf\\u00e9 $${x} ${description}\n", "a\\", "\\u12", "key:value\n!c\n#c\n", "=\n:\n",
		// DUCC's Java pinger keys (and its misspelling of one).
		"service_request_endpoint = CUSTOM:x\nservice_ping_class = a.B$C\nservice_ping_classpath = ${HOME}/p.jar:lib/*\n"+
			"service_ping_jvmargs = -Xmx64m '-Dx=a b'\nservice_ping_arguments = a=1,b=2\nservice_ping_dolog\nservice_ping_timeout = 5s\n",
		"service_request_endpoint = UIMA-AS:q:tcp://h:1\nservice_ping_jvm_args = '\nservice_ping_class = ..\n",
		"service_request_endpoint = CUSTOM:x\nservice_ping_executable = p\nservice_ping_class = a.B\nservice_ping_dolog = maybe\n",
		// GPU requests: whole GPUs, a slice, both, a model alone.
		"process_executable = w\nprocess_gpus = 2\nprocess_gpu_model = NVIDIA H100 80GB HBM3\n",
		"process_executable = w\nprocess_gpu_memory = 20G\n", "process_executable = w\nprocess_gpus = 1\nprocess_gpu_memory = -1\n",
		"process_executable = w\nprocess_gpu_model = \\u0000\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kind := range []Kind{KindJob, KindService} {
			raw, _, err := ParseProperties(data, "f", "/base", env, kind)
			if err != nil {
				continue
			}
			for k, v := range raw {
				if _, ok := lookup(kind, k); !ok || v.At == "" || v.IsList {
					t.Fatalf("%s: bad raw entry %q: %+v", kind, k, v)
				}
			}
			if kind == KindJob {
				if j, err := BuildJob(raw, "/"); err == nil {
					_ = ValidateJob(j.Spec)
				}
			} else if s, _, err := buildService(raw, "/base", fuzzDDs, fakeUIMAASPaths); err == nil {
				_ = ValidateService(s)
				if ResolveServiceBroker(&s, "tcp://b:1") == nil {
					_ = ValidateService(s)
				}
			}
		}
	})
}

// FuzzParseJobYAML: any YAML job spec is read and built, or refused,
// without a panic; a built job always has a command and a directory.
func FuzzParseJobYAML(f *testing.F) {
	seedFiles(f, "../examples/*/*.yaml",
		"process_executable: x\ninput_items: [a, b]\nenvironment: {A: 1, B: }\n",
		"- a\n", "process_executable: [x\n", "&a x: *a\n", "process_memory_size: 1e400\n",
		"process_executable: x\nprocess_gpus: 4\nprocess_gpu_model: H100\n", "process_executable: x\nprocess_gpu_memory: 1e400\n",
		"process_executable: x\nprocess_gpus: [1]\nprocess_gpu_memory: 10G\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, _, err := ParseYAML(data, "f.yaml", "/base", KindJob)
		if err != nil {
			return
		}
		j, err := BuildJob(raw, "/cwd")
		if err != nil {
			return
		}
		if j.Spec.Executable == "" || j.Spec.WorkingDirectory == "" {
			t.Fatalf("built a job without a command or directory: %+v", j.Spec)
		}
		if j.InputFile != "" && j.HaveItems {
			t.Fatal("built a job with both input_file and input_items")
		}
		JobDefaults(&j.Spec)
		if err := ValidateJob(j.Spec); err != nil {
			t.Fatalf("a job the CLI builds is refused by the head's checks: %v", err)
		}
	})
}

// FuzzParseServiceYAML: the same for service registrations, and a merge
// of everything given is the registration itself.
func FuzzParseServiceYAML(f *testing.F) {
	seedFiles(f, "../examples/services/*.yaml", "service_request_endpoint: CUSTOM:x\nservice_ping_executable: p\n",
		"service_request_endpoint: TCP:127.0.0.1:99999\n", "service_request_endpoint: TCP:127.0.0.1:-1\n",
		"service_request_endpoint: \"HTTP:http://[::1\"\n", "service_request_endpoint: HTTP:https://[::1]:8443/h\n",
		"service_request_endpoint: CUSTOM:"+strings.Repeat("x", 100<<10)+"\nservice_ping_executable: p\n",
		"service_request_endpoint: CUSTOM:x\nservice_ping_class: a.B\nservice_ping_classpath: [a, b]\nservice_ping_jvm_args: [-Xmx1g, -Da=b c]\nservice_ping_dolog: yes\n",
		"service_request_endpoint: UIMA-AS:q:tcp://h:1\nservice_ping_jvmargs: -Xmx1g\nservice_ping_class: {a: b}\n",
		"service_request_endpoint: UIMA-AS:\nservice_ping_class: \"\\u00e9.\\u0000\"\n",
		"service_request_endpoint: UIMA-AS:TopLevelTaeQueue:${DefaultBrokerURL}\nprocess_DD: dd.xml\nprocess_jvm_args: -Xmx1G\nservice_ping_executable: p\n",
		"process_DD: a.D\nclasspath: cp.jar:lib/*\njvm: /opt/java\n", "process_DD: bad.xml\n", "classpath: x\nprocess_executable: y\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, _, err := ParseYAML(data, "s.yaml", "/base", KindService)
		if err != nil {
			return
		}
		s, keys, err := buildService(raw, "/base", fuzzDDs, fakeUIMAASPaths)
		if err != nil {
			return
		}
		_ = ValidateService(s)
		if s.ProcessDD != "" && (s.Executable == "" || s.DDEndpoint == "" || s.Endpoint == "") {
			t.Fatalf("a UIMA-AS service built without its command or endpoints: %+v", s)
		}
		mod := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return CheckModify([]string{k}) != nil })
		var m = s
		m.Description, m.Executable, m.Args, m.Memory = "", "", nil, 0
		MergeKeys(&m, &s, mod)
		if s.ProcessDD != "" { // ducc's command for the DD: not a key, not merged
			m.Executable, m.Args = s.Executable, s.Args
		}
		if len(m.Args) != len(s.Args) || m.Executable != s.Executable || m.Description != s.Description || m.Memory != s.Memory {
			t.Fatalf("merging %v gives %+v, want %+v", mod, m, s)
		}
	})
}

// quote writes words so that a shell (and SplitShell) reads them back.
func quote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// FuzzShellWords: SplitShell never panics, and words it returns, quoted,
// split back into the same words.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{"", "a b", `-c 'echo "$X"; exit 3'`, `"a \"b\" \\ \$HOME" c\ d`, `''`, `a'b'"c"`, `'`, `"\`, "\\", "a\tb\nc\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitShell(s)
		if err != nil {
			return
		}
		back, err := SplitShell(quote(words))
		if err != nil || !slices.Equal(back, words) {
			t.Fatalf("SplitShell(%q) = %q; quoted %q reads back as %q, %v", s, words, quote(words), back, err)
		}
	})
}

// FuzzParseEndpoint: any endpoint is accepted or refused without a panic,
// and an accepted one is short and parses again to the same kind and target.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"TCP:db:5432", "TCP:127.0.0.1:99999", "TCP:127.0.0.1:-1", "TCP:[::1]:1", "HTTP:http://[::1",
		"HTTP:localhost:8080/", "HTTP:https://h:0/", "CUSTOM:x", "x", strings.Repeat("TCP:", 300),
		"UIMA-AS:q:tcp://127.0.0.1:61616", "UIMA-AS:q:failover:(tcp://a:1,tcp://b:2)", "UIMA-AS:q", "UIMA-AS::x", "uima-as: : ",
		"UIMA-AS:q:${DefaultBrokerURL}", "uima-as:q:tcp://h:1?x=y", "UIMA-AS::b", "UIMA-AS:q b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ep string) {
		kind, target, err := ParseEndpoint(ep)
		if err != nil {
			return
		}
		if len(ep) > MaxEndpointSize {
			t.Fatalf("accepted an endpoint of %d bytes", len(ep))
		}
		again := kind + ":" + target
		if len(again) > MaxEndpointSize { // http:// added to a long one
			return
		}
		k2, t2, err := ParseEndpoint(again)
		if err != nil || k2 != kind || t2 != target {
			t.Fatalf("%q parsed to %s:%s, which parses to %s:%s, %v", ep, kind, target, k2, t2, err)
		}
	})
}

// FuzzParseDD: any deployment descriptor is read or refused without a
// panic; what is read has a queue without blanks or colons and a broker,
// which make a UIMA-AS endpoint ParseEndpoint takes.
func FuzzParseDD(f *testing.F) {
	seedFiles(f, "../examples/uima-as/*.xml", duccSleepDD, dd("q", "", ""), dd("q", "x", `<analysisEngine async="true"/>`),
		`<analysisEngineDeploymentDescription><deployment><service><inputQueue endpoint="a:b"/></service></deployment></analysisEngineDeploymentDescription>`,
		"<x/>", "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e \"e\">]><x>&e;</x>")
	f.Fuzz(func(t *testing.T, data []byte) {
		queue, broker, err := ParseDD(data)
		if err != nil {
			return
		}
		if queue == "" || broker == "" || strings.ContainsAny(queue, " \t\r\n:") {
			t.Fatalf("read queue %q, broker %q", queue, broker)
		}
		if strings.ContainsAny(broker, " \t\r\n") {
			return // refused by ParseEndpoint, which says why
		}
		if len(queue)+len(broker) < MaxEndpointSize-20 {
			if _, _, err := ParseEndpoint(EndpointUIMAAS + ":" + queue + ":" + broker); err != nil {
				t.Fatalf("the DD's endpoint is refused: %v", err)
			}
		}
	})
}
