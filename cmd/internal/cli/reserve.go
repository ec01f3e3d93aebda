package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

func newClassesCmd(g *globals) *cobra.Command {
	var wide bool
	cmd := &cobra.Command{
		Use:   "classes",
		Short: "list scheduling classes with their live demand and allocation",
		Long: `List the scheduling classes with their live demand and allocation.

On a terminal the table is fitted to its width: the columns of the classes'
configuration give way first (GUARANTEED, MAX, WEIGHT, QUANTUM, POOL,
PRIORITY), and a line on stderr names those left out; --wide prints every
column. Piped, and with --json, everything is printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list wire.ClassList
			if err := newClient(g).call(cmd.Context(), wire.MethodClasses, wire.Empty{}, &list); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), list)
			}
			out := cmd.OutOrStdout()
			width := outWidth(out)
			if wide {
				width = 0
			}
			dropped, err := classTable(list.Classes).write(out, width, true)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "(* = default class of its policy)")
			leftOut(cmd.ErrOrStderr(), dropped, width)
			return nil
		},
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "every column, never fitted to the terminal")
	return cmd
}

// classTable is the table of 'ducc classes': the live columns stay, the
// configuration's give way.
func classTable(classes []wire.ClassInfo) *table {
	t := &table{
		heads:  []string{"NAME", "POLICY", "PRIORITY", "WEIGHT", "POOL", "QUANTUM", "GUARANTEED", "MAX", "WORK", "DEMAND", "FAIR SHARE", "ALLOCATED"},
		shrink: make([]int, 12),
		drop:   []int{0, 0, 6, 3, 5, 4, 1, 2, 0, 0, 0, 0},
	}
	for _, c := range classes {
		name := c.Name
		if c.Default {
			name += "*"
		}
		t.add(name, c.Policy, strconv.Itoa(c.Priority), orDash(c.Weight), c.Pool, units.FormatSize(c.Quantum),
			sizeOrDash(c.Guaranteed), sizeOrDash(c.Max), strconv.Itoa(c.Works), units.FormatSize(c.Demand),
			sizeOrDash(c.FairShare), units.FormatSize(c.Allocated))
	}
	return t
}

func orDash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func sizeOrDash(n int64) string {
	if n == 0 {
		return "-"
	}
	return units.FormatSize(n)
}

func newReserveCmd(g *globals) *cobra.Command {
	var specFlag string
	cmd := &cobra.Command{
		Use:   "reserve --memory SIZE",
		Short: "reserve a whole machine of exactly that memory size",
		Long: `Reserve a whole machine whose schedulable memory, in shares, is exactly the size asked
for (never a bigger one). Nothing is started on it; it is yours until 'ducc unreserve ID'.
Prints the id, and the node once it has one (--wait waits for it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw := spec.Raw{}
			if specFlag != "" {
				var warn []string
				var err error
				if raw, warn, err = spec.ParseFile(specFlag, spec.KindReserve); err != nil {
					return usageErr("%v", err)
				}
				printWarnings(cmd, warn)
			}
			if err := spec.FlagValues(cmd.Flags(), spec.KindReserve, raw, ""); err != nil {
				return usageErr("%v", err)
			}
			r, err := spec.BuildReserve(raw)
			if err != nil {
				return usageErr("%v", err)
			}
			c := newClient(g)
			var rep wire.SubmitReply
			if err := c.call(cmd.Context(), wire.MethodReserve, r.Req, &rep); err != nil {
				return err
			}
			var progress io.Writer
			if r.Wait && !g.json {
				progress = cmd.ErrOrStderr()
			}
			info, err := reservationState(cmd.Context(), c, rep.ID, r.Wait, progress)
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), info)
			}
			switch {
			case info.Ended:
				return &exitError{code: exitFailed, msg: fmt.Sprintf("reservation %d ended %s: %s", rep.ID, info.Completion, info.Reason)}
			case info.Node != "":
				fmt.Fprintf(cmd.OutOrStdout(), "Reservation %d: node %s\n", rep.ID, info.Node)
			case info.Reason == "":
				fmt.Fprintf(cmd.OutOrStdout(), "Reservation %d pending\n", rep.ID)
			default:
				printWaiting(cmd.OutOrStdout(), &info, outWidth(cmd.OutOrStdout()))
			}
			return nil
		},
	}
	spec.AddFlags(cmd.Flags(), spec.KindReserve, nil)
	addSpecificationFlag(cmd, &specFlag, "reservation spec")
	return cmd
}

// reservationState waits briefly (or, with wait, until assigned) for the
// scheduler's first decision about a reservation. With progress, it says
// there why the reservation waits, each time the reason changes.
func reservationState(ctx context.Context, c *client, id uint64, wait bool, progress io.Writer) (wire.WorkInfo, error) {
	var info wire.WorkInfo
	deadline := time.Now().Add(3 * time.Second)
	said := ""
	for {
		if err := c.call(ctx, wire.MethodWait, wire.WaitRequest{ID: id, State: "WaitingForResources", TimeoutMS: 1000}, &info); err != nil {
			return info, err
		}
		if info.Node != "" || info.Ended || (!wait && time.Now().After(deadline)) {
			return info, nil
		}
		if progress != nil && info.Reason != "" && info.Reason != said {
			said = info.Reason
			printWaiting(progress, &info, outWidth(progress))
		}
		if info.Reason == "" && !wait {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func newUnreserveCmd(g *globals) *cobra.Command {
	var flagIDs []string
	cmd := &cobra.Command{
		Use:   "unreserve ID...",
		Short: "release reservations",
		Long: `Release reservations. A reservation that has already ended is left as it is:
ducc unreserve says how and when it ended, goes on with the other ids, and
exits 1.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := withIDs(args, flagIDs)
			if err != nil {
				return err
			}
			c := newClient(g)
			var ended error // the last "already ended", returned at the end
			for _, a := range ids {
				id, err := parseID(a)
				if err != nil {
					return err
				}
				var info wire.WorkInfo
				if err := c.call(cmd.Context(), wire.MethodShow, wire.IDRequest{ID: id}, &info); err != nil {
					return err
				}
				if info.Kind != wire.WorkReservation {
					return usageErr("%d is a %s, not a reservation; use 'ducc cancel %d'", id, kindName(info.Kind), id)
				}
				if info.Ended {
					ended = alreadyEnded(cmd.ErrOrStderr(), &info, "release", time.Now())
					continue
				}
				if err := c.call(cmd.Context(), wire.MethodCancel, wire.CancelRequest{ID: id}, &info); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Reservation %d released\n", id)
			}
			return ended
		},
	}
	cmd.Flags().StringArrayVar(&flagIDs, "id", nil, "id of the reservation (the same as giving it as an argument; may be repeated)")
	return cmd
}

// printWaiting says why work waits: its reason code, then the reason in
// words, wrapped to width (0: no limit).
func printWaiting(w io.Writer, info *wire.WorkInfo, width int) {
	code := ""
	if info.ReasonCode != "" {
		code = " (" + string(info.ReasonCode) + ")"
	}
	kind := string(info.Kind)
	if kind == "" {
		kind = "work"
	}
	fmt.Fprintf(w, "%s %d waiting%s:\n", strings.ToUpper(kind[:1])+kind[1:], info.ID, code)
	inner := 0
	if width > 0 {
		inner = width - 2
	}
	for _, l := range wrap(info.Reason, inner) {
		fmt.Fprintln(w, "  "+l)
	}
}
