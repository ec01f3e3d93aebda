package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// jobColumn is one column `ducc jobs -o` can show.
type jobColumn struct {
	name string // as given to -o
	head string
	help string
	// shrink and drop are the column's steps in fitting the terminal
	// (table): 0 never; else the order (1 first) in which it is cut
	// (shrink) and left out (drop). The id, the state and the item
	// counts are never cut.
	shrink, drop int
	cell         func(x *wire.WorkInfo, now time.Time) string
}

// defaultJobColumns are the columns of `ducc jobs`; on a terminal the
// least useful give way to fit it (jobColumn's steps).
const defaultJobColumns = "id,user,kind,class,state,done,total,err,rate,time,nodelist"

// wideJobColumns are the columns of --wide and -o wide, printed whole.
const wideJobColumns = "id,user,kind,class,state,memory,gpus,procs,done,total,err,rate,start,time,nodelist,held,description"

var jobColumns = []jobColumn{
	{"id", "ID", "the work's id", 0, 0, func(x *wire.WorkInfo, _ time.Time) string { return strconv.FormatUint(x.ID, 10) }},
	{"user", "USER", "its owner", 3, 0, func(x *wire.WorkInfo, _ time.Time) string { return x.User }},
	{"kind", "KIND", "job, managed (ducc run), resv (reservation)", 0, 13, func(x *wire.WorkInfo, _ time.Time) string { return kindCell(x.Kind) }},
	{"class", "CLASS", "its scheduling class", 2, 12, func(x *wire.WorkInfo, _ time.Time) string { return x.Class }},
	{"state", "STATE", "its state (Waiting: see why); how ended work ended", 0, 0, func(x *wire.WorkInfo, _ time.Time) string { return tableState(x) }},
	{"memory", "MEMORY", "memory per process, as asked", 0, 9, func(x *wire.WorkInfo, _ time.Time) string { return units.FormatSize(x.Memory) }},
	{"gpus", "GPUS", "GPUs per process: whole (2) or a slice of one GPU's memory (20G)", 0, 9, func(x *wire.WorkInfo, _ time.Time) string { return jobGPUCell(x) }},
	{"procs", "PROCS", "live processes / processes wanted", 0, 10, func(x *wire.WorkInfo, _ time.Time) string { return procsCell(x) }},
	{"done", "DONE", "work items done", 0, 0, func(x *wire.WorkInfo, _ time.Time) string {
		return jobNum(x, func(s *wire.JobStats) int { return s.Done })
	}},
	{"total", "TOTAL", "work items in the job", 0, 0, func(x *wire.WorkInfo, _ time.Time) string {
		return jobNum(x, func(s *wire.JobStats) int { return s.Total })
	}},
	{"err", "ERR", "work items failed", 0, 0, func(x *wire.WorkInfo, _ time.Time) string {
		return jobNum(x, func(s *wire.JobStats) int { return s.Failed })
	}},
	{"rate", "RATE", "items per second, for running jobs", 0, 4, func(x *wire.WorkInfo, _ time.Time) string { return rateCell(x) }},
	{"start", "START", "when its first process started", 0, 6, func(x *wire.WorkInfo, _ time.Time) string { return clock(x.StartedAt) }},
	{"time", "TIME", "how long it has run (or ran)", 0, 5, func(x *wire.WorkInfo, now time.Time) string {
		return duration(x.StartedAt, x.EndedAt, now)
	}},
	{"nodes", "NODES", "the nodes of its live processes", 11, 0, func(x *wire.WorkInfo, _ time.Time) string { return nodesCell(x) }},
	{"reason", "REASON", "why it waits, as a code; in words in 'ducc show'", 0, 8, func(x *wire.WorkInfo, _ time.Time) string {
		return dash(string(x.ReasonCode))
	}},
	{"nodelist", "NODES(REASON)", "its nodes when it runs, else why it waits (a code)", 14, 0, func(x *wire.WorkInfo, _ time.Time) string {
		if x.ReasonCode != "" {
			return "(" + string(x.ReasonCode) + ")"
		}
		return nodesCell(x)
	}},
	{"held", "HELD", "why running work has fewer processes than it could", 0, 7, func(x *wire.WorkInfo, _ time.Time) string {
		return dash(string(x.HeldCode))
	}},
	{"description", "DESCRIPTION", "its description", 1, 15, func(x *wire.WorkInfo, _ time.Time) string { return dash(x.Description) }},
}

// jobColumnsHelp lists the columns for the command's help.
func jobColumnsHelp() string {
	var b strings.Builder
	for _, c := range jobColumns {
		fmt.Fprintf(&b, "  %-12s %-14s %s\n", c.name, c.head, c.help)
	}
	return b.String()
}

// pickJobColumns parses -o: column names separated by commas.
func pickJobColumns(spec string) ([]jobColumn, error) {
	if strings.EqualFold(strings.TrimSpace(spec), "wide") {
		spec = wideJobColumns
	}
	var out []jobColumn
	for _, name := range strings.Split(spec, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		i := slices.IndexFunc(jobColumns, func(c jobColumn) bool { return c.name == name })
		if i < 0 {
			names := make([]string, len(jobColumns))
			for j, c := range jobColumns {
				names[j] = c.name
			}
			return nil, usageErr("unknown column %q for -o; columns are %s, or 'wide' for most of them", name, strings.Join(names, ", "))
		}
		out = append(out, jobColumns[i])
	}
	if len(out) == 0 {
		return nil, usageErr("-o names no column; e.g. -o %s", defaultJobColumns)
	}
	return out, nil
}

// printWorkTable prints work in cols, fitted to width (0: no limit); it
// returns the heads of the columns it left out to fit.
func printWorkTable(w io.Writer, ws []wire.WorkInfo, cols []jobColumn, now time.Time, width int, header bool) ([]string, error) {
	t := &table{}
	for _, c := range cols {
		t.heads = append(t.heads, c.head)
		t.shrink = append(t.shrink, c.shrink)
		t.drop = append(t.drop, c.drop)
	}
	for i := range ws {
		row := make([]string, len(cols))
		for j, c := range cols {
			row[j] = c.cell(&ws[i], now)
		}
		t.add(row...)
	}
	return t.write(w, width, header)
}

// kindCell is the kind, reservations shortened.
func kindCell(k wire.WorkKind) string {
	if k == wire.WorkReservation {
		return "resv"
	}
	return string(k)
}

// tableState is the state, or for ended work how it ended. The two
// waiting states read "Waiting": the reason code says for what.
func tableState(x *wire.WorkInfo) string {
	if !x.Ended {
		if strings.HasPrefix(x.State, "WaitingFor") {
			return "Waiting"
		}
		return x.State
	}
	if x.Completion == string(wire.CompletionProgramExit) {
		return fmt.Sprintf("Exit(%d)", x.ExitCode)
	}
	return dash(x.Completion)
}

func jobNum(x *wire.WorkInfo, f func(*wire.JobStats) int) string {
	if x.Job == nil {
		return "-"
	}
	return strconv.Itoa(f(x.Job))
}

func rateCell(x *wire.WorkInfo) string {
	if x.Job == nil || x.Ended || x.Job.Processes == 0 {
		return "-"
	}
	return humanRate(x.Job.Rate) + "/s"
}

func procsCell(x *wire.WorkInfo) string {
	live := 0
	for _, p := range x.Procs {
		if p.EndedAt == 0 && !procEnded(p.State) {
			live++
		}
	}
	if x.Wanted > 0 && !x.Ended {
		return fmt.Sprintf("%d/%d", live, x.Wanted)
	}
	return strconv.Itoa(live)
}

// procEnded tells the states of processes that are gone.
func procEnded(state string) bool {
	return state == wire.ProcExited || state == wire.ProcLaunchFailed || state == wire.ProcLost
}

// nodesCell is the first node, and how many more there are.
func nodesCell(x *wire.WorkInfo) string {
	nodes := x.Nodes
	if len(nodes) == 0 && x.Node != "" {
		nodes = []string{x.Node}
	}
	switch len(nodes) {
	case 0:
		return "-"
	case 1:
		return nodes[0]
	}
	return fmt.Sprintf("%s+%d", nodes[0], len(nodes)-1)
}
