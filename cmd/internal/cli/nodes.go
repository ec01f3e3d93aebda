package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

func newNodesCmd(g *globals) *cobra.Command {
	var wide, gpus bool
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "list nodes: state, memory, shares, processes, GPUs, last heartbeat",
		Long: `List the nodes: state, memory, shares, processes, last heartbeat, and on a
cluster with GPUs each node's GPUs: how many of what memory and how many are
given out ("2×80G (1 in use)").

--gpus lists every GPU instead: its node, UUID, model and memory, what the
scheduler has given out of it (whole, or the sum of the slices on it), the
memory in use on it and its utilization (the percent of time a kernel ran,
where NVML can say; "-" where it cannot) and the processes that hold it;
then how each node's agent found its GPUs, or why it has none.

On a terminal the table is fitted to its width (MEM TOTAL, then HEARTBEAT
and PROCS give way, and a line on stderr names them); --wide prints every
column. Piped, and with --json, everything is printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list wire.NodeList
			if err := newClient(g).call(cmd.Context(), wire.MethodNodes, wire.Empty{}, &list); err != nil {
				return err
			}
			if g.json {
				if list.Nodes == nil {
					list.Nodes = []wire.NodeInfo{}
				}
				return printJSON(cmd.OutOrStdout(), list)
			}
			out := cmd.OutOrStdout()
			width := outWidth(out)
			if wide {
				width = 0
			}
			if gpus {
				return printGPUs(out, cmd.ErrOrStderr(), list.Nodes, width)
			}
			dropped, err := nodeTable(list.Nodes, time.Now()).write(out, width, true)
			if err != nil {
				return err
			}
			leftOut(cmd.ErrOrStderr(), dropped, width)
			for _, n := range list.Nodes {
				if len(n.Leftovers) > 0 {
					fmt.Fprintln(out, leftoverNote(n))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "every column, never fitted to the terminal")
	cmd.Flags().BoolVar(&gpus, "gpus", false, "list each GPU: node, UUID, model, memory, allocated, used, utilization, holders")
	return cmd
}

// nodeTable is the table of 'ducc nodes'; the GPUS column is there when
// a node has GPUs.
func nodeTable(nodes []wire.NodeInfo, now time.Time) *table {
	t := &table{
		heads:  []string{"NAME", "STATE", "MEM TOTAL", "SCHEDULABLE", "USED", "SHARES", "PROCS", "HEARTBEAT"},
		shrink: []int{0, 0, 0, 0, 0, 0, 0, 0},
		drop:   []int{0, 0, 1, 0, 0, 0, 3, 2},
	}
	withGPUs := anyNodeGPUs(nodes)
	if withGPUs {
		t.heads = slices.Insert(t.heads, 7, "GPUS")
		t.shrink = slices.Insert(t.shrink, 7, 0)
		t.drop = slices.Insert(t.drop, 7, 0)
	}
	for _, n := range nodes {
		age := now.Sub(time.UnixMilli(n.LastHeartbeat)).Round(100 * time.Millisecond)
		row := []string{n.Name, n.State, units.FormatSize(n.MemTotal), units.FormatSize(n.MemSchedulable),
			units.FormatSize(n.MemUsed), fmt.Sprintf("%d/%d", n.SharesUsed, n.Shares), strconv.Itoa(n.Procs), age.String() + " ago"}
		if withGPUs {
			row = slices.Insert(row, 7, nodeGPUCell(n))
		}
		t.add(row...)
	}
	return t
}

// printGPUs is 'ducc nodes --gpus'.
func printGPUs(out, errOut io.Writer, nodes []wire.NodeInfo, width int) error {
	if anyNodeGPUs(nodes) {
		dropped, err := gpuTable(nodes).write(out, width, true)
		if err != nil {
			return err
		}
		leftOut(errOut, dropped, width)
	} else {
		fmt.Fprintln(out, "No node has GPUs.")
	}
	for _, l := range gpuDiscoveryLines(nodes) {
		for _, w := range wrap(l, width) {
			fmt.Fprintln(out, w)
		}
	}
	return nil
}

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "show the cluster: head, Raft state, nodes up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st wire.StatusInfo
			if err := newClient(g).call(cmd.Context(), wire.MethodStatus, wire.Empty{}, &st); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), st)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "Cluster:\t%s\n", st.Cluster)
			if st.Incarnation != "" {
				fmt.Fprintf(tw, "Incarnation:\t%s\n", st.Incarnation)
			}
			fmt.Fprintf(tw, "Head:\t%s (%s)\n", st.Head, st.HeadPeer)
			fmt.Fprintf(tw, "Raft:\t%s, term %d, applied index %d\n", st.RaftState, st.RaftTerm, st.RaftIndex)
			if sn := st.Snapshot; sn != nil {
				fmt.Fprintf(tw, "Raft snapshot:\t%s\n", snapshotLine(sn))
			}
			if len(st.Voters) == 0 {
				fmt.Fprintf(tw, "Raft peers:\t%s\n", strings.Join(st.Peers, ", "))
			}
			for i, v := range st.Voters {
				label := ""
				if i == 0 {
					label = "Head group:"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", label, voterName(v), voterState(v, time.Now()), v.Peer)
			}
			fmt.Fprintf(tw, "Nodes up:\t%d of %d\n", st.NodesUp, st.NodesAll)
			fmt.Fprintf(tw, "Share quantum:\t%s\n", units.FormatSize(st.Quantum))
			fmt.Fprintf(tw, "Local agent:\t%s\n", st.Agent)
			fmt.Fprintf(tw, "Version:\t%s\n", st.Version)
			return tw.Flush()
		},
	}
}

// voterName is a head group member's node name, or "?" when the head has
// not heard from it.
func voterName(v wire.VoterInfo) string {
	if v.Node == "" {
		return "?"
	}
	return v.Node
}

// voterState is a head group member's state, with how long it has been
// silent when it is unreachable.
func voterState(v wire.VoterInfo, now time.Time) string {
	st := v.State
	if !v.Voter {
		st += " (non-voter)"
	}
	if v.State == wire.VoterUnreachable {
		if v.LastHeartbeat == 0 {
			st += ", no heartbeat since this head started"
		} else {
			st += fmt.Sprintf(", last heartbeat %s ago", now.Sub(time.UnixMilli(v.LastHeartbeat)).Round(time.Second))
		}
	}
	return st
}

// voterNames lists head group members as "name (state)", with the peer
// id for a member whose name the head does not know.
func voterNames(vs []wire.VoterInfo) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		name := v.Node
		if name == "" {
			name = v.Peer
		}
		names[i] = fmt.Sprintf("%s (%s)", name, v.State)
	}
	return strings.Join(names, ", ")
}

// leftoverNote says which processes of an earlier cluster incarnation
// still run on a node, and how an administrator stops them.
func leftoverNote(n wire.NodeInfo) string {
	procs := make([]string, len(n.Leftovers))
	for i, l := range n.Leftovers {
		procs[i] = fmt.Sprintf("%s (pid %d, incarnation %s)", l.ID, l.PID, l.Incarnation)
	}
	run := "still runs"
	if len(n.Leftovers) != 1 {
		run = "still run"
	}
	return fmt.Sprintf("%s: %s of an earlier cluster incarnation %s, left alone: %s; "+
		"to stop them, restart the agent on %s with --stop-leftovers (docs/operations.md)",
		n.Name, units.Plural(len(n.Leftovers), "process"), run, strings.Join(procs, ", "), n.Name)
}

// snapshotLine describes the head's last Raft snapshot, the log applied
// since, and the restore of its last start.
func snapshotLine(sn *wire.SnapshotInfo) string {
	line := "none yet"
	if sn.Index != 0 {
		line = fmt.Sprintf("index %d, %s", sn.Index, units.FormatSize(sn.Size))
	}
	line += fmt.Sprintf("; %s (%s) since", units.Plural(int(sn.SinceEntries), "entry"), units.FormatSize(int64(sn.SinceBytes)))
	if sn.RestoredIndex != 0 {
		line += fmt.Sprintf("; restored index %d in %d ms", sn.RestoredIndex, sn.RestoreMS)
	}
	return line
}
