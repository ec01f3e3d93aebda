package head

import (
	"slices"
	"strings"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// reasonCodes maps the scheduler's wait codes to the reason codes users
// see (wire.ReasonCodes).
var reasonCodes = map[rm.WaitCode]wire.ReasonCode{
	rm.WaitResources:      wire.ReasonResources,
	rm.WaitPriority:       wire.ReasonPriority,
	rm.WaitFairShare:      wire.ReasonFairShare,
	rm.WaitAtShare:        wire.ReasonAtFairShare,
	rm.WaitOverShare:      wire.ReasonOverShare,
	rm.WaitPreempting:     wire.ReasonPreempting,
	rm.WaitShrinking:      wire.ReasonShrinking,
	rm.WaitLimit:          wire.ReasonLimit,
	rm.WaitNoFit:          wire.ReasonNoFit,
	rm.WaitNoNodes:        wire.ReasonNoNodes,
	rm.WaitBadClass:       wire.ReasonBadClass,
	rm.HeldPrediction:     wire.ReasonPrediction,
	rm.HeldInitialization: wire.ReasonInitCap,
	rm.HeldDoubling:       wire.ReasonDoubling,
	rm.HeldInitFailures:   wire.ReasonInitFailures,
	rm.WaitGPUs:           wire.ReasonGPUs,
}

// reasonCode is the reason code of c; codes the scheduler adds before
// this table learns them read as Resources, the most general.
func reasonCode(c rm.WaitCode) wire.ReasonCode {
	if r, ok := reasonCodes[c]; ok {
		return r
	}
	return wire.ReasonResources
}

// waiting fills what the scheduler said about unended work w: why it
// waits (Reason, ReasonCode) when nothing of it runs, or why it runs fewer
// processes than it wants or could use (Held, HeldCode) when something
// does. "At fair share" is no reason to wait: it is only said of running
// work, in Held.
func (h *Head) waiting(w *state.Work, info *wire.WorkInfo) {
	wt, ok := h.orch.Waiting(w.ID)
	live := len(w.Live())
	if ok {
		held := ""
		if wt.HeldCode != rm.WaitNone {
			held = wt.Held.Reason()
		}
		info.Wanted = max(wt.Want, live)
		switch {
		case live == 0 && wt.Reason != "":
			info.Reason, info.ReasonCode = wt.Reason, reasonCode(wt.Code)
		case wt.Code == rm.WaitShrinking:
			info.Reason, info.ReasonCode = wt.Reason, wire.ReasonShrinking
		case wt.Reason != "":
			info.Held, info.HeldCode = wt.Reason, reasonCode(wt.Code)
			if held != "" {
				info.Held += "; " + held
			}
		case held != "":
			info.Held, info.HeldCode = held, reasonCode(wt.HeldCode)
		}
		if live == 0 && info.Reason == "" && held != "" {
			info.Reason, info.ReasonCode = held, reasonCode(wt.HeldCode)
			info.Held, info.HeldCode = "", ""
		}
	}
	switch {
	case w.Canceling:
		info.Reason, info.ReasonCode = "stopping: "+cancelText(w), wire.ReasonStopping
	case w.State == state.StateWaitingForServices:
		info.Reason, info.ReasonCode = h.sm.Waiting(w.ID), wire.ReasonServices
		if info.Reason == "" {
			info.Reason = "waiting for services: " + strings.Join(w.Deps, ", ")
		}
	case w.State == state.StateWaitingForDriver && info.ReasonCode == "":
		info.Reason, info.ReasonCode = "placing the driver process", wire.ReasonDriver
		if d := w.Driver(); d != nil {
			info.Reason = "driver process " + d.ID + " is initializing"
		}
	case info.ReasonCode != "":
	case w.State == state.StateReceived:
		info.Reason, info.ReasonCode = "receiving its work items", wire.ReasonReceiving
	case live == 0 && w.State == state.StateWaitingForResources:
		info.Reason, info.ReasonCode = "waiting for the next scheduling cycle", wire.ReasonScheduling
	}
}

// memoryCap fills the share quantum of w's nodepool and the memory cap
// each process of w gets: the memory asked (the scheduler holds it in
// whole shares of the quantum, but caps the process at what was asked:
// orch.planCommands).
func (h *Head) memoryCap(w *state.Work, info *wire.WorkInfo) {
	sc := h.sched()
	pool := ""
	if c, err := sc.Class(w.Class); err == nil {
		pool = c.Nodepool
	}
	q := sc.Quantum(pool)
	if q <= 0 {
		return
	}
	info.Quantum = q
	info.MemoryCap = w.Memory
}

// liveNodes lists, once each and in order of first use, the nodes of w's
// live processes, or of all its processes when none lives.
func liveNodes(w *state.Work) []string {
	var out []string
	anyLive := len(w.Live()) > 0
	for _, p := range w.Procs {
		if (anyLive && p.Ended()) || p.Node == "" {
			continue
		}
		if !slices.Contains(out, p.Node) {
			out = append(out, p.Node)
		}
	}
	return out
}

// stopText says why ducc stopped process p, when it did and the stop is
// no failure of the work: the process's exit code or signal is then
// ducc's doing.
func stopText(w *state.Work, p *state.Proc) string {
	if !p.Stop || p.StopCounts || p.StopReason == "" {
		return ""
	}
	if p.StopReason == "work completed" {
		return string(w.Kind) + " ended"
	}
	return p.StopReason
}

func cancelText(w *state.Work) string {
	if w.CancelBy == "" {
		return "canceled"
	}
	return "canceled by " + w.CancelBy
}
