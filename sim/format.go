package sim

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ducc-project/ducc/units"
)

// WriteTable writes a human summary of r.
func WriteTable(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	where := "in a separate process (head figures are the head's alone)"
	if r.FakesInProcess {
		where = "in the head's process (head figures include the fakes)"
	}
	if r.SubscribeHeartbeats {
		where += ", every fake host subscribed to heartbeats"
	}
	join := fmt.Sprintf("%.1f s", r.JoinSeconds)
	if r.JoinSeconds < 0 {
		join = "not all nodes joined"
	}
	if r.Heads > 1 {
		fmt.Fprintf(tw, "head candidates\t%d in this process (head figures are theirs together)\n", r.Heads)
	}
	fmt.Fprintf(tw, "simulated nodes\t%d on %d libp2p hosts, heartbeat %gs, fakes %s\n", r.Nodes, r.FakeHosts, r.HeartbeatSec, where)
	if r.NodeGPUs > 0 {
		ask := "none"
		switch {
		case r.WorkGPUs > 0:
			ask = units.Plural(r.WorkGPUs, "whole GPU")
		case r.WorkGPUMemory > 0:
			ask = "a " + units.FormatSize(r.WorkGPUMemory) + " slice of one GPU"
		}
		fmt.Fprintf(tw, "GPUs\t%d × %s per node; each piece of work asks %s\n", r.NodeGPUs, units.FormatSize(r.NodeGPUMemory), ask)
	}
	fmt.Fprintf(tw, "join\t%s; nodes up at end %d, fewest seen %d\n", join, r.NodesUp, r.NodesUpMin)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "window\tseconds\thead CPU (cores)\thead RSS MiB\tGo heap MiB\theartbeats/s\thb loop busy\thb lag p50/p99 ms\tpushes/s\tpush errors\tcycles\tcycle mean ms")
	row := func(name string, p Phase) {
		fmt.Fprintf(tw, "%s\t%.1f\t%.3f\t%.0f\t%.0f\t%.0f\t%.0f%%\t%.0f / %.0f\t%.0f\t%d\t%d\t%.2f\n", name, p.Seconds, p.HeadCPU,
			p.HeadRSSMiB, p.HeadHeapMiB, p.Heartbeats, p.HeartbeatBusy*100, p.HeartbeatLagP50MS, p.HeartbeatLagP99MS,
			p.Pushes, p.PushErrors, p.Cycles, p.CycleMeanMS)
	}
	row("idle", r.Idle)
	if r.Work.Submitted+r.Work.SubmitErrors > 0 {
		row("submit", r.Submit)
		row("busy", r.Busy)
	}
	fmt.Fprintln(tw)
	if wk := r.Work; wk.Submitted+wk.SubmitErrors > 0 {
		fmt.Fprintf(tw, "work\t%d managed reservations submitted in %.2f s (%s%s)\n", wk.Submitted, wk.SubmitSeconds, units.Plural(wk.SubmitErrors, "error"), firstErr(wk.FirstError))
		fmt.Fprintf(tw, "submit → Running\tp50 %.0f ms, p99 %.0f ms, max %.0f ms; all %d running after %.2f s; head lists %d running at the end\n",
			wk.LatencyP50MS, wk.LatencyP99MS, wk.LatencyMaxMS, wk.Running, wk.AllRunningSeconds, wk.HeadRunning)
	}
	if fo := r.Failover; fo != nil {
		writeFailover(tw, fo)
	}
	fmt.Fprintf(tw, "head peak RSS\t%.0f MiB\n", r.HeadPeakRSSMiB)
	f := r.Fakes
	fmt.Fprintf(tw, "fakes\t%.1f CPU s, peak RSS %.0f MiB; %d heartbeats sent (%d failed), %d pushes received, %d reports (%d failed), %d processes started, %d ended\n",
		f.CPUSeconds, f.PeakRSSMiB, f.HeartbeatsSent, f.PublishErrors, f.Pushes, f.Reports, f.ReportErrors, f.Started, f.Ended)
	return tw.Flush()
}

func firstErr(s string) string {
	if s == "" {
		return ""
	}
	return "; first: " + s
}

func writeFailover(w io.Writer, f *FailoverResult) {
	verdict := "held: the new head declared no node down, wrote nothing off"
	if !f.Held() {
		verdict = "the new head LOST NODES OR WORK"
	}
	if f.NewHeadSeconds < 0 {
		fmt.Fprintf(w, "failover\t%s stopped; no new head within a minute\n", f.OldHead)
		return
	}
	allUp := fmt.Sprintf("every node up at the new head %.1f s after the stop", f.AllUpSeconds)
	if f.AllUpSeconds < 0 {
		allUp = "not every node came up at the new head"
	}
	fmt.Fprintf(w, "failover\t%s: %s stopped, %s leads %.2f s later; %s; watched %.0f s\n",
		verdict, f.OldHead, f.NewHead, f.NewHeadSeconds, allUp, f.WatchedSeconds)
	if f.Elections > 0 {
		fmt.Fprintf(w, "more elections\t%d while watched\n", f.Elections)
	}
	fmt.Fprintf(w, "after the failover\t%d nodes declared down, %d written off, %d processes stopped, head lists %d running; fewest up %d\n",
		f.NodesDown, f.WrittenOff, f.Stopped, f.HeadRunning, f.NodesUpMin)
	fmt.Fprintf(w, "new head\t%.0f heartbeats/s, lag p50 %.0f ms, p99 %.0f ms, max %.0f ms; %.3f cores\n",
		f.Heartbeats, f.HeartbeatLagP50MS, f.HeartbeatLagP99MS, f.HeartbeatLagMaxMS, f.HeadCPU)
}
