package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

func newServicesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "services",
		Short: "register and manage services",
		Long: `Services are long-running commands with stable instance ids, health-checked by a
pinger. Register one with a YAML or properties file (or flags), then
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
	var specFlag string
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
			raw := spec.Raw{}
			file, err := specFile(specFlag, args)
			if err != nil {
				return err
			}
			if file != "" {
				var warn []string
				if raw, warn, err = spec.ParseFile(file, spec.KindService); err != nil {
					return usageErr("%v", err)
				}
				printWarnings(cmd, warn)
			}
			cwd, err := os.Getwd()
			if err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("cannot read the current directory: %v", err)}
			}
			if err := spec.FlagValues(cmd.Flags(), spec.KindService, raw, cwd); err != nil {
				return usageErr("%v", err)
			}
			if len(command) > 0 {
				raw["process_executable"] = spec.Value{S: command[0], At: "command after --", Base: cwd}
				raw["process_executable_args"] = spec.Value{List: command[1:], IsList: true, At: "command after --", Base: cwd}
			}
			sp, _, err := spec.BuildService(raw)
			if err != nil {
				return usageErr("%v", err)
			}
			if sp.Endpoint == "" {
				return usageErr("service_request_endpoint is required, e.g. HTTP:localhost:8080/health, TCP:localhost:5432 or CUSTOM:name")
			}
			if err := spec.ValidateService(sp); err != nil {
				return usageErr("%v", err)
			}
			if sp.WorkingDirectory == "" {
				sp.WorkingDirectory = cwd
			}
			var notFound string
			if sp.PingClass != "" && sp.PingClasspath != "" {
				// The class path as this node sees it: the pinger runs on
				// an instance's node, which usually shares the files. The
				// head refuses with what was not found unless the class is
				// a registered pinger's name.
				c := spec.CheckPingClasspath(sp.PingClass, sp.PingClasspath, sp.WorkingDirectory)
				if err := c.Error(sp.PingClass, sp.PingClasspath); err != nil {
					notFound = err.Error()
				}
				if w := c.Warning(sp.PingClass); w != "" {
					printWarnings(cmd, []string{w})
				}
			}
			if sp.Umask == "" {
				sp.Umask = callerUmask()
			}
			sp.Environment = spec.ExpandEnv(sp.Environment, os.Environ())
			if sp.ShareGID, err = shareGID(sp.ShareGroup); err != nil {
				return err
			}
			var rep wire.SubmitReply
			if err := newClient(g).call(cmd.Context(), wire.MethodServiceRegister, wire.ServiceRegisterRequest{Spec: sp, ClassNotFound: notFound}, &rep); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Service %d registered\n", rep.ID)
			return nil
		},
	}
	addSpecificationFlag(cmd, &specFlag, "registration")
	spec.AddFlags(cmd.Flags(), spec.KindService, nil)
	return cmd
}

func newSvcModifyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "modify ID [flags]",
		Short: "change a registration: instances, autostart, linger apply at once; pinger keys restart the pinger",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cwd, _ := os.Getwd()
			raw := spec.Raw{}
			if err := spec.FlagValues(cmd.Flags(), spec.KindService, raw, cwd); err != nil {
				return usageErr("%v", err)
			}
			sp, keys, err := spec.BuildService(raw)
			if err != nil {
				return usageErr("%v", err)
			}
			if len(keys) == 0 {
				return usageErr("nothing to modify: give keys as flags, like --instances 3 or --autostart=false")
			}
			var notFound string
			if sp.PingClass != "" && sp.PingClasspath != "" {
				// Both given: checked as at registration (relative entries
				// against this directory; the service's own may differ).
				c := spec.CheckPingClasspath(sp.PingClass, sp.PingClasspath, cwd)
				if err := c.Error(sp.PingClass, sp.PingClasspath); err != nil {
					notFound = err.Error()
				}
				if w := c.Warning(sp.PingClass); w != "" {
					printWarnings(cmd, []string{w})
				}
			}
			return svcControl(cmd, g, wire.ServiceControlRequest{Service: args[0], Action: wire.SvcModify, Spec: sp, Keys: keys, ClassNotFound: notFound})
		},
	}
	spec.AddFlags(cmd.Flags(), spec.KindService, func(k *spec.Key) bool { return k.Modify })
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
	fmt.Fprintf(cmd.OutOrStdout(), "Service %d %s (%s, %s wanted)\n", info.ID, verb, info.Endpoint, units.Plural(info.Instances, "instance"))
	return nil
}

func newSvcQueryCmd(g *globals) *cobra.Command {
	var wide bool
	cmd := &cobra.Command{
		Use:     "query [ID]",
		Aliases: []string{"list"},
		Short:   "list services, or describe one ('list' is the same)",
		Long: `List the services, or describe one (by id or endpoint). 'ducc services list'
is the same command (DUCC has only --query).

On a terminal the list is fitted to its width: the reason is cut with "…",
then POLICY, REFS and the reason are left out, and a line on stderr names what
was left out; ids, endpoints and states are never cut. --wide prints every
column whole; 'ducc services query ID' shows one service in full.`,
		Args: cobra.MaximumNArgs(1),
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
			out := cmd.OutOrStdout()
			width := outWidth(out)
			if wide {
				width = 0
			}
			t := &table{
				heads:  []string{"ID", "ENDPOINT", "USER", "STATE", "POLICY", "WANTED", "RUNNING", "REFS", "REASON"},
				shrink: []int{0, 0, 4, 0, 0, 0, 0, 0, 1},
				drop:   []int{0, 0, 0, 0, 2, 0, 0, 3, 5},
			}
			for _, s := range list.Services {
				t.add(strconv.FormatUint(s.ID, 10), s.Endpoint, s.User, s.State, s.Policy, strconv.Itoa(s.Instances),
					strconv.Itoa(s.Running), strconv.Itoa(len(s.References)), dash(s.Reason))
			}
			dropped, err := t.write(out, width, true)
			leftOut(cmd.ErrOrStderr(), dropped, width)
			return err
		},
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "every column, never fitted to the terminal")
	return cmd
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
	if len(s.Redacted) > 0 {
		fmt.Fprintf(w, "  hidden:     %s (only %s, the service's administrators, root and cluster administrators see them)\n",
			strings.Join(s.Redacted, ", "), s.User)
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
