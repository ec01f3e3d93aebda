package spec

import (
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ducc-project/ducc/wire"
)

// targets returns a fresh zero target for each kind.
func target(kind Kind) any {
	switch kind {
	case KindJob:
		return &Job{}
	case KindService:
		return &wire.ServiceSpec{}
	case KindRun:
		return &Run{}
	case KindReserve:
		return &Reserve{}
	}
	return nil
}

// TestKeyTable checks the table itself: names, field types, flags and
// defaults.
func TestKeyTable(t *testing.T) {
	name := regexp.MustCompile(`^[a-z][a-z_]*([a-z]|_(CR|CM|AE|CC|DD))(_overrides)?$`) // DUCC spells the UIMA parts in capitals
	seen := map[string]bool{}
	for i := range keys {
		k := &keys[i]
		if !name.MatchString(k.Name) || seen[k.Name] {
			t.Errorf("key %q: bad or repeated name", k.Name)
		}
		seen[k.Name] = true
		if k.Modify && k.Service == nil {
			t.Errorf("%s: Modify without a service use", k.Name)
		}
		used := false
		for kind := Kind(0); kind < numKinds; kind++ {
			u := k.use(kind)
			if u == nil {
				continue
			}
			used = true
			if u.help == "" {
				t.Errorf("%s (%s): no help", k.Name, kind)
			}
			var want string
			switch k.Type {
			case Text, String, Executable, Path:
				want = "*string"
			case Args, List, Env, Items:
				want = "*[]string"
			case Int:
				want = "*int"
			case Size, Minutes, Millis:
				want = "*int64"
			case Bool:
				want = "*bool"
			}
			if got := reflect.TypeOf(u.field(target(kind))).String(); got != want {
				t.Errorf("%s (%s): field is %s, want %s for its type", k.Name, kind, got, want)
			}
			if u.def != "" {
				tg := target(kind)
				if err := set(k, u, tg, Value{S: u.def}); err != nil || zero(u.field(tg)) {
					t.Errorf("%s (%s): default %q: %v", k.Name, kind, u.def, err)
				}
			}
		}
		if !used {
			t.Errorf("%s: no kind uses it", k.Name)
		}
	}
	for kind := Kind(0); kind < numKinds; kind++ {
		flags := map[string]string{}
		for _, k := range Keys(kind) {
			u := k.use(kind)
			for _, f := range append(append([]string{k.Flag(kind)}, u.also...), u.hidden...) {
				if f == "" {
					continue
				}
				if other, dup := flags[f]; dup {
					t.Errorf("%s: flag --%s of %s is also %s's", kind, f, k.Name, other)
				}
				flags[f] = k.Name
			}
		}
	}
}

// TestDefaults: the defaults documented in docs/jobs.md and
// docs/services.md.
func TestDefaults(t *testing.T) {
	var j wire.JobSpec
	JobDefaults(&j)
	wantJob := wire.JobSpec{WorkerProtocol: "stream", Pipelines: 4, InitTimeMaxMS: 120 * 60_000, InitFailuresCap: 99,
		FailuresLimit: 20, PerItemTimeMaxMS: 1440 * 60_000, MaxJobErrors: 15}
	if !reflect.DeepEqual(j, wantJob) {
		t.Errorf("job defaults\n got %+v\nwant %+v", j, wantJob)
	}
	j = wire.JobSpec{WorkerProtocol: "exec", Pipelines: 2, MaxItemRetries: 3}
	JobDefaults(&j)
	if j.WorkerProtocol != "exec" || j.Pipelines != 2 || j.MaxItemRetries != 3 {
		t.Errorf("defaults overwrote given values: %+v", j)
	}
	for _, tc := range []struct {
		in, want wire.ServiceSpec
	}{
		{wire.ServiceSpec{Executable: "/bin/s"}, wire.ServiceSpec{Executable: "/bin/s", Instances: 1, MaxInstances: 10, LingerMS: 300_000,
			FailuresWindowMS: 30 * 60_000, FailuresLimit: 5, InitFailuresLimit: 1, PingTimeoutMS: 500, PingIntervalMS: 10_000}},
		{wire.ServiceSpec{}, wire.ServiceSpec{MaxInstances: 10, LingerMS: 300_000,
			FailuresWindowMS: 30 * 60_000, FailuresLimit: 5, InitFailuresLimit: 1, PingTimeoutMS: 500, PingIntervalMS: 10_000}},
		{wire.ServiceSpec{Executable: "/bin/s", Instances: 12}, wire.ServiceSpec{Executable: "/bin/s", Instances: 12, MaxInstances: 12, LingerMS: 300_000,
			FailuresWindowMS: 30 * 60_000, FailuresLimit: 5, InitFailuresLimit: 1, PingTimeoutMS: 500, PingIntervalMS: 10_000}},
	} {
		got := tc.in
		ServiceDefaults(&got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("service defaults of %+v\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
	if DefaultPingInterval.Milliseconds() != 10_000 || DefaultPingTimeout.Milliseconds() != 500 {
		t.Errorf("ping defaults differ from the key table")
	}
}

// parseFlags runs AddFlags and FlagValues for kind over args.
func parseFlags(t *testing.T, kind Kind, keep func(*Key) bool, raw Raw, args ...string) (Raw, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs, kind, keep)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if raw == nil {
		raw = Raw{}
	}
	return raw, FlagValues(fs, kind, raw, "/cwd")
}

func TestFlags(t *testing.T) {
	t.Run("job", func(t *testing.T) {
		raw, err := parseFlags(t, KindJob, nil, Raw{"environment": {S: "A=1 B=2", At: "j:3"}},
			"--process-executable", "bin/w", "--process-executable-args", `-x "a b"`, "--process-memory-size", "2G",
			"--machine-list", "n1,n2", "--machine-list", "n3", "--environment", "B=3 C=4", "--env", "A=0",
			"--wait-for-completion=false", "--wait", "--log-directory", "logs", "--input-file", "-")
		if err != nil {
			t.Fatal(err)
		}
		j, err := BuildJob(raw, "/home/u")
		if err != nil {
			t.Fatal(err)
		}
		want := wire.JobSpec{Executable: "/cwd/bin/w", Args: []string{"-x", "a b"}, Memory: 2 << 30,
			MachineList: []string{"n1", "n2", "n3"}, Environment: []string{"A=0", "B=3", "C=4"},
			LogDirectory: "/cwd/logs", WorkingDirectory: "/home/u"}
		if !reflect.DeepEqual(j.Spec, want) || !j.Wait || j.InputFile != "-" {
			t.Errorf("got %+v (wait %v, input %q)\nwant %+v", j.Spec, j.Wait, j.InputFile, want)
		}
	})
	t.Run("run", func(t *testing.T) {
		raw, err := parseFlags(t, KindRun, nil, nil, "--memory", "512M", "--class", "fixed", "--machine", "a", "--machine", "b c",
			"--log-dir", "/l", "--detach", "--description", " two words ")
		if err != nil {
			t.Fatal(err)
		}
		r, err := BuildRun(raw)
		if err != nil {
			t.Fatal(err)
		}
		want := wire.RunRequest{Memory: 512 << 20, Class: "fixed", MachineList: []string{"a", "b", "c"}, LogDir: "/l", Description: " two words "}
		if !reflect.DeepEqual(r.Req, want) || !r.Detach {
			t.Errorf("got %+v %v, want %+v", r.Req, r.Detach, want)
		}
	})
	t.Run("reserve", func(t *testing.T) {
		raw, err := parseFlags(t, KindReserve, nil, nil, "--memory", "64G", "--wait")
		if err != nil {
			t.Fatal(err)
		}
		r, err := BuildReserve(raw)
		if err != nil || r.Req.Memory != 64<<30 || !r.Wait {
			t.Errorf("got %+v, %v", r, err)
		}
		raw, _ = parseFlags(t, KindReserve, nil, nil)
		if _, err := BuildReserve(raw); err == nil || !strings.Contains(err.Error(), "say how big") {
			t.Errorf("reserve without --memory: %v", err)
		}
	})
	t.Run("modify", func(t *testing.T) {
		raw, err := parseFlags(t, KindService, func(k *Key) bool { return k.Modify }, nil,
			"--instances", "3", "--autostart=false", "--service-linger", "30s")
		if err != nil {
			t.Fatal(err)
		}
		sp, given, err := BuildService(raw)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Instances != 3 || sp.LingerMS != 30_000 || !slices.Equal(given, []string{"instances", "autostart", "service_linger"}) {
			t.Errorf("got %+v, keys %v", sp, given)
		}
		if _, err := parseFlags(t, KindService, func(k *Key) bool { return k.Modify }, nil, "--service-request-endpoint", "x"); err == nil {
			t.Error("modify took --service-request-endpoint")
		}
	})
	for _, tc := range []struct {
		kind Kind
		args []string
		want string
	}{
		{KindJob, []string{"--process-pipeline-count", "0"}, "--process-pipeline-count: must be at least 1"},
		{KindJob, []string{"--environment", "A='x"}, "--environment: unterminated '"},
		{KindRun, []string{"--memory", "12X"}, `--memory: memory size "12X": unknown unit`},
		// The flag typed, not the key behind it too (it said "--memory: process_memory_size: ...").
		{KindRun, []string{"--memory", "-1G"}, `--memory: `},
		{KindRun, []string{"--process-memory-size", "-1G"}, `--process-memory-size: `},
		{KindService, []string{"--max-instances", "0"}, "--max-instances: must be at least 1"},
		{KindService, []string{"--service-ping-interval", "soon"}, `"soon" is neither milliseconds`},
		{KindReserve, []string{"--memory", "0"}, `the size must be positive`},
	} {
		raw, err := parseFlags(t, tc.kind, nil, nil, tc.args...)
		if err == nil {
			switch tc.kind {
			case KindJob:
				raw["process_executable"] = Value{S: "x"}
				_, err = BuildJob(raw, "/")
			case KindService:
				_, _, err = BuildService(raw)
			case KindRun:
				_, err = BuildRun(raw)
			case KindReserve:
				_, err = BuildReserve(raw)
			}
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: error %v, want %q", tc.kind, tc.args, err, tc.want)
		}
		if err != nil && strings.HasPrefix(tc.args[0], "--") && !strings.HasPrefix(err.Error(), tc.args[0]+": ") {
			t.Errorf("%s %q: error %v does not start with the flag typed", tc.kind, tc.args, err)
		}
		if err != nil && strings.Contains(err.Error(), "_") && !strings.Contains(tc.args[0], "environment") {
			t.Errorf("%s %q: error %v names a spec key besides the flag", tc.kind, tc.args, err)
		}
	}
}

func TestValidate(t *testing.T) {
	svc := func(f func(s *wire.ServiceSpec)) wire.ServiceSpec {
		s := wire.ServiceSpec{Endpoint: "HTTP:localhost:8080/", Executable: "/bin/s", Instances: 1}
		f(&s)
		return s
	}
	tests := []struct {
		name string
		err  error
		want string // "" = valid
	}{
		{"job ok", ValidateJob(wire.JobSpec{Executable: "w"}), ""},
		{"job without executable", ValidateJob(wire.JobSpec{}), "process_executable is required"},
		{"job bad protocol", ValidateJob(wire.JobSpec{Executable: "w", WorkerProtocol: "uima"}), "worker_protocol: unknown worker protocol"},
		{"job protocol not normalized", ValidateJob(wire.JobSpec{Executable: "w", WorkerProtocol: "EXEC"}), `write "exec"`},
		{"job negative", ValidateJob(wire.JobSpec{Executable: "w", MaxItemRetries: -1}), "max_item_retries must not be negative, got -1"},
		{"job time limit too large", ValidateJob(wire.JobSpec{Executable: "w", PerItemTimeMaxMS: 1 << 62}), "process_per_item_time_max is too large: 4611686018427387904 ms, at most 9223372036854 ms"},
		{"items", CheckItems([]string{"a", strings.Repeat("x", MaxItemSize+1)}), "work item 1 is 1048577 bytes"},
		{"run ok", ValidateRun(wire.RunRequest{Path: "true"}), ""},
		{"run without command", ValidateRun(wire.RunRequest{}), "no command given"},
		{"run negative memory", ValidateRun(wire.RunRequest{Path: "x", Memory: -1}), "process_memory_size must not be negative"},
		{"reserve ok", ValidateReserve(wire.ReserveRequest{Memory: 1}), ""},
		{"reserve without memory", ValidateReserve(wire.ReserveRequest{}), "say how big a machine"},
		{"service ok", ValidateService(svc(func(*wire.ServiceSpec) {})), ""},
		{"ping-only ok", ValidateService(wire.ServiceSpec{Endpoint: "TCP:db:5432"}), ""},
		{"bad endpoint", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "FTP:x" })), `unknown kind "FTP"`},
		{"no endpoint", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "" })), "write CUSTOM:<name>"},
		{"bad TCP", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "TCP:nohost" })), "TCP endpoints are TCP:<host:port>"},
		{"TCP port too big", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "TCP:127.0.0.1:99999" })), `port "99999": give a number from 1 to 65535`},
		{"TCP port negative", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "TCP:127.0.0.1:-1" })), `port "-1": give a number`},
		{"TCP port zero", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "TCP:127.0.0.1:0" })), `port "0": give a number`},
		{"TCP port name", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "TCP:db:http" })), `port "http": give a number`},
		{"TCP no host", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "TCP::5432" })), "no host"},
		{"TCP IPv6 ok", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "TCP:[::1]:65535" })), ""},
		{"HTTP bad URL", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "HTTP:http://[::1" })), "HTTP endpoints are HTTP:<url>"},
		{"HTTP no host", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "HTTP:http:///health" })), "with a host"},
		{"HTTP bad port", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "HTTP:localhost:70000/" })), `port "70000"`},
		{"HTTPS IPv6 ok", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "HTTP:https://[::1]:8443/h?x=1" })), ""},
		{"endpoint too long", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "CUSTOM:" + strings.Repeat("x", 100<<10) })), "service_request_endpoint of 102407 bytes: the limit is 1024 bytes"},
		{"long dependency", ValidateService(svc(func(s *wire.ServiceSpec) { s.Dependency = []string{"TCP:" + strings.Repeat("h", 2000) + ":1"} })), "the limit is 1024 bytes"},
		{"custom without pinger", ValidateService(svc(func(s *wire.ServiceSpec) { s.Endpoint = "CUSTOM:x" })), "give its pinger"},
		{"self dependency", ValidateService(svc(func(s *wire.ServiceSpec) { s.Dependency = []string{s.Endpoint} })), "cannot depend on itself"},
		{"bad dependency", ValidateService(svc(func(s *wire.ServiceSpec) { s.Dependency = []string{"x"} })), "service_dependency: service_request_endpoint \"x\""},
		{"negative", ValidateService(svc(func(s *wire.ServiceSpec) { s.FailuresLimit = -1 })), "instance_failures_limit must not be negative"},
		{"instances without command", ValidateService(svc(func(s *wire.ServiceSpec) { s.Executable = "" })), "need a process_executable"},
		{"instances over max", ValidateService(svc(func(s *wire.ServiceSpec) { s.Instances, s.MaxInstances = 3, 2 })), "instances (3) is more than max_instances (2)"},
		{"too many", ValidateService(svc(func(s *wire.ServiceSpec) { s.Instances = MaxServiceInstances + 1 })), "at most 65535 instances"},
	}
	for _, tc := range tests {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

func TestModify(t *testing.T) {
	want := []string{"description", "process_executable", "process_executable_args", "process_memory_size",
		"instances", "max_instances", "autostart", "service_linger", "service_dependency", "instance_failures_window",
		"instance_failures_limit", "instance_init_failures_limit", "service_ping_executable", "service_ping_arguments",
		"service_ping_timeout", "service_ping_interval", "service_ping_class", "service_ping_classpath", "service_ping_jvm_args",
		"service_ping_dolog", "working_directory", "log_directory", "environment", "administrators"}
	got := ModifiableKeys()
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("modifiable keys %v, want %v", got, want)
	}
	if err := CheckModify(nil); err == nil || !strings.Contains(err.Error(), "nothing to modify") {
		t.Errorf("CheckModify(nil) = %v", err)
	}
	if err := CheckModify([]string{"instances", "scheduling_class"}); err == nil || !strings.Contains(err.Error(), "scheduling_class cannot be modified") {
		t.Errorf("CheckModify(class) = %v", err)
	}
	// Every modifiable key: a value set in src, merged, reaches dst and
	// nothing else changes.
	src := wire.ServiceSpec{Description: "d", Executable: "/x", Args: []string{"a"}, Memory: 7, Instances: 2,
		MaxInstances: 3, Autostart: true, LingerMS: 4, Dependency: []string{"TCP:a:1"}, FailuresWindowMS: 5,
		FailuresLimit: 6, InitFailuresLimit: 7, PingExecutable: "/p", PingArgs: []string{"b"}, PingTimeoutMS: 8,
		PingIntervalMS: 9, WorkingDirectory: "/w", LogDirectory: "/l", Environment: []string{"A=1"},
		Administrators: []string{"bob"}, Endpoint: "HTTP:new", Class: "other",
		PingClass: "a.B", PingClasspath: "/c.jar", PingJVMArgs: []string{"-Xmx1m"}, PingDoLog: true}
	var all wire.ServiceSpec
	for _, k := range got {
		var one wire.ServiceSpec
		if !Merge(&one, &src, k) || reflect.DeepEqual(one, wire.ServiceSpec{}) {
			t.Errorf("Merge(%s) changed nothing", k)
		}
		Merge(&all, &src, k)
	}
	src.Endpoint, src.Class = "", ""
	if !reflect.DeepEqual(all, src) {
		t.Errorf("merging every key\n got %+v\nwant %+v", all, src)
	}
	all.Args[0] = "changed"
	if src.Args[0] != "a" {
		t.Error("Merge shares lists")
	}
	var dst wire.ServiceSpec
	if Merge(&dst, &wire.ServiceSpec{Endpoint: "HTTP:x"}, "service_request_endpoint") || dst.Endpoint != "" {
		t.Error("Merge changed the endpoint")
	}
}

func TestServiceYAMLAllKeys(t *testing.T) {
	p := writeSpec(t, "svc.yaml", `
description: cache
service_request_endpoint: CUSTOM:cache
process_executable: ./srv
process_executable_args: --port 80${DUCC_SERVICE_INSTANCE}
process_memory_size: 1G
scheduling_class: fixed
instances: 2
max_instances: 4
autostart: yes
service_linger: 30s
service_dependency: TCP:db:5432
instance_failures_window: 10
instance_failures_limit: 3
instance_init_failures_limit: 2
service_ping_executable: ping.sh
service_ping_arguments: [-q]
service_ping_timeout: 250
service_ping_interval: 2s
service_ping_class: a.Ping
service_ping_classpath: ping.jar:/opt/lib/*
service_ping_jvm_args: -Xmx32m -Da=b
service_ping_dolog: true
environment: [A=1]
working_directory: /srv
log_directory: logs
administrators: bob, carol
umask: 0o27
share_with_group: " proj "
process_gpus: 2
process_gpu_model: " NVIDIA H100 80GB HBM3 "
`)
	raw, _, err := ParseFile(p, KindService)
	if err != nil {
		t.Fatal(err)
	}
	sp, given, err := BuildService(raw)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	want := wire.ServiceSpec{Description: "cache", Endpoint: "CUSTOM:cache", Executable: filepath.Join(dir, "srv"),
		Args: []string{"--port", "80${DUCC_SERVICE_INSTANCE}"}, Memory: 1 << 30, Class: "fixed", Instances: 2, MaxInstances: 4,
		Autostart: true, LingerMS: 30_000, Dependency: []string{"TCP:db:5432"}, FailuresWindowMS: 600_000, FailuresLimit: 3,
		InitFailuresLimit: 2, PingExecutable: "ping.sh", PingArgs: []string{"-q"}, PingTimeoutMS: 250, PingIntervalMS: 2000,
		Environment: []string{"A=1"}, WorkingDirectory: "/srv", LogDirectory: filepath.Join(dir, "logs"),
		Administrators: []string{"bob", "carol"}, Umask: "0027", ShareGroup: "proj",
		PingClass: "a.Ping", PingClasspath: "ping.jar:/opt/lib/*", PingJVMArgs: []string{"-Xmx32m", "-Da=b"}, PingDoLog: true,
		GPUs: 2, GPUModel: "NVIDIA H100 80GB HBM3"}
	if !reflect.DeepEqual(sp, want) {
		t.Fatalf("spec\n got %+v\nwant %+v", sp, want)
	}
	// All but a UIMA-AS service's keys, which exclude process_executable
	// (TestBuildUIMAASService gives them), and process_gpu_memory, which
	// excludes process_gpus.
	uimaas := []string{"process_descriptor_DD", "classpath", "process_jvm_args", "jvm", "process_gpu_memory"}
	if len(given)+len(uimaas) != len(Keys(KindService)) {
		t.Errorf("keys given %v", given)
	}
	// Every key at once is a command pinger and a Java pinger: one of
	// them must go.
	if err := ValidateService(sp); err == nil || !strings.Contains(err.Error(), "cannot be mixed with") {
		t.Errorf("a command and a Java pinger: %v", err)
	}
	sp.PingClass, sp.PingClasspath, sp.PingJVMArgs, sp.PingDoLog = "", "", nil, false
	if err := ValidateService(sp); err != nil {
		t.Error(err)
	}
	if _, _, err := ParseYAML([]byte("input_items: [a]\n"), "s.yaml", "", KindService); err == nil || !strings.Contains(err.Error(), `key "input_items" belongs in a job spec, not a service registration`) {
		t.Errorf("a job key in a service: %v", err)
	}
	if _, _, err := ParseYAML([]byte("- a\n"), "s.yaml", "", KindService); err == nil || !strings.Contains(err.Error(), "a service registration is a mapping") {
		t.Errorf("not a mapping: %v", err)
	}
}

func TestCheckUmask(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"077", "0077", ""},
		{"0077", "0077", ""},
		{"0o77", "0077", ""},
		{" 22 ", "0022", ""},
		{"0", "0000", ""},
		{"0777", "0777", ""},
		{"", "", "bad umask"},
		{"1000", "", "at most 0777"},
		{"0088", "", "in octal"},
		{"u=rwx", "", "in octal"},
		{"00077", "", "in octal"},
	}
	for _, tc := range tests {
		got, err := CheckUmask(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckUmask(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
	// The head refuses what the CLI would not send.
	if err := ValidateRun(wire.RunRequest{Path: "/bin/true", Umask: "77"}); err == nil || !strings.Contains(err.Error(), "umask") {
		t.Errorf("ValidateRun with umask 77: %v", err)
	}
	if err := ValidateJob(wire.JobSpec{Executable: "/bin/true", Umask: "0077"}); err != nil {
		t.Errorf("ValidateJob with umask 0077: %v", err)
	}
}

func TestCheckGroupName(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"proj", "proj", ""},
		{" lab-1 ", "lab-1", ""},
		{"", "", "bad group name"},
		{"two words", "", "bad group name"},
		{"a:b", "", "bad group name"},
		{"../etc", "", "bad group name"},
	}
	for _, tt := range tests {
		got, err := CheckGroupName(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckGroupName(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}
