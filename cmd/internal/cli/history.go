package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

func newHistoryCmd(g *globals) *cobra.Command {
	var since, until, user, class string
	var states []string
	cmd := &cobra.Command{
		Use:   "history",
		Short: "list finished work with its accounting (like sacct)",
		Long: `List the accounting records of finished work, oldest end first: jobs, managed
reservations, reservations and services, with their user, class, times, state,
memory asked and capped, peak memory, CPU time, exit code, work items and nodes,
and for work with GPUs the GPUs asked, the GPU time held (the table's GPU
column: GPU-hours, a slice counting as its share of its GPU) and the peak GPU memory of one process (--json: gpus, gpu_memory,
gpu_seconds, gpu_memory_peak).

Finished work stays in 'ducc jobs --all' and 'ducc show' for head.retention.work
(1h by default); its record stays here for head.retention.history (30d), see
docs/operations.md. Ordinary users see their own records; root and the
administrators see everyone's (--user narrows them).

--since and --until take a time ago (2h, 7d), a date (2026-11-20), a local time
(2026-11-20T14:00 or "2026-11-20 14:00"), RFC 3339, or "today"; --since all
lists everything kept. --json prints every field, with times in unix ms.

--state (comma-separated, case-insensitive) takes completion reasons or the
table's short names (in parentheses):
` + completionHelp() + `
and sacct's states, each standing for the reasons listed:
` + slurmHelp() + `
Any other state is refused (exit 2) with the names above.`,
		Example: "  ducc history\n  ducc history --since 7d --state error,ProcFail\n  ducc history --state failed,oom\n  ducc history --since 2026-11-01 --until 2026-11-08 --user alice --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			req := wire.HistoryRequest{User: user, Class: class}
			var err error
			if req.Since, err = parseWhen(since, now); err != nil {
				return usageErr("--since: %v", err)
			}
			if req.Until, err = parseWhen(until, now); err != nil {
				return usageErr("--until: %v", err)
			}
			sels, err := parseStates(states)
			if err != nil {
				return err
			}
			req.Completions = selCompletions(sels)
			recs, err := fetchHistory(cmd.Context(), newClient(g), req)
			if err != nil {
				return err
			}
			recs = filterStates(recs, sels)
			if g.json {
				return printJSON(cmd.OutOrStdout(), wire.HistoryReply{Records: recs})
			}
			printHistory(cmd.OutOrStdout(), recs, now)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&since, "since", "24h", "records of work that ended at or after this time")
	f.StringVar(&until, "until", "", "records of work that ended before this time (default: now)")
	f.StringVarP(&user, "user", "u", "", "only this user's records (root and administrators)")
	f.StringSliceVar(&states, "state", nil, "only these completion reasons or sacct states (listed above)")
	f.StringVar(&class, "class", "", "only this class")
	return cmd
}

// fetchHistory pages through the records until the head says the end.
func fetchHistory(ctx context.Context, c *client, req wire.HistoryRequest) ([]wire.HistoryRecord, error) {
	recs := []wire.HistoryRecord{}
	for {
		var rep wire.HistoryReply
		if err := c.call(ctx, wire.MethodHistory, req, &rep); err != nil {
			return nil, err
		}
		recs = append(recs, rep.Records...)
		if !rep.More {
			return recs, nil
		}
		if rep.NextEnd < req.AfterEnd || rep.NextEnd == req.AfterEnd && rep.NextID <= req.AfterID {
			return nil, &exitError{code: exitFailed, msg: "the head returned the same page of history again; try again"}
		}
		req.AfterEnd, req.AfterID = rep.NextEnd, rep.NextID
	}
}

// parseWhen reads a --since/--until value as unix ms (0: unbounded).
func parseWhen(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "all":
		return 0, nil
	case "now":
		return now.UnixMilli(), nil
	case "today":
		y, m, d := now.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, now.Location()).UnixMilli(), nil
	}
	if d, err := units.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("%q: a time ago must not be negative", s)
		}
		return now.Add(-d).UnixMilli(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UnixMilli(), nil
	}
	for _, layout := range []string{time.DateOnly, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", time.DateTime} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%q is neither a time ago (2h, 7d), a date (2026-11-20), a local time (2026-11-20T14:00) nor RFC 3339", s)
}

// stateSel selects records by completion reason and, for sacct's states,
// by exit code (nil: any).
type stateSel struct {
	c    wire.Completion
	exit func(code int) bool
}

// exitOOM is the exit code of a process killed at its memory cap
// (wire.CodeMemoryCap, 128 + SIGKILL).
const exitOOM = wire.CodeMemoryCap

// slurmStates are sacct's state names that ducc's completion reasons map
// to, with their short codes, in sacct's spelling. ducc work has no time
// limit, so nothing ends TIMEOUT; see slurmNoMap.
var slurmStates = []struct {
	names []string
	sels  []stateSel
	means string
}{
	{[]string{"COMPLETED", "CD"}, []stateSel{{c: wire.CompletionEndOfJob}, {c: wire.CompletionProgramExit, exit: func(c int) bool { return c == 0 }}},
		"EndOfJob, and ProgramExit with exit code 0"},
	{[]string{"FAILED", "F"}, []stateSel{{c: wire.CompletionError}, {c: wire.CompletionCanceledByDriver}, {c: wire.CompletionInitFailure},
		{c: wire.CompletionProcessFailure}, {c: wire.CompletionLaunchFailure}, {c: wire.CompletionDriverInitFailure},
		{c: wire.CompletionDriverFailed}, {c: wire.CompletionServicesUnavail}, {c: wire.CompletionResourcesUnavail},
		{c: wire.CompletionProgramExit, exit: func(c int) bool { return c != 0 && c != exitOOM }}},
		"Error, CanceledByDriver, ProcessInitializationFailure, ProcessFailure, LaunchFailure, DriverInitializationFailure, DriverProcessFailed, ServicesUnavailable, ResourcesUnavailable, and ProgramExit with an exit code other than 0 and 137"},
	{[]string{"CANCELLED", "CA"}, []stateSel{{c: wire.CompletionCanceledByUser}, {c: wire.CompletionCanceledByAdmin}, {c: wire.CompletionCanceledBySystem}},
		"CanceledByUser, CanceledByAdministrator, CanceledBySystem"},
	{[]string{"OUT_OF_MEMORY", "OOM"}, []stateSel{{c: wire.CompletionProgramExit, exit: func(c int) bool { return c == exitOOM }}},
		"ProgramExit with exit code 137 (killed at its memory cap, or by another SIGKILL); a job whose processes were killed so ends ProcessFailure or Error"},
}

// slurmNoMap are sacct's states no ducc work ends in, with why.
var slurmNoMap = map[string]string{
	"TIMEOUT": "ducc work has no time limit, so none ends TIMEOUT (a work item past process_per_item_time_max fails: see Error, CanceledByDriver)",
	"TO":      "ducc work has no time limit, so none ends TIMEOUT (a work item past process_per_item_time_max fails: see Error, CanceledByDriver)",
	"PENDING": "'ducc history' lists ended work; 'ducc jobs' lists work that waits or runs",
	"PD":      "'ducc history' lists ended work; 'ducc jobs' lists work that waits or runs",
	"RUNNING": "'ducc history' lists ended work; 'ducc jobs' lists work that waits or runs",
	"R":       "'ducc history' lists ended work; 'ducc jobs' lists work that waits or runs",
}

// helpWidth is the width the help's lists are wrapped to.
const helpWidth = 80

// helpItem is one entry of a list in the help: "  name: text", wrapped
// to helpWidth with its continuation lines indented.
func helpItem(b *strings.Builder, name, text string) {
	for i, l := range wrap(name+": "+text, helpWidth-6) {
		if i == 0 {
			b.WriteString("  " + l + "\n")
		} else {
			b.WriteString("      " + l + "\n")
		}
	}
}

// completionHelp lists the completion reasons for --state's help.
func completionHelp() string {
	var b strings.Builder
	for _, c := range wire.Completions() {
		helpItem(&b, string(c)+" ("+c.Short()+")", c.Means())
	}
	return b.String()
}

// slurmHelp lists sacct's states for --state's help.
func slurmHelp() string {
	var b strings.Builder
	for _, s := range slurmStates {
		helpItem(&b, strings.Join(s.names, ", "), s.means)
	}
	helpItem(&b, "TIMEOUT, TO", "none: "+slurmNoMap["TIMEOUT"])
	return b.String()
}

// parseStates reads --state: completion reasons, their short names and
// sacct's states. Anything else is a usage error naming what --state
// takes: a filter that matches nothing would print an empty table.
func parseStates(flags []string) ([]stateSel, error) {
	var sels []stateSel
	for _, f := range flags {
		for _, s := range strings.Split(f, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if c, ok := wire.ParseCompletion(s); ok {
				sels = append(sels, stateSel{c: c})
				continue
			}
			found := false
			for _, st := range slurmStates {
				if slices.ContainsFunc(st.names, func(n string) bool { return strings.EqualFold(n, s) }) {
					sels, found = append(sels, st.sels...), true
					break
				}
			}
			if found {
				continue
			}
			if why, ok := slurmNoMap[strings.ToUpper(s)]; ok {
				return nil, usageErr("--state %s: %s", s, why)
			}
			var names []string
			for _, c := range wire.Completions() {
				names = append(names, string(c))
			}
			var slurm []string
			for _, st := range slurmStates {
				slurm = append(slurm, st.names[0])
			}
			return nil, usageErr("--state %q is not a state of ended work; give a completion reason (%s), its short name (ProcFail, CanceledAdm...; 'ducc history --help' lists them) or one of sacct's states %s",
				s, strings.Join(names, ", "), strings.Join(slurm, ", "))
		}
	}
	return sels, nil
}

// selCompletions are the completion reasons the head is asked for.
func selCompletions(sels []stateSel) []string {
	var out []string
	for _, s := range sels {
		if !slices.Contains(out, string(s.c)) {
			out = append(out, string(s.c))
		}
	}
	return out
}

// filterStates keeps the records a selector matches, by their exit code
// too; no selector keeps them all.
func filterStates(recs []wire.HistoryRecord, sels []stateSel) []wire.HistoryRecord {
	if len(sels) == 0 {
		return recs
	}
	return slices.DeleteFunc(recs, func(r wire.HistoryRecord) bool {
		return !slices.ContainsFunc(sels, func(s stateSel) bool {
			return strings.EqualFold(r.Completion, string(s.c)) && (s.exit == nil || s.exit(r.ExitCode))
		})
	})
}

func historyState(r wire.HistoryRecord) string {
	if r.Completion == string(wire.CompletionProgramExit) {
		return fmt.Sprintf("Exit(%d)", r.ExitCode)
	}
	return cut(wire.Completion(r.Completion).Short(), 11)
}

// printHistory prints the records as a table that fits 80 columns (user
// names are cut at 8 characters; the class is in --json). When a record
// used GPUs, a GPU column gives the GPU time held (as CPU gives the CPU
// time) and user names are cut at 5 to make room.
func printHistory(w io.Writer, recs []wire.HistoryRecord, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	gpus := historyHasGPUs(recs)
	userWidth, gpuHead := 8, ""
	if gpus {
		userWidth, gpuHead = 5, "\tGPU"
	}
	fmt.Fprintln(tw, "ID\tUSER\tENDED\tELAPSED\tSTATE\tMAXRSS\tCPU"+gpuHead+"\tITEMS")
	for _, r := range recs {
		items := "-"
		if r.Kind == wire.WorkJob {
			items = count(r.Done) + "/" + count(r.Items)
			if r.Failed > 0 {
				items += " " + count(r.Failed) + "F"
			}
		}
		gpu := ""
		if gpus {
			gpu = "\t" + gpuTimeShort(r.GPUSeconds)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s%s\t%s\n", r.ID, cut(r.User, userWidth),
			endClock(r.EndedAt, now), duration(r.StartedAt, r.EndedAt, now), historyState(r),
			shortSize(r.MaxRSS), cpuTime(r.CPUSeconds), gpu, items)
	}
	tw.Flush()
}

// cut shortens s to n characters, marking the cut with "+".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "+"
}

// endClock is a short end time: the clock today, else the date.
func endClock(ms int64, now time.Time) string {
	t := time.UnixMilli(ms)
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("Jan02 15:04")
}

// shortSize is a size in at most five characters: 512K, 1.5G, 1023M.
func shortSize(b int64) string {
	if b <= 0 {
		return "-"
	}
	v, unit := float64(b), "B"
	for _, u := range []string{"K", "M", "G", "T", "P"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	if v < 10 && unit != "B" {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + unit
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

// count writes a count in at most five characters: 99999, 100k, 2500k.
func count(n int) string {
	if n < 100_000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%dk", n/1000)
}

func cpuTime(s float64) string {
	if s <= 0 {
		return "-"
	}
	if s < 10 {
		return fmt.Sprintf("%.2fs", s)
	}
	return units.FormatDuration(time.Duration(s * float64(time.Second)))
}
