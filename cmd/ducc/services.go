package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// kMillis: a bare number of milliseconds (DUCC's unit for these keys) or
// a duration like 10s.
const kMillis keyKind = 100

// serviceKeys lists every key of a service registration (SPEC §6).
var serviceKeys = keySet{keys: []specKey{
	{name: "description", kind: kString, usage: "free text shown by 'ducc services query'"},
	{name: "service_request_endpoint", kind: kString, usage: "CUSTOM:<name>, HTTP:<url> or TCP:<host:port> (required)"},
	{name: "process_executable", kind: kString, usage: "the service command (none: a ping-only service)"},
	{name: "process_executable_args", kind: kArgs, usage: "its arguments; ${DUCC_SERVICE_INSTANCE} is replaced by the instance id"},
	{name: "process_memory_size", kind: kSize, usage: "memory per instance, e.g. 1G (default 4G)"},
	{name: "scheduling_class", kind: kString, usage: "a FIXED_SHARE class (default: the default fixed class)"},
	{name: "instances", kind: kInt, min: 0, usage: "instances to run when started (default 1)"},
	{name: "max_instances", kind: kInt, min: 1, usage: "cap on instances, also for a pinger's additions (default 10)"},
	{name: "autostart", kind: kBool, usage: "keep the service running from registration and cluster start"},
	{name: "service_linger", kind: kMillis, usage: "ms (or a duration like 30s) a reference-started service lingers after its last reference (default 300000)"},
	{name: "service_dependency", kind: kList, usage: "endpoints of services this service needs"},
	{name: "instance_failures_window", kind: kMinutes, usage: "minutes (or a duration) over which instance failures are counted (default 30)"},
	{name: "instance_failures_limit", kind: kInt, min: 1, usage: "instance failures in the window above which the service is disabled (default 5)"},
	{name: "instance_init_failures_limit", kind: kInt, min: 1, usage: "initialization failures above which the service is disabled (default 1)"},
	{name: "service_ping_executable", kind: kString, usage: "custom pinger command, run as you (required for CUSTOM: endpoints)"},
	{name: "service_ping_arguments", kind: kArgs, usage: "arguments of the custom pinger"},
	{name: "service_ping_timeout", kind: kMillis, usage: "ms (or a duration) a ping may take (default 500)"},
	{name: "service_ping_interval", kind: kMillis, usage: "ms (or a duration) between pings (default 10000)"},
	{name: "environment", kind: kEnv, usage: "environment of the instances and the pinger: \"A=1 B=2\""},
	{name: "working_directory", kind: kPath, usage: "working directory of the instances (default: the current directory)"},
	{name: "log_directory", kind: kPath, usage: "log directory; logs go to <dir>/<id>/ (default ~/ducc/logs)"},
	{name: "administrators", kind: kList, usage: "users who may change the service besides you"},
}}

// applyServiceKey sets one key of a service spec.
func applyServiceKey(sp *wire.ServiceSpec, k specKey, rv rawValue) error {
	scalar := strings.TrimSpace(rv.s)
	if rv.isList && k.kind != kArgs && k.kind != kList && k.kind != kEnv {
		return errors.New("takes one value, not a list")
	}
	words := func() ([]string, error) {
		if rv.isList {
			return rv.list, nil
		}
		return splitShell(rv.s)
	}
	switch k.kind {
	case kString:
		switch k.name {
		case "description":
			sp.Description = rv.s
		case "service_request_endpoint":
			sp.Endpoint = scalar
		case "scheduling_class":
			sp.Class = scalar
		case "process_executable", "service_ping_executable":
			scalar = expandHome(scalar)
			if strings.Contains(scalar, "/") && !filepath.IsAbs(scalar) && rv.base != "" {
				scalar = filepath.Join(rv.base, scalar)
			}
			if k.name == "process_executable" {
				sp.Executable = scalar
			} else {
				sp.PingExecutable = scalar
			}
		}
	case kPath:
		p := expandHome(scalar)
		if p != "" && !filepath.IsAbs(p) && rv.base != "" {
			p = filepath.Join(rv.base, p)
		}
		if k.name == "working_directory" {
			sp.WorkingDirectory = p
		} else {
			sp.LogDirectory = p
		}
	case kArgs:
		args, err := words()
		if err != nil {
			return err
		}
		if k.name == "process_executable_args" {
			sp.Args = args
		} else {
			sp.PingArgs = args
		}
	case kList:
		l := rv.list
		if !rv.isList {
			l = splitList(rv.s)
		}
		if k.name == "service_dependency" {
			sp.Dependency = l
		} else {
			sp.Administrators = l
		}
	case kEnv:
		env, err := words()
		if err != nil {
			return err
		}
		for _, e := range env {
			if name, _, ok := strings.Cut(e, "="); !ok || name == "" {
				return fmt.Errorf("%q is not NAME=VALUE", e)
			}
		}
		sp.Environment = dedupEnv(append(sp.Environment, env...))
	case kInt:
		n, err := strconv.ParseInt(scalar, 10, 32)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", rv.s)
		}
		if n < k.min {
			return fmt.Errorf("must be at least %d, got %d", k.min, n)
		}
		switch k.name {
		case "instances":
			sp.Instances = int(n)
		case "max_instances":
			sp.MaxInstances = int(n)
		case "instance_failures_limit":
			sp.FailuresLimit = int(n)
		case "instance_init_failures_limit":
			sp.InitFailuresLimit = int(n)
		}
	case kSize:
		b, err := units.ParseSize(scalar)
		if err != nil {
			return err
		}
		if b <= 0 {
			return fmt.Errorf("%q: the size must be positive, like 1G", rv.s)
		}
		sp.Memory = b
	case kBool:
		b, err := parseBool(scalar)
		if err != nil {
			return err
		}
		sp.Autostart = b
	case kMinutes:
		ms, err := parseMinutes(scalar)
		if err != nil {
			return err
		}
		sp.FailuresWindowMS = ms
	case kMillis:
		ms, err := parseMillis(scalar)
		if err != nil {
			return err
		}
		switch k.name {
		case "service_linger":
			sp.LingerMS = ms
		case "service_ping_timeout":
			sp.PingTimeoutMS = ms
		case "service_ping_interval":
			sp.PingIntervalMS = ms
		}
	}
	return nil
}

// parseMillis reads milliseconds ("500") or a duration ("10s").
func parseMillis(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("must be more than zero, got %q", s)
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is neither milliseconds (like 500) nor a duration (like 10s)", s)
	}
	return max(d.Milliseconds(), 1), nil
}

// buildService interprets a raw service spec; it returns the spec and the
// keys that were given.
func buildService(raw rawSpec) (wire.ServiceSpec, []string, error) {
	var sp wire.ServiceSpec
	var keys []string
	for _, k := range serviceKeys.keys {
		rv, ok := raw[k.name]
		if !ok {
			continue
		}
		keys = append(keys, k.name)
		if err := applyServiceKey(&sp, k, rv); err != nil {
			where := rv.at
			if where != "" {
				where += ": "
			}
			return sp, nil, fmt.Errorf("%s%s: %w", where, k.name, err)
		}
	}
	return sp, keys, nil
}

// addServiceFlags adds one flag per service key.
func addServiceFlags(cmd *cobra.Command, skip ...string) {
	f := cmd.Flags()
	for _, k := range serviceKeys.keys {
		flag := strings.ReplaceAll(k.name, "_", "-")
		if contains(skip, flag) {
			continue
		}
		switch k.kind {
		case kBool:
			f.Bool(flag, false, k.usage)
		case kEnv:
			f.StringArray(flag, nil, k.usage+"; may be repeated")
		default:
			f.String(flag, "", k.usage)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// serviceFlags lays the changed flags over raw.
func serviceFlags(cmd *cobra.Command, raw rawSpec, cwd string) error {
	f := cmd.Flags()
	for _, k := range serviceKeys.keys {
		flag := strings.ReplaceAll(k.name, "_", "-")
		if f.Lookup(flag) == nil || !f.Changed(flag) {
			continue
		}
		at := "--" + flag
		switch k.kind {
		case kBool:
			b, _ := f.GetBool(flag)
			raw[k.name] = rawValue{s: fmt.Sprint(b), at: at}
		case kEnv:
			vals, _ := f.GetStringArray(flag)
			var env []string
			for _, v := range vals {
				w, err := splitShell(v)
				if err != nil {
					return usageErr("%s: %v", at, err)
				}
				env = append(env, w...)
			}
			raw[k.name] = rawValue{list: env, isList: true, at: at, base: cwd}
		default:
			v, _ := f.GetString(flag)
			raw[k.name] = rawValue{s: v, at: at, base: cwd}
		}
	}
	return nil
}

func newServicesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "services",
		Short: "register and manage services",
		Long: `Services are long-running commands with stable instance ids, health-checked by a
pinger (SPEC §6). Register one with a YAML or properties file (or flags), then
start it, or let jobs that name its endpoint in service_dependency start it.
Wherever an ID is taken, the service's endpoint works too. See docs/services.md.`,
	}
	cmd.AddCommand(newSvcRegisterCmd(g), newSvcQueryCmd(g), newSvcModifyCmd(g),
		newSvcActionCmd(g, wire.SvcUnregister, "unregister a service: stop its instances and forget it", false),
		newSvcActionCmd(g, wire.SvcStart, "start a service, or add --instances N to it", true),
		newSvcActionCmd(g, wire.SvcStop, "stop and disable a service, or remove --instances N (newest first)", true),
		newSvcActionCmd(g, wire.SvcEnable, "enable a disabled service (clears its failure counts)", false),
		newSvcActionCmd(g, wire.SvcDisable, "disable a service: nothing new starts until 'enable'", false),
		newSvcActionCmd(g, wire.SvcObserve, "stop the service service_linger after its last reference ends", false),
		newSvcActionCmd(g, wire.SvcIgnore, "keep the service running when it is no longer referenced", false),
	)
	return cmd
}

func newSvcRegisterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "register [FILE] [flags] [-- CMD [ARGS...]]",
		Short: "register a service from a YAML or properties file, or flags",
		Example: `  ducc services register web.yaml
  ducc services register --service-request-endpoint HTTP:localhost:8080/ --instances 2 -- python3 server.py`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var command []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				command, args = args[dash:], args[:dash]
			}
			raw := rawSpec{}
			switch len(args) {
			case 0:
			case 1:
				var err error
				if raw, err = parseSpecFileKeys(args[0], serviceKeys, "service registration"); err != nil {
					return usageErr("%v", err)
				}
			default:
				return usageErr("give at most one registration file, got %q; put the command after '--'", args)
			}
			cwd, err := os.Getwd()
			if err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("cannot read the current directory: %v", err)}
			}
			if err := serviceFlags(cmd, raw, cwd); err != nil {
				return err
			}
			if len(command) > 0 {
				raw["process_executable"] = rawValue{s: command[0], at: "command after --", base: cwd}
				raw["process_executable_args"] = rawValue{list: command[1:], isList: true, at: "command after --", base: cwd}
			}
			sp, _, err := buildService(raw)
			if err != nil {
				return usageErr("%v", err)
			}
			if sp.Endpoint == "" {
				return usageErr("service_request_endpoint is required, e.g. HTTP:localhost:8080/health, TCP:localhost:5432 or CUSTOM:name")
			}
			if sp.WorkingDirectory == "" {
				sp.WorkingDirectory = cwd
			}
			var rep wire.SubmitReply
			if err := newClient(g).call(cmd.Context(), wire.MethodServiceRegister, wire.ServiceRegisterRequest{Spec: sp}, &rep); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Service %d registered\n", rep.ID)
			return nil
		},
	}
	addServiceFlags(cmd)
	return cmd
}

func newSvcModifyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "modify ID [flags]",
		Short: "change a registration: instances, autostart, linger apply at once; pinger keys restart the pinger",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cwd, _ := os.Getwd()
			raw := rawSpec{}
			if err := serviceFlags(cmd, raw, cwd); err != nil {
				return err
			}
			sp, keys, err := buildService(raw)
			if err != nil {
				return usageErr("%v", err)
			}
			if len(keys) == 0 {
				return usageErr("nothing to modify: give keys as flags, like --instances 3 or --autostart=false")
			}
			return svcControl(cmd, g, wire.ServiceControlRequest{Service: args[0], Action: wire.SvcModify, Spec: sp, Keys: keys})
		},
	}
	addServiceFlags(cmd, "service-request-endpoint", "scheduling-class")
	return cmd
}

func newSvcActionCmd(g *globals, action, short string, withInstances bool) *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   action + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return svcControl(cmd, g, wire.ServiceControlRequest{Service: args[0], Action: action, Instances: n})
		},
	}
	if withInstances {
		cmd.Flags().IntVar(&n, "instances", 0, "how many instances (default: all)")
	}
	return cmd
}

func svcControl(cmd *cobra.Command, g *globals, req wire.ServiceControlRequest) error {
	var info wire.ServiceInfo
	if err := newClient(g).call(cmd.Context(), wire.MethodServiceControl, req, &info); err != nil {
		return err
	}
	if g.json {
		return printJSON(cmd.OutOrStdout(), info)
	}
	verb := map[string]string{wire.SvcUnregister: "unregistered", wire.SvcStart: "started", wire.SvcStop: "stopped",
		wire.SvcEnable: "enabled", wire.SvcDisable: "disabled", wire.SvcModify: "modified",
		wire.SvcObserve: "observes references", wire.SvcIgnore: "ignores references"}[req.Action]
	fmt.Fprintf(cmd.OutOrStdout(), "Service %d %s (%s, %d instances wanted)\n", info.ID, verb, info.Endpoint, info.Instances)
	return nil
}

func newSvcQueryCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "query [ID]",
		Short: "list services, or describe one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := wire.ServiceQueryRequest{}
			if len(args) == 1 {
				req.Service = args[0]
			}
			var list wire.ServiceList
			if err := newClient(g).call(cmd.Context(), wire.MethodServiceQuery, req, &list); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), list)
			}
			if len(args) == 1 && len(list.Services) == 1 {
				return printService(cmd.OutOrStdout(), list.Services[0])
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tENDPOINT\tUSER\tSTATE\tPOLICY\tINSTANCES\tRUNNING\tREFS\tREASON")
			for _, s := range list.Services {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.ID, s.Endpoint, s.User, s.State, s.Policy,
					s.Instances, s.Running, len(s.References), s.Reason)
			}
			return tw.Flush()
		},
	}
}

func printService(w io.Writer, s wire.ServiceInfo) error {
	fmt.Fprintf(w, "Service %d  %s  (%s)\n", s.ID, s.Endpoint, s.User)
	fmt.Fprintf(w, "  state:      %s", s.State)
	if s.Reason != "" {
		fmt.Fprintf(w, " — %s", s.Reason)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  policy:     %s (enabled %v)\n", s.Policy, s.Enabled)
	fmt.Fprintf(w, "  instances:  %d wanted, %d running (max %d)\n", s.Instances, s.Running, s.Spec.MaxInstances)
	if s.Spec.Executable != "" {
		fmt.Fprintf(w, "  command:    %s\n", strings.Join(append([]string{s.Spec.Executable}, s.Spec.Args...), " "))
		fmt.Fprintf(w, "  memory:     %s (class %s)\n", units.FormatSize(s.Memory), s.Class)
	}
	fmt.Fprintf(w, "  pinger:     alive %v, healthy %v", s.Alive, s.Healthy)
	if s.PingInfo != "" {
		fmt.Fprintf(w, " — %s", s.PingInfo)
	}
	fmt.Fprintln(w)
	if len(s.References) > 0 {
		fmt.Fprintf(w, "  references: %v\n", s.References)
	}
	fmt.Fprintf(w, "  failures:   %d in the window (limit %d), %d initialization (limit %d)\n",
		s.Failures, s.Spec.FailuresLimit, s.InitFailures, s.Spec.InitFailuresLimit)
	if len(s.Spec.Dependency) > 0 {
		fmt.Fprintf(w, "  depends on: %s\n", strings.Join(s.Spec.Dependency, ", "))
	}
	if len(s.Procs) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  INSTANCE\tPROCESS\tNODE\tSTATE\tPID\tREADY\tLOG")
		for _, p := range s.Procs {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%d\t%v\t%s\n", p.Instance, p.Proc.ID, p.Proc.Node, p.Proc.State, p.Proc.PID, p.Ready, p.Proc.LogPath)
		}
		return tw.Flush()
	}
	return nil
}
