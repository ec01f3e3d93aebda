package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/wire"
)

// Dynamic shell completion. `ducc completion bash|zsh|fish` (cobra's)
// prints the scripts the packages install; those scripts call
// `ducc __complete ...`, which lands in the functions below. They ask the
// local agent (the same socket as every command) for work ids, classes,
// nodes and services, give up after completionTimeout, and offer nothing
// (no error, no file names) when no agent answers.

// completionTimeout bounds one completion's call to the agent: a shell
// waits for it on every TAB.
const completionTimeout = 2 * time.Second

// completer lists candidates: "value\tdescription" lines, as cobra wants.
type completer func(ctx context.Context, c *client) []string

// addCompletions attaches completion functions to root's commands and
// flags by command path, so the commands' own files need not know about
// completion. Commands or flags it does not find are left alone.
func addCompletions(root *cobra.Command, g *globals) {
	work := func(all bool) completer {
		return func(ctx context.Context, c *client) []string { return workIDs(ctx, c, all) }
	}
	args := map[string]completer{
		"wait":      work(true),
		"show":      work(true),
		"logs":      work(true),
		"results":   work(true),
		"cancel":    work(false),
		"unreserve": work(false),
	}
	for _, verb := range []string{"start", "stop", "enable", "disable", "modify", "query", "unregister", "observe-references", "ignore-references"} {
		args["services "+verb] = services
	}
	for _, verb := range []string{"vary-off", "vary-on", "quiesce", "remove-server"} {
		args["admin "+verb] = nodes
	}
	flags := map[string]completer{
		"class":              classes,
		"scheduling-class":   classes,
		"service-dependency": endpoints,
	}
	walk(root, func(cmd *cobra.Command) {
		path := strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
		if f, ok := args[path]; ok && cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = complete(g, f, path == "cancel" || path == "unreserve")
		}
		for name, f := range flags {
			if cmd.Flags().Lookup(name) == nil {
				continue
			}
			if _, ok := cmd.GetFlagCompletionFunc(name); ok {
				continue
			}
			// Only fails when the flag is missing or has a function.
			_ = cmd.RegisterFlagCompletionFunc(name, complete(g, f, true))
		}
	})
}

func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

// complete turns a completer into a cobra completion function. many: the
// command takes several ids, so values already on the line are left out;
// otherwise the command takes one, and nothing is offered after it. Flag
// values complete as many (the arguments on the line are not theirs).
func complete(g *globals, f completer, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if !many && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		parent := cmd.Context()
		if parent == nil {
			parent = context.Background()
		}
		ctx, cancel := context.WithTimeout(parent, completionTimeout)
		defer cancel()
		seen := map[string]bool{}
		for _, a := range args {
			seen[a] = true
		}
		var out []string
		for _, cand := range f(ctx, newClient(g)) {
			v, _, _ := strings.Cut(cand, "\t")
			if strings.HasPrefix(v, toComplete) && !(many && seen[v]) {
				out = append(out, cand)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func workIDs(ctx context.Context, c *client, all bool) []string {
	var list wire.WorkList
	if c.call(ctx, wire.MethodJobs, wire.ListRequest{All: all}, &list) != nil {
		return nil
	}
	out := make([]string, 0, len(list.Work))
	for _, w := range list.Work {
		state := w.State
		if w.Ended && w.Completion != "" {
			state = w.Completion
		}
		desc := fmt.Sprintf("%s %s %s", w.Kind, w.User, state)
		if w.Description != "" {
			desc += " " + w.Description
		}
		out = append(out, fmt.Sprintf("%d\t%s", w.ID, oneLine(desc)))
	}
	return out
}

func classes(ctx context.Context, c *client) []string {
	var list wire.ClassList
	if c.call(ctx, wire.MethodClasses, wire.Empty{}, &list) != nil {
		return nil
	}
	out := make([]string, 0, len(list.Classes))
	for _, cl := range list.Classes {
		out = append(out, fmt.Sprintf("%s\t%s, pool %s", cl.Name, cl.Policy, cl.Pool))
	}
	return out
}

func nodes(ctx context.Context, c *client) []string {
	var list wire.NodeList
	if c.call(ctx, wire.MethodNodes, wire.Empty{}, &list) != nil {
		return nil
	}
	out := make([]string, 0, len(list.Nodes))
	for _, n := range list.Nodes {
		out = append(out, n.Name+"\t"+n.State)
	}
	return out
}

func serviceList(ctx context.Context, c *client) []wire.ServiceInfo {
	var list wire.ServiceList
	if c.call(ctx, wire.MethodServiceQuery, wire.ServiceQueryRequest{}, &list) != nil {
		return nil
	}
	return list.Services
}

// services offers both a service's id and its endpoint: every services
// command takes either.
func services(ctx context.Context, c *client) []string {
	var out []string
	for _, s := range serviceList(ctx, c) {
		out = append(out, fmt.Sprintf("%d\t%s %s", s.ID, s.Endpoint, s.State), s.Endpoint+"\t"+fmt.Sprintf("service %d %s", s.ID, s.State))
	}
	return out
}

func endpoints(ctx context.Context, c *client) []string {
	var out []string
	for _, s := range serviceList(ctx, c) {
		out = append(out, s.Endpoint+"\t"+fmt.Sprintf("service %d %s", s.ID, s.State))
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return s
}
