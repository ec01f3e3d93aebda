package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// gpuRequest is the work's GPU request for 'ducc show': its label
// ("GPUs" or "GPU memory") and what was asked; "" when it asked for none.
func gpuRequest(x *wire.WorkInfo) (label, value string) {
	model := ""
	if x.GPUModel != "" {
		model = " (model " + x.GPUModel + ")"
	}
	per := "per process"
	if x.Kind == wire.WorkJob {
		per = "per job process"
	}
	switch {
	case x.GPUs > 0 && x.Kind == wire.WorkReservation:
		return "GPUs", fmt.Sprintf("a machine with at least %d%s; the reservation holds all of its GPUs", x.GPUs, model)
	case x.GPUs > 0:
		return "GPUs", fmt.Sprintf("%d %s, whole, on one node%s", x.GPUs, per, model)
	case x.GPUMemory > 0:
		return "GPU memory", fmt.Sprintf("%s slice of one GPU %s%s", units.FormatSize(x.GPUMemory), per, model)
	}
	return "", ""
}

// gpuUse sums what the work's processes used of their GPUs for 'ducc
// show': the GPU time held and the most GPU memory one process used; ""
// when none said.
func gpuUse(x *wire.WorkInfo) string {
	var secs float64
	var peak int64
	for _, p := range x.Procs {
		secs += p.GPUSeconds
		peak = max(peak, p.GPUMemoryPeak, p.GPUMemory)
	}
	var parts []string
	if secs > 0 {
		parts = append(parts, gpuTime(secs)+" of GPU time held")
	}
	if peak > 0 {
		parts = append(parts, "peak "+units.FormatSize(peak)+" of GPU memory in one process")
	}
	return strings.Join(parts, "; ")
}

// gpuTime writes GPU-seconds as a duration: "1h30m" (a GPU held 90
// minutes, or two for 45), "2.50s".
func gpuTime(s float64) string {
	if s < 10 {
		return strings.TrimSuffix(strconv.FormatFloat(s, 'f', 2, 64), ".00") + "s"
	}
	return units.FormatDuration(time.Duration(s * float64(time.Second)).Round(time.Second))
}

// procGPUCell is a process's GPUs in the process table: how many whole
// GPUs it holds, or the size of its slice; "-" for none.
func procGPUCell(p wire.ProcInfo) string {
	switch {
	case len(p.GPUs) == 0:
		return "-"
	case p.GPUSlice > 0:
		return shortSize(p.GPUSlice)
	}
	return strconv.Itoa(len(p.GPUs))
}

// procGPUs says which GPUs a process holds and what it used of them, for
// the lines under the process table; "" when it holds none.
func procGPUs(p wire.ProcInfo) string {
	if len(p.GPUs) == 0 {
		return ""
	}
	s := strings.Join(p.GPUs, ", ")
	if p.GPUSlice > 0 {
		s = units.FormatSize(p.GPUSlice) + " of " + s
	}
	ended := procEnded(p.State)
	if p.GPUMemory > 0 && !ended {
		s += "; using " + units.FormatSize(p.GPUMemory)
	}
	if p.GPUUtil != nil && !ended {
		s += "; utilization " + utilCell(p.GPUUtil)
	}
	if p.GPUMemoryPeak > 0 {
		s += "; peak " + units.FormatSize(p.GPUMemoryPeak)
	}
	if p.GPUSeconds > 0 {
		s += "; GPU time " + gpuTime(p.GPUSeconds)
	}
	return s
}

// anyProcGPUs reports whether a process of the work holds GPUs.
func anyProcGPUs(x *wire.WorkInfo) bool {
	return slices.ContainsFunc(x.Procs, func(p wire.ProcInfo) bool { return len(p.GPUs) > 0 })
}

// gpuInUse reports whether a device is given out, whole or in slices.
func gpuInUse(g wire.NodeGPU) bool { return g.Allocated > 0 || len(g.Holders) > 0 }

// nodeGPUCell is a node's GPUs in 'ducc nodes': how many of what memory,
// and how many are in use, "2×80G (1 in use)"; "-" for none.
func nodeGPUCell(n wire.NodeInfo) string {
	if len(n.GPUs) == 0 {
		return "-"
	}
	var sizes []int64
	count := map[int64]int{}
	inUse := 0
	for _, g := range n.GPUs {
		if count[g.Memory] == 0 {
			sizes = append(sizes, g.Memory)
		}
		count[g.Memory]++
		if gpuInUse(g) {
			inUse++
		}
	}
	slices.Sort(sizes)
	parts := make([]string, len(sizes))
	for i, sz := range sizes {
		parts[i] = fmt.Sprintf("%d×%s", count[sz], shortSize(sz))
	}
	return fmt.Sprintf("%s (%d in use)", strings.Join(parts, "+"), inUse)
}

// anyNodeGPUs reports whether a node has GPUs.
func anyNodeGPUs(nodes []wire.NodeInfo) bool {
	return slices.ContainsFunc(nodes, func(n wire.NodeInfo) bool { return len(n.GPUs) > 0 })
}

// utilCell is a utilization in percent, "87%"; "-" where it is unknown.
func utilCell(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p) + "%"
}

// gpuTable is 'ducc nodes --gpus': one row per GPU, with what is given
// out of it (ALLOC), the memory in use (USED) and its utilization (UTIL,
// "-" where NVML does not give it). UUIDs are never cut; to fit a
// terminal the holders, the model and the node name are cut, then the
// holders, UTIL and USED left out.
func gpuTable(nodes []wire.NodeInfo) *table {
	t := &table{
		heads:  []string{"NODE", "GPU", "MODEL", "MEMORY", "ALLOC", "USED", "UTIL", "HOLDERS"},
		shrink: []int{4, 0, 2, 0, 0, 0, 0, 1},
		drop:   []int{0, 0, 0, 0, 0, 6, 5, 3},
	}
	for _, n := range nodes {
		for _, g := range n.GPUs {
			uuid := g.UUID
			if g.Parent != "" {
				uuid += " (MIG)"
			}
			used := "-"
			if g.Used > 0 {
				used = shortSize(g.Used)
			}
			alloc := "-"
			if g.Allocated > 0 {
				alloc = shortSize(g.Allocated)
			}
			t.add(n.Name, uuid, g.Model, shortSize(g.Memory), alloc, used, utilCell(g.Util), dash(strings.Join(g.Holders, ",")))
		}
	}
	return t
}

// gpuDiscoveryLines say per node how its agent found its GPUs, or why it
// has none.
func gpuDiscoveryLines(nodes []wire.NodeInfo) []string {
	var out []string
	for _, n := range nodes {
		if n.GPUDiscovery != "" {
			out = append(out, n.Name+": "+n.GPUDiscovery)
		}
	}
	return out
}

// gpuTimeShort writes GPU-seconds in at most four characters for 'ducc
// history': "-", "<1m", "45m", "1.5h", "278h", "417d", "32y".
func gpuTimeShort(s float64) string {
	h := s / 3600
	switch {
	case s <= 0:
		return "-"
	case s < 60:
		return "<1m"
	case h < 1:
		return fmt.Sprintf("%.0fm", s/60)
	case h < 10:
		return strings.TrimSuffix(strconv.FormatFloat(h, 'f', 1, 64), ".0") + "h"
	case h < 1000:
		return strconv.FormatFloat(h, 'f', 0, 64) + "h"
	case h < 1000*24:
		return strconv.FormatFloat(h/24, 'f', 0, 64) + "d"
	}
	return strconv.FormatFloat(h/24/365, 'f', 0, 64) + "y"
}

// historyHasGPUs reports whether a record of the list used GPUs.
func historyHasGPUs(recs []wire.HistoryRecord) bool {
	return slices.ContainsFunc(recs, func(r wire.HistoryRecord) bool {
		return r.GPUs > 0 || r.GPUMemory > 0 || r.GPUSeconds > 0
	})
}

// jobGPUCell is the GPU request per process in 'ducc jobs -o gpus':
// whole GPUs ("2") or a slice of one's memory ("20G"); "-" for none.
func jobGPUCell(x *wire.WorkInfo) string {
	switch {
	case x.GPUs > 0:
		return strconv.Itoa(x.GPUs)
	case x.GPUMemory > 0:
		return shortSize(x.GPUMemory)
	}
	return "-"
}
