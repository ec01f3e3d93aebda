package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DUCC's command line, so that DUCC users and their scripts move over:
// DUCC's program names (ducc_submit, ...) run the matching ducc command,
// DUCC's option spelling (--process_memory_size) is ducc's
// (--process-memory-size), and DUCC's own options (--specification/-f,
// --id, --reason, --role_administrator) are accepted where ducc has the
// same idea. docs/ducc-compatibility.md lists every option.

// duccPrograms maps DUCC's program names to ducc's commands.
var duccPrograms = map[string][]string{
	"ducc_submit":         {"submit"},
	"ducc_cancel":         {"cancel"},
	"ducc_reserve":        {"reserve"},
	"ducc_unreserve":      {"unreserve"},
	"ducc_process_submit": {"run"},
	"ducc_process_cancel": {"cancel"},
	"ducc_services":       {"services"},
}

// duccServiceVerbs are ducc_services' verbs (given as options) and
// ducc's subcommands for them.
var duccServiceVerbs = map[string]string{
	"--register":           "register",
	"--unregister":         "unregister",
	"--start":              "start",
	"--stop":               "stop",
	"--modify":             "modify",
	"--query":              "query",
	"--enable":             "enable",
	"--disable":            "disable",
	"--observe_references": "observe-references",
	"--ignore_references":  "ignore-references",
}

// duccArgs rewrites the command line of a DUCC program name (the base
// name of argv0) into ducc's; other names leave args as they are.
func duccArgs(argv0 string, args []string) []string {
	sub, ok := duccPrograms[filepath.Base(argv0)]
	if !ok {
		return args
	}
	out := append([]string(nil), sub...)
	if sub[0] == "services" {
		// ducc_services --register FILE --instances 2: the verb is an
		// option; its value (an id, an endpoint or a file) follows.
		for i, a := range args {
			if !strings.HasPrefix(a, "--") {
				continue
			}
			name, value, hasValue := strings.Cut(a, "=")
			verb, isVerb := duccServiceVerbs["--"+strings.ReplaceAll(name[2:], "-", "_")]
			if !isVerb {
				continue
			}
			out = append(out, verb)
			if hasValue {
				out = append(out, value)
			}
			out = append(out, args[:i]...)
			return append(out, args[i+1:]...)
		}
	}
	if sub[0] == "run" && !anyFlag(args, "--wait_for_completion", "--cancel_on_interrupt", "--attach_console") {
		// DUCC's ducc_process_submit returns once the process is
		// submitted unless told to wait; ducc run waits unless --detach.
		out = append(out, "--detach")
	}
	return append(out, args...)
}

// anyFlag reports whether args hold one of the flags, in DUCC's or ducc's
// spelling, before a "--".
func anyFlag(args []string, flags ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(a, "=")
		for _, f := range flags {
			if strings.ReplaceAll(name, "-", "_") == strings.ReplaceAll(f, "-", "_") {
				return true
			}
		}
	}
	return false
}

// underscoreFlags lets DUCC's option spelling through: --process_memory_size
// is --process-memory-size. No ducc flag has an underscore.
func underscoreFlags(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// addDUCCGlobals adds DUCC's options that every DUCC command takes and
// that ducc does not need, hidden: accepted so that scripts run, with no
// effect (each is listed in docs/ducc-compatibility.md with why).
func addDUCCGlobals(fs *pflag.FlagSet) {
	for _, f := range []struct{ name, why string }{
		{"role-administrator", "ducc recognizes administrators by their user"},
		{"debug", "ducc's CLI has no debug output"},
		{"quiet", "ducc prints one line per action already"},
	} {
		fs.Bool(f.name, false, "accepted for DUCC compatibility: "+f.why)
		_ = fs.MarkHidden(f.name)
	}
}

// addSpecificationFlag adds DUCC's --specification/-f FILE, the same as
// giving FILE as the argument.
func addSpecificationFlag(cmd *cobra.Command, file *string, what string) {
	cmd.Flags().StringVarP(file, "specification", "f", "", what+" file (the same as giving it as the argument)")
}

// specFile picks the spec file from --specification or the arguments.
func specFile(flagFile string, args []string) (file string, err error) {
	switch {
	case len(args) > 1:
		return "", usageErr("give at most one spec file, got %q; put the command after '--'", args)
	case flagFile != "" && len(args) == 1:
		return "", usageErr("give the spec file either with --specification or as the argument, not both")
	case flagFile != "":
		return flagFile, nil
	case len(args) == 1:
		return args[0], nil
	}
	return "", nil
}

// withIDs returns the ids given as arguments and with --id, at least one.
func withIDs(args, flagIDs []string) ([]string, error) {
	all := append(append([]string(nil), args...), flagIDs...)
	if len(all) == 0 {
		return nil, usageErr("give the id of the work, as an argument or with --id")
	}
	return all, nil
}

// printWarnings writes a spec file's warnings to stderr.
func printWarnings(cmd *cobra.Command, warn []string) {
	for _, w := range warn {
		fmt.Fprintln(cmd.ErrOrStderr(), "ducc: warning: "+w)
	}
}
