package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, usageErr("bad id %q: ids are positive numbers, as printed by 'ducc jobs'", s)
	}
	return id, nil
}

func newWaitCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	var cancelOnInterrupt bool
	cmd := &cobra.Command{
		Use:   "wait ID",
		Short: "wait for work to end; the exit code is the work's",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			c := newClient(g)
			var info wire.WorkInfo
			if err := c.call(ctx, wire.MethodShow, wire.IDRequest{ID: id}, &info); err != nil {
				return err
			}
			if info.Kind == wire.WorkJob {
				return waitJob(ctx, c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), cancelOnInterrupt, g.json)
			}
			for {
				err := c.call(ctx, wire.MethodWait, wire.WaitRequest{ID: id, TimeoutMS: 30_000}, &info)
				if err != nil {
					if ctx.Err() != nil {
						return &exitError{code: exitFailed, msg: fmt.Sprintf("%d still %s after %s", id, info.State, timeout)}
					}
					return err
				}
				if info.Ended {
					break
				}
			}
			if g.json {
				if err := printJSON(cmd.OutOrStdout(), info); err != nil {
					return err
				}
			}
			return workExit(&info, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (exit 1)")
	cmd.Flags().BoolVar(&cancelOnInterrupt, "cancel-on-interrupt", false, "Ctrl-C cancels the work (jobs)")
	return cmd
}

func newCancelCmd(g *globals) *cobra.Command {
	var flagIDs []string
	var reason, dpid string
	cmd := &cobra.Command{
		Use:   "cancel ID[.N]...",
		Short: "cancel work: SIGTERM, then SIGKILL after the grace period",
		Long: `Cancel work: its processes get SIGTERM, then SIGKILL after the grace period.
ID.N (or --id ID --dpid N) cancels process N of a job only: its items go to the
job's other processes.

Work that has already ended is left as it is: ducc cancel says how and when it
ended, goes on with the other ids, and exits 1 ("nothing was canceled" is a
failure of the command, as for kill(1) and scancel).

Exit codes: 0 every piece of work named is canceled or canceling; 1 some had
already ended (each is named on stderr); 2 a bad id, or work that is not
yours; 3 no agent answers.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := withIDs(args, flagIDs)
			if err != nil {
				return err
			}
			if dpid != "" && len(ids) != 1 {
				return usageErr("--dpid names a process of one job: give one job id")
			}
			c := newClient(g)
			var ended error // the last "already ended", returned at the end
			for _, a := range ids {
				job, proc, _ := strings.Cut(a, ".") // JOB.N is process N of JOB
				id, err := parseID(job)
				if err != nil {
					return err
				}
				if dpid != "" {
					proc = dpid
				}
				req := wire.CancelRequest{ID: id, Reason: reason}
				if proc != "" {
					if _, err := parseID(proc); err != nil {
						return usageErr("bad process number %q: processes are numbered within their job, as 'ducc show %d' lists them (%d.1, %d.2, ...)", proc, id, id, id)
					}
					req.Process = fmt.Sprintf("%d.%s", id, proc)
				}
				var info wire.WorkInfo
				if req.Process == "" {
					// Canceling ended work would change nothing: say so.
					if err := c.call(cmd.Context(), wire.MethodShow, wire.IDRequest{ID: id}, &info); err != nil {
						return err
					}
					if info.Ended {
						ended = alreadyEnded(cmd.ErrOrStderr(), &info, "cancel", time.Now())
						continue
					}
				}
				if err := c.call(cmd.Context(), wire.MethodCancel, req, &info); err != nil {
					return err
				}
				if req.Process == "" && info.Ended && !canceledBy(info.Completion) {
					// It ended by itself between the two calls.
					ended = alreadyEnded(cmd.ErrOrStderr(), &info, "cancel", time.Now())
					continue
				}
				if req.Process != "" && !g.json {
					fmt.Fprintf(cmd.OutOrStdout(), "Process %s canceled; its items go to the job's other processes\n", req.Process)
					continue
				}
				if g.json {
					if err := printJSON(cmd.OutOrStdout(), info); err != nil {
						return err
					}
					continue
				}
				if info.Ended {
					fmt.Fprintf(cmd.OutOrStdout(), "%d %s (%s)\n", id, info.State, info.Completion)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%d canceling\n", id)
				}
			}
			return ended
		},
	}
	cmd.Flags().StringArrayVar(&flagIDs, "id", nil, "id of the work (the same as giving it as an argument; may be repeated)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, shown with the work's end")
	cmd.Flags().StringVar(&dpid, "dpid", "", "cancel only process N of the job (the same as JOB.N); its items go to the job's other processes")
	return cmd
}

// alreadyEnded says on w that the work info names had ended before it
// could be acted on (verb: "cancel", "release"): what it was, how and
// when it ended. It returns the error that makes the command exit 1 once
// the other ids are done.
func alreadyEnded(w io.Writer, info *wire.WorkInfo, verb string, now time.Time) error {
	how := info.Completion
	if info.Completion == string(wire.CompletionProgramExit) {
		how += fmt.Sprintf(", exit code %d", info.ExitCode)
	}
	if info.Reason != "" {
		how += ": " + info.Reason
	}
	when := ""
	if info.EndedAt > 0 {
		ago := now.Sub(time.UnixMilli(info.EndedAt)).Round(time.Second)
		when = fmt.Sprintf(" at %s (%s ago)", clock(info.EndedAt), units.FormatDuration(max(ago, 0)))
	}
	printErr(w, fmt.Sprintf("%s %d already ended%s, %s; nothing to %s", kindName(info.Kind), info.ID, when, how, verb))
	return &exitError{code: exitFailed}
}

// canceledBy reports whether a completion is a cancellation's.
func canceledBy(c string) bool {
	return c == string(wire.CompletionCanceledByUser) || c == string(wire.CompletionCanceledByAdmin)
}

// kindName names a kind of work in a sentence.
func kindName(k wire.WorkKind) string {
	switch k {
	case "":
		return "work"
	case wire.WorkManaged:
		return "managed reservation"
	}
	return string(k)
}

func newJobsCmd(g *globals) *cobra.Command {
	var all, noHeader, wide bool
	var user, format string
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "list work: jobs, managed reservations, reservations",
		Long: `List work: jobs, managed reservations and reservations; active ones, or
with --all also the ended ones.

On a terminal the table is fitted to its width: long descriptions, classes
and user names are cut with "…", then the least useful columns are left out
(RATE, TIME, START, HELD, REASON, MEMORY, PROCS, then CLASS and KIND), and a
line on stderr names them. Ids, states and item counts are never cut.
--wide (or -o wide) prints more columns, whole; piped, the table is printed
whole. docs/jobs.md lists the reason codes; 'ducc show ID' says the reason in
words, and --json gives both (reason, reason_code).

Columns (-o/--format, separated by commas; the default is
` + defaultJobColumns + `):
` + jobColumnsHelp(),
		Example: `  ducc jobs
  ducc jobs -o id,state,done,total,err,rate,reason --noheader
  ducc jobs --all --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if wide {
				if cmd.Flags().Changed("format") {
					return usageErr("--wide and -o both choose the columns: give one (-o wide is --wide)")
				}
				format = "wide"
			}
			cols, err := pickJobColumns(format)
			if err != nil {
				return err
			}
			var list wire.WorkList
			if err := newClient(g).call(cmd.Context(), wire.MethodJobs, wire.ListRequest{All: all, User: user}, &list); err != nil {
				return err
			}
			if g.json {
				if list.Work == nil {
					list.Work = []wire.WorkInfo{}
				}
				return printJSON(cmd.OutOrStdout(), list)
			}
			out := cmd.OutOrStdout()
			width := outWidth(out)
			if strings.EqualFold(format, "wide") {
				width = 0
			}
			dropped, err := printWorkTable(out, list.Work, cols, time.Now(), width, !noHeader)
			leftOut(cmd.ErrOrStderr(), dropped, width)
			return err
		},
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "more columns ("+wideJobColumns+"), never fitted to the terminal")
	cmd.Flags().BoolVarP(&all, "all", "a", false, "include finished work")
	cmd.Flags().StringVarP(&user, "user", "u", "", "only this user's work")
	cmd.Flags().StringVarP(&format, "format", "o", defaultJobColumns, "columns to show, separated by commas (listed above)")
	cmd.Flags().BoolVar(&noHeader, "noheader", false, "leave the header line out (for scripts)")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clock(ms int64) string {
	if ms == 0 {
		return "-"
	}
	t := time.UnixMilli(ms)
	if time.Since(t) > 20*time.Hour {
		return t.Format("Jan 02 15:04")
	}
	return t.Format("15:04:05")
}

func duration(start, end int64, now time.Time) string {
	if start == 0 {
		return "-"
	}
	e := now
	if end != 0 {
		e = time.UnixMilli(end)
	}
	return units.FormatDuration(e.Sub(time.UnixMilli(start)))
}

func newShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "show one piece of work in detail",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			var info wire.WorkInfo
			if err := newClient(g).call(cmd.Context(), wire.MethodShow, wire.IDRequest{ID: id}, &info); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), info)
			}
			printWorkWidth(cmd.OutOrStdout(), info, outWidth(cmd.OutOrStdout()), time.Now())
			return nil
		},
	}
}

func newLogsCmd(g *globals) *cobra.Command {
	var follow bool
	var process string
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "print the log of a piece of work's process",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			path := fmt.Sprintf("%s?id=%d&process=%s", wire.PathLogs, id, url.QueryEscape(process))
			if follow {
				path += "&follow=1"
			}
			return newClient(g).stream(cmd.Context(), "GET", path, nil, func(ev wire.AttachEvent) error {
				switch {
				case len(ev.Output) > 0:
					_, err := cmd.OutOrStdout().Write(ev.Output)
					return err
				case ev.Notice != "":
					fmt.Fprintln(cmd.ErrOrStderr(), "ducc: "+ev.Notice)
				case ev.Error != nil:
					return &exitError{code: ev.Error.Code, msg: ev.Error.Error}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing while the work runs")
	cmd.Flags().StringVar(&process, "process", "", "process id, e.g. 17.2 (default: the first)")
	return cmd
}
