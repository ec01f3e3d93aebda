package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// A job spec (SPEC §5) is a YAML file or a DUCC-style properties file. Both
// are first read into a rawSpec (key → value as written, with where it was
// written), flags are laid over it, and buildJob turns the result into a
// wire.JobSpec plus what the CLI itself does (wait, cancel on interrupt,
// where the items come from).

// keyKind says how a spec key's value is read.
type keyKind int

const (
	kString   keyKind = iota
	kPath             // a path; relative ones are resolved against the spec file's folder (flags: the cwd)
	kArgs             // a YAML list, or a string split like a shell would
	kList             // a YAML list, or a comma/space separated string
	kEnv              // a YAML map, a YAML list of K=V, or "A=1 B=2"
	kInt              // a whole number
	kSize             // a memory size: 4G, 512M, 4GiB; a bare number is GiB
	kMinutes          // minutes (a bare number, decimals allowed) or a duration like 90s
	kBool             // true/false/yes/no/on/off; an empty value means true
	kProtocol         // stream or exec
	kItems            // YAML list only
)

// specKey is one key of SPEC §5.
type specKey struct {
	name  string
	kind  keyKind
	min   int64 // for kInt: the smallest value allowed
	usage string
}

// specKeys lists every key a job spec may contain, in SPEC order.
var specKeys = []specKey{
	{name: "description", kind: kString, usage: "free text shown by 'ducc jobs'"},
	{name: "scheduling_class", kind: kString, usage: "scheduling class (default: placement rules, else the default FAIR class)"},
	{name: "process_executable", kind: kString, usage: "the worker command (required)"},
	{name: "process_executable_args", kind: kArgs, usage: "arguments of the worker command, split like a shell would"},
	{name: "worker_protocol", kind: kProtocol, usage: "stream (one long-lived worker, JSON lines) or exec (one run per item) (default stream)"},
	{name: "input_file", kind: kPath, usage: "file with the work items, one per line ('-' = standard input)"},
	{name: "input_items", kind: kItems, usage: "the work items as a YAML list (YAML specs only)"},
	{name: "process_memory_size", kind: kSize, usage: "memory per job process, e.g. 4G or 512M (default 4G)"},
	{name: "process_pipeline_count", kind: kInt, min: 1, usage: "items a job process works on at once (default 4)"},
	{name: "process_deployments_max", kind: kInt, min: 0, usage: "cap on job processes (default: unlimited)"},
	{name: "process_initialization_time_max", kind: kMinutes, usage: "minutes a job process may take to become ready (default 120)"},
	{name: "process_initialization_failures_cap", kind: kInt, min: 1, usage: "init failures after which no new job processes are added (default 99)"},
	{name: "process_failures_limit", kind: kInt, min: 1, usage: "job process failures after init that fail the job (default 20)"},
	{name: "process_per_item_time_max", kind: kMinutes, usage: "minutes per item before it times out (default 1440)"},
	{name: "max_job_errors", kind: kInt, min: 1, usage: "item errors that fail the job (default 15)"},
	{name: "max_item_retries", kind: kInt, min: 0, usage: "retries of an item that failed or timed out (default 0)"},
	{name: "service_dependency", kind: kList, usage: "service endpoints the job needs, comma or space separated"},
	{name: "working_directory", kind: kPath, usage: "working directory of the job processes (default: the current directory)"},
	{name: "log_directory", kind: kPath, usage: "log directory; logs go to <dir>/<id>/ (default ~/ducc/logs)"},
	{name: "environment", kind: kEnv, usage: "environment of the job processes: \"A=1 B='two words'\" (default: none beyond PATH, HOME, USER)"},
	{name: "machine_list", kind: kList, usage: "run only on these nodes, comma or space separated"},
	{name: "wait_for_completion", kind: kBool, usage: "wait for the job to end, showing progress; exit 0 only if it completed (EndOfJob)"},
	{name: "cancel_on_interrupt", kind: kBool, usage: "while waiting, Ctrl-C cancels the job (implies waiting)"},
	{name: "attach_console", kind: kBool, usage: "accepted for DUCC compatibility; use 'ducc logs ID -f' to follow a job process's output"},
}

// duccOnlyKeys are DUCC/UIMA keys that ducc does not take, with what to do
// instead, so that people porting a spec get a useful answer.
var duccOnlyKeys = map[string]string{
	"driver_descriptor_cr":           "ducc has no collection reader: give the items with input_file, input_items or standard input",
	"driver_descriptor_cr_overrides": "ducc has no collection reader: give the items with input_file, input_items or standard input",
	"process_descriptor_ae":          "ducc runs any command: give the worker with process_executable and process_executable_args",
	"process_descriptor_cm":          "ducc runs any command: give the worker with process_executable and process_executable_args",
	"process_descriptor_cc":          "ducc runs any command: give the worker with process_executable and process_executable_args",
	"process_descriptor_dd":          "ducc runs any command: give the worker with process_executable and process_executable_args",
	"process_jvm_args":               "ducc runs any command: put JVM options in process_executable_args",
	"classpath":                      "ducc runs any command: put the class path in process_executable_args or environment (CLASSPATH=...)",
	"process_thread_count":           "the ducc name is process_pipeline_count",
	"driver_jvm_args":                "ducc has no job driver process to configure",
	"driver_exception_handler":       "the error handler's limits are max_job_errors and max_item_retries",
	"process_error_window_threshold": "the error handler's limits are max_job_errors and max_item_retries",
	"process_error_window_size":      "the error handler's limits are max_job_errors and max_item_retries",
}

// keySet is the keys of one kind of spec file (jobs, services).
type keySet struct {
	keys []specKey
	hint map[string]string // keys of DUCC that ducc does not take, with what to do instead
}

var jobKeys = keySet{keys: specKeys, hint: duccOnlyKeys}

func (ks keySet) lookup(name string) (specKey, bool) {
	for _, k := range ks.keys {
		if k.name == name {
			return k, true
		}
	}
	return specKey{}, false
}

func (ks keySet) list() string {
	names := make([]string, len(ks.keys))
	for i, k := range ks.keys {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

func (ks keySet) unknown(name string) error {
	if hint, ok := ks.hint[strings.ToLower(name)]; ok {
		return fmt.Errorf("key %q is not used by ducc: %s", name, hint)
	}
	for _, k := range ks.keys {
		if strings.EqualFold(k.name, strings.ReplaceAll(name, "-", "_")) {
			return fmt.Errorf("unknown key %q; did you mean %q? valid keys are: %s", name, k.name, ks.list())
		}
	}
	return fmt.Errorf("unknown key %q; valid keys are: %s", name, ks.list())
}

// rawValue is one key's value as written: a scalar, a list (YAML) or a map
// (YAML, environment only).
type rawValue struct {
	s      string
	list   []string
	isList bool
	at     string // where it was written: "job.yaml:12" or "--flag"
	base   string // folder that relative paths are resolved against
}

// rawSpec is a spec as read, before interpretation.
type rawSpec map[string]rawValue

// parseSpecFile reads a spec file. .yaml and .yml are YAML; anything else
// is read as a properties file and, if that fails, as YAML.
func parseSpecFile(path string) (rawSpec, error) { return parseSpecFileKeys(path, jobKeys, "job spec") }

func parseSpecFileKeys(path string, ks keySet, what string) (rawSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	base := filepath.Dir(path)
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		raw, err := parseYAMLSpecKeys(data, path, base, ks)
		if err != nil {
			return nil, fmt.Errorf("%s %s (YAML): %w", what, path, err)
		}
		return raw, nil
	}
	raw, perr := parsePropertiesSpecKeys(data, path, base, os.LookupEnv, ks)
	if perr == nil {
		return raw, nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".properties", ".job", ".txt", ".svc":
		return nil, fmt.Errorf("%s %s (properties): %w", what, path, perr)
	}
	raw, yerr := parseYAMLSpecKeys(data, path, base, ks)
	if yerr == nil {
		return raw, nil
	}
	return nil, fmt.Errorf("%s %s is neither a properties file (%v) nor YAML (%v); name it .yaml or .properties to pick one", what, path, perr, yerr)
}

// parseYAMLSpec reads a YAML spec strictly: one mapping, known keys only,
// no duplicates.
func parseYAMLSpecKeys(data []byte, name, base string, ks keySet) (rawSpec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	raw := rawSpec{}
	if doc.Kind == 0 { // empty file
		return raw, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("a job spec is a mapping of keys to values, like 'process_executable: ./worker'")
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		at := fmt.Sprintf("%s:%d", name, kn.Line)
		key, ok := ks.lookup(kn.Value)
		if !ok {
			return nil, fmt.Errorf("line %d: %w", kn.Line, ks.unknown(kn.Value))
		}
		if _, dup := raw[key.name]; dup {
			return nil, fmt.Errorf("line %d: key %q given twice", kn.Line, key.name)
		}
		rv := rawValue{at: at, base: base}
		switch vn.Kind {
		case yaml.ScalarNode:
			if vn.Tag == "!!null" {
				rv.s = ""
			} else {
				rv.s = vn.Value
			}
			if key.kind == kItems {
				return nil, fmt.Errorf("line %d: input_items is a list: write each item on its own line as '- item'", kn.Line)
			}
		case yaml.SequenceNode:
			switch key.kind {
			case kArgs, kList, kEnv, kItems:
			default:
				return nil, fmt.Errorf("line %d: %s takes one value, not a list", kn.Line, key.name)
			}
			rv.isList = true
			rv.list = make([]string, 0, len(vn.Content))
			for _, e := range vn.Content {
				if e.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: the entries of %s must be plain values", e.Line, key.name)
				}
				rv.list = append(rv.list, e.Value)
			}
		case yaml.MappingNode:
			if key.kind != kEnv {
				return nil, fmt.Errorf("line %d: %s takes a value, not a mapping", kn.Line, key.name)
			}
			rv.isList = true
			for j := 0; j+1 < len(vn.Content); j += 2 {
				k, v := vn.Content[j], vn.Content[j+1]
				if v.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: environment variable %s must have a plain value", v.Line, k.Value)
				}
				val := v.Value
				if v.Tag == "!!null" {
					val = ""
				}
				rv.list = append(rv.list, k.Value+"="+val)
			}
		default:
			return nil, fmt.Errorf("line %d: unexpected value for %s", kn.Line, key.name)
		}
		raw[key.name] = rv
	}
	return raw, nil
}

// parsePropertiesSpec reads a DUCC (Java) properties file: `key = value`,
// `key: value` or `key value`; # and ! start comments; a line ending in a
// backslash continues on the next; backslash escapes as in Java; ${VAR} is
// replaced by an earlier key of the file or else the environment variable
// VAR ($${ writes a literal ${).
func parsePropertiesSpec(data []byte, name, base string, env func(string) (string, bool)) (rawSpec, error) {
	return parsePropertiesSpecKeys(data, name, base, env, jobKeys)
}

func parsePropertiesSpecKeys(data []byte, name, base string, env func(string) (string, bool), ks keySet) (rawSpec, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not UTF-8 text")
	}
	raw := rawSpec{}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) {
			line = line[:len(line)-1]
			if !sc.Scan() {
				break
			}
			lineNo++
			line += strings.TrimLeft(sc.Text(), " \t\f")
		}
		k, v := splitProperty(line)
		key, err := unescapeProperty(k)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		val, err := unescapeProperty(v)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		sk, ok := ks.lookup(key)
		if !ok {
			return nil, fmt.Errorf("line %d: %w", start, ks.unknown(key))
		}
		if sk.kind == kItems {
			return nil, fmt.Errorf("line %d: input_items is only accepted in YAML specs; in a properties file use input_file, or pipe the items on standard input", start)
		}
		val, err = substitute(val, vars, env)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		vars[key] = val
		raw[key] = rawValue{s: val, at: fmt.Sprintf("%s:%d", name, start), base: base}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return raw, nil
}

// continues reports whether a properties line ends in an odd number of
// backslashes (a continuation).
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// white space, as java.util.Properties does.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, strings.TrimRight(rest, " \t\f\r")
}

// unescapeProperty undoes Java properties escapes: \t \n \r \f \uXXXX, and
// \x for any other x.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`bad \u escape in %q: write four hex digits, like \u00e9`, s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf(`bad \u escape in %q: write four hex digits, like \u00e9`, s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// substitute replaces ${VAR} by vars[VAR] or else the environment.
func substitute(s string, vars map[string]string, env func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed ${ in %q: write ${NAME}", s)
		}
		name := s[i+2 : i+2+j]
		if name == "" {
			return "", errors.New("empty ${}: write ${NAME}")
		}
		v, ok := vars[name]
		if !ok && env != nil {
			v, ok = env(name)
		}
		if !ok {
			return "", fmt.Errorf("undefined variable ${%s}: define it earlier in the file or in the environment (write $${ for a literal ${)", name)
		}
		b.WriteString(v)
		s = s[i+3+j:]
	}
}

// jobRequest is a spec interpreted: what to submit and what the CLI does.
type jobRequest struct {
	spec              wire.JobSpec
	inputFile         string // "" = none, "-" = standard input
	items             []string
	haveItems         bool // input_items was given (possibly empty)
	wait              bool
	cancelOnInterrupt bool
	attachConsole     bool
}

// buildJob interprets a raw spec. cwd is the caller's directory: the
// default working directory.
func buildJob(raw rawSpec, cwd string) (*jobRequest, error) {
	jr := &jobRequest{}
	sp := &jr.spec
	// Visit keys in table order so that errors are deterministic.
	for _, k := range specKeys {
		rv, ok := raw[k.name]
		if !ok {
			continue
		}
		if err := applyKey(jr, k, rv); err != nil {
			where := rv.at
			if where != "" {
				where += ": "
			}
			return nil, fmt.Errorf("%s%s: %w", where, k.name, err)
		}
	}
	if sp.Executable == "" {
		return nil, errors.New("process_executable is required: the worker command, e.g. 'process_executable: ./worker.py' in the spec or --process-executable ./worker.py")
	}
	if sp.WorkingDirectory == "" {
		sp.WorkingDirectory = cwd
	}
	sp.Environment = dedupEnv(sp.Environment)
	if jr.inputFile != "" && jr.haveItems {
		return nil, errors.New("both input_file and input_items are given: keep one")
	}
	if jr.cancelOnInterrupt {
		jr.wait = true
	}
	return jr, nil
}

func applyKey(jr *jobRequest, k specKey, rv rawValue) error {
	sp := &jr.spec
	scalar := strings.TrimSpace(rv.s)
	if rv.isList {
		switch k.kind {
		case kArgs, kList, kEnv, kItems:
		default:
			return errors.New("takes one value, not a list")
		}
	}
	switch k.kind {
	case kString:
		switch k.name {
		case "description":
			sp.Description = rv.s
		case "scheduling_class":
			sp.Class = scalar
		case "process_executable":
			if scalar == "" {
				return errors.New("is empty: give the worker command")
			}
			// A relative path (with a slash) is relative to where it was
			// written; a bare name is looked up in PATH on the node.
			scalar = expandHome(scalar)
			if strings.Contains(scalar, "/") && !filepath.IsAbs(scalar) && rv.base != "" {
				scalar = filepath.Join(rv.base, scalar)
			}
			sp.Executable = scalar
		}
	case kPath:
		p := expandHome(scalar)
		if p != "" && p != "-" && !filepath.IsAbs(p) && rv.base != "" {
			p = filepath.Join(rv.base, p)
		}
		switch k.name {
		case "input_file":
			jr.inputFile = p
		case "working_directory":
			sp.WorkingDirectory = p
		case "log_directory":
			sp.LogDirectory = p
		}
	case kArgs:
		args := rv.list
		if !rv.isList {
			var err error
			if args, err = splitShell(rv.s); err != nil {
				return err
			}
		}
		sp.Args = args
	case kList:
		l := rv.list
		if !rv.isList {
			l = splitList(rv.s)
		}
		switch k.name {
		case "service_dependency":
			sp.ServiceDependency = l
		case "machine_list":
			sp.MachineList = l
		}
	case kEnv:
		env := rv.list
		if !rv.isList {
			var err error
			if env, err = splitShell(rv.s); err != nil {
				return err
			}
		}
		for _, e := range env {
			name, _, ok := strings.Cut(e, "=")
			if !ok || name == "" || strings.ContainsAny(name, " \t") {
				return fmt.Errorf("%q is not NAME=VALUE: write environment entries like \"LANG=C.UTF-8 MODEL=/data/m1\"", e)
			}
		}
		sp.Environment = append(sp.Environment, env...)
	case kInt:
		n, err := strconv.ParseInt(scalar, 10, 32)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", rv.s)
		}
		if n < k.min {
			if k.min == 1 {
				return fmt.Errorf("must be at least 1, got %d", n)
			}
			return fmt.Errorf("must not be negative, got %d", n)
		}
		switch k.name {
		case "process_pipeline_count":
			sp.Pipelines = int(n)
		case "process_deployments_max":
			sp.DeploymentsMax = int(n)
		case "process_initialization_failures_cap":
			sp.InitFailuresCap = int(n)
		case "process_failures_limit":
			sp.FailuresLimit = int(n)
		case "max_job_errors":
			sp.MaxJobErrors = int(n)
		case "max_item_retries":
			sp.MaxItemRetries = int(n)
		}
	case kSize:
		b, err := units.ParseSize(scalar)
		if err != nil {
			return err
		}
		if b <= 0 {
			return fmt.Errorf("%q: the size must be positive, like 4G or 512M", rv.s)
		}
		sp.Memory = b
	case kMinutes:
		ms, err := parseMinutes(scalar)
		if err != nil {
			return err
		}
		switch k.name {
		case "process_initialization_time_max":
			sp.InitTimeMaxMS = ms
		case "process_per_item_time_max":
			sp.PerItemTimeMaxMS = ms
		}
	case kBool:
		b, err := parseBool(scalar)
		if err != nil {
			return err
		}
		switch k.name {
		case "wait_for_completion":
			jr.wait = b
		case "cancel_on_interrupt":
			jr.cancelOnInterrupt = b
		case "attach_console":
			jr.attachConsole = b
		}
	case kProtocol:
		switch p := strings.ToLower(scalar); p {
		case wire.ProtocolStream, wire.ProtocolExec:
			sp.WorkerProtocol = p
		default:
			return fmt.Errorf("unknown worker protocol %q; use %q (one long-lived worker reading JSON lines) or %q (one run per item)", rv.s, wire.ProtocolStream, wire.ProtocolExec)
		}
	case kItems:
		if !rv.isList {
			return errors.New("input_items is a YAML list of items")
		}
		jr.items = rv.list
		jr.haveItems = true
	}
	return nil
}

// parseMinutes reads minutes ("120", "0.5") or a Go duration ("90s",
// "1h30m") and returns milliseconds.
func parseMinutes(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("is empty: give minutes, like 30, or a duration like 90s")
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f > 1e9 {
			return 0, fmt.Errorf("%q is not a number of minutes", s)
		}
		d = time.Duration(f * float64(time.Minute))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("%q is neither minutes (like 30 or 0.5) nor a duration (like 90s or 2h)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be more than zero, got %q", s)
	}
	ms := d.Milliseconds()
	if ms == 0 {
		ms = 1
	}
	return ms, nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "true", "yes", "on", "1", "y", "t":
		return true, nil
	case "false", "no", "off", "0", "n", "f":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return h + p[1:]
		}
	}
	return p
}

// splitList splits "a, b c" into [a b c].
func splitList(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(f) == 0 {
		return nil
	}
	return f
}

// splitShell splits a string into words the way a POSIX shell would,
// without expansions: white space separates words, '...' is literal,
// "..." allows \" \\ \$ \` escapes, and a backslash outside quotes escapes
// the next character.
func splitShell(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		inTok bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inTok {
				out = append(out, cur.String())
				cur.Reset()
				inTok = false
			}
		case c == '\'':
			inTok = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inTok = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf(`unterminated " in %q`, s)
			}
		case c == '\\':
			inTok = true
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		default:
			inTok = true
			cur.WriteByte(c)
		}
	}
	if inTok {
		out = append(out, cur.String())
	}
	return out, nil
}

// dedupEnv keeps one entry per name: the last one given, in the place of
// the first (so that flags override the file).
func dedupEnv(env []string) []string {
	if len(env) < 2 {
		return env
	}
	pos := map[string]int{}
	out := make([]string, 0, len(env))
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if i, ok := pos[name]; ok {
			out[i] = e
			continue
		}
		pos[name] = len(out)
		out = append(out, e)
	}
	return out
}
