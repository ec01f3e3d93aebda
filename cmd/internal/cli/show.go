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

// printWork prints one piece of work in full, with no width limit.
func printWork(w io.Writer, x wire.WorkInfo) {
	printWorkWidth(w, x, 0, time.Now())
}

// printWorkWidth prints one piece of work, its lines fitted to width
// (0: no limit): long values wrap, the process table gives way.
func printWorkWidth(w io.Writer, x wire.WorkInfo, width int, now time.Time) {
	var f fields
	f.add("ID", strconv.FormatUint(x.ID, 10))
	f.add("Kind", string(x.Kind))
	f.add("User", x.User)
	f.add("Class", x.Class)
	st := x.State
	if x.ReasonCode != "" {
		st += " (" + string(x.ReasonCode) + ")"
	}
	f.add("State", st)
	if x.Ended {
		f.add("Completion", x.Completion)
		f.add("Exit code", strconv.Itoa(x.ExitCode))
	}
	if x.Reason != "" {
		f.add("Reason", x.Reason)
	}
	if n := oomKills(&x); n > 0 {
		f.add("OOM kills", fmt.Sprintf("%d (processes killed by the OOM killer at their memory cap; see the processes below)", n))
	}
	if p := procsLine(&x); p != "" {
		f.add("Processes", p)
	}
	if x.Held != "" {
		f.add("Held back", fmt.Sprintf("%s (%s)", x.Held, x.HeldCode))
	}
	if s := x.Job; s != nil {
		f.add("Items", itemsLine(s))
		if t := timingLine(s); t != "" {
			f.add("Item time", t)
		}
		if r := rateLine(&x); r != "" {
			f.add("Rate", r)
		}
	}
	f.add("Memory", memoryLine(&x))
	if label, v := gpuRequest(&x); v != "" {
		f.add(label, v)
	}
	if u := gpuUse(&x); u != "" {
		f.add("GPU use", u)
	}
	if len(x.Nodes) > 0 {
		f.add("Nodes", strings.Join(x.Nodes, ", "))
	}
	if len(x.Command) > 0 && x.Command[0] != "" {
		if len(x.Redacted) > 0 {
			f.add("Command", fmt.Sprintf("%s (%s hidden: only %s, root and administrators see them)", strings.Join(x.Command, " "), strings.Join(x.Redacted, ", "), x.User))
		} else {
			f.add("Command", strings.Join(x.Command, " "))
		}
	}
	if x.Description != "" {
		f.add("Description", x.Description)
	}
	if x.ShareGroup != "" {
		f.add("Shared with", fmt.Sprintf("group %s (its members may read the logs and results)", x.ShareGroup))
	}
	f.add("Submitted", time.UnixMilli(x.SubmittedAt).Format(time.RFC3339))
	if x.StartedAt != 0 {
		f.add("Started", time.UnixMilli(x.StartedAt).Format(time.RFC3339))
		f.add("Run time", duration(x.StartedAt, x.EndedAt, now))
	}
	if x.EndedAt != 0 {
		f.add("Ended", time.UnixMilli(x.EndedAt).Format(time.RFC3339))
	}
	if x.PurgedAt != 0 {
		f.add("Purged", time.UnixMilli(x.PurgedAt).Format(time.RFC3339)+
			" (left the live state after head.retention.work; 'ducc history' keeps its accounting record)")
	}
	f.write(w, width)
	if len(x.Procs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nProcesses:")
	t := &table{
		heads:  []string{"ID", "NODE", "PID", "STATE", "LIMIT", "RSS", "DONE", "ERR", "END"},
		shrink: []int{0, 2, 0, 3, 0, 0, 0, 0, 1},
		indent: "  ",
	}
	// GPUS: how many whole GPUs a process holds, or its slice; the
	// lines below name them (UUIDs are too long for the table).
	withGPUs := anyProcGPUs(&x)
	if withGPUs {
		t.heads = slices.Insert(t.heads, 6, "GPUS")
		t.shrink = slices.Insert(t.shrink, 6, 0)
	}
	var details fields
	for _, p := range x.Procs {
		end := procEnd(p)
		id := p.ID
		if p.Kind == wire.ProcDriver {
			id += " (driver)"
		}
		row := []string{id, p.Node, pidCell(p.PID), p.State, units.FormatSize(p.MemoryLimit), units.FormatSize(int64(p.RSS)),
			strconv.Itoa(p.Done), strconv.Itoa(p.Errors), end}
		if withGPUs {
			row = slices.Insert(row, 6, procGPUCell(p))
		}
		t.add(row...)
		if width > 0 && len([]rune(end)) > 24 {
			details.add("  "+p.ID+" end", end)
		}
		if g := procGPUs(p); g != "" {
			details.add("  "+p.ID+" GPUs", g)
		}
		if p.LogPath != "" {
			details.add("  "+p.ID+" log", p.LogPath)
		}
	}
	_, _ = t.write(w, width, true) // no column of it is dropped
	if len(details.labels) > 0 {
		fmt.Fprintln(w)
		details.write(w, width)
	}
}

func pidCell(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// procEnd says how a process ended, honestly: a process ducc stopped at the
// end of its job (or on a cancel, a preemption) was stopped, whatever its
// exit code or signal; a live one has not ended.
func procEnd(p wire.ProcInfo) string {
	if !procEnded(p.State) {
		return "-"
	}
	if p.Stopped != "" {
		s := "stopped: " + p.Stopped
		if p.OOMKills > 0 {
			s += "; " + p.Reason
		}
		return s
	}
	if p.Reason != "" {
		return p.Reason
	}
	return "exit " + strconv.Itoa(p.ExitCode)
}

// procsLine counts the live processes and, when known, the wanted ones.
func procsLine(x *wire.WorkInfo) string {
	if x.Ended || x.Kind == wire.WorkReservation {
		return ""
	}
	live := 0
	for _, p := range x.Procs {
		if !procEnded(p.State) {
			live++
		}
	}
	s := units.Plural(live, "process") + " live"
	if x.Wanted > 0 {
		s += fmt.Sprintf(", %d wanted", x.Wanted)
	}
	return s
}

func itemsLine(s *wire.JobStats) string {
	line := fmt.Sprintf("%d of %d done, %d failed", s.Done, s.Total, s.Failed)
	if s.Dispatched > 0 {
		line += fmt.Sprintf(", %d in flight", s.Dispatched)
	}
	if s.Retried > 0 {
		line += fmt.Sprintf(", %d retried", s.Retried)
	}
	if s.Preempted > 0 {
		line += fmt.Sprintf(", %d re-queued from stopped processes", s.Preempted)
	}
	return line
}

func ms(v float64) string {
	return units.FormatDuration(time.Duration(v * float64(time.Millisecond)))
}

func timingLine(s *wire.JobStats) string {
	var parts []string
	if s.MeanMS > 0 {
		t := fmt.Sprintf("mean %s, min %s, max %s", ms(s.MeanMS), ms(s.MinMS), ms(s.MaxMS))
		if s.StddevMS > 0 {
			t += ", stddev " + ms(s.StddevMS)
		}
		parts = append(parts, t)
	}
	if s.InitMeanMS > 0 {
		parts = append(parts, "initialization "+ms(s.InitMeanMS)+" on average")
	}
	return strings.Join(parts, "; ")
}

// rateLine is the job's rate and, while it runs, when it should end at it.
func rateLine(x *wire.WorkInfo) string {
	s := x.Job
	if x.Ended {
		if x.StartedAt != 0 && x.EndedAt > x.StartedAt && s.Done+s.Failed > 0 {
			secs := float64(x.EndedAt-x.StartedAt) / 1000
			return fmt.Sprintf("%s items/s on average", humanRate(float64(s.Done+s.Failed)/secs))
		}
		return ""
	}
	if s.Rate <= 0 {
		return ""
	}
	line := humanRate(s.Rate) + " items/s"
	if left := s.Total - s.Done - s.Failed; left > 0 {
		eta := time.Duration(float64(left) / s.Rate * float64(time.Second))
		line += fmt.Sprintf("; ETA %s for %s left, at this rate", units.FormatDuration(eta.Round(time.Second)), units.Plural(left, "item"))
	}
	return line
}

// memoryLine says what was asked and, where it differs, the cap the
// processes get and why.
func memoryLine(x *wire.WorkInfo) string {
	asked := units.FormatSize(x.Memory)
	if x.Kind == wire.WorkReservation {
		return asked + " (a whole machine of exactly this size)"
	}
	if x.MemoryCap == 0 || x.MemoryCap == x.Memory {
		if x.Quantum > 0 {
			// Capped at what was asked, held in whole shares.
			return asked + " per process (held as " + units.Plural(int((x.Memory+x.Quantum-1)/x.Quantum), "share") + " of " + units.FormatSize(x.Quantum) + ")"
		}
		return asked + " per process"
	}
	q := units.FormatSize(x.Quantum)
	return fmt.Sprintf("asked %s; capped at %s: memory is given in shares of %s", asked, units.FormatSize(x.MemoryCap), q)
}
