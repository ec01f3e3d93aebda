package web

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// gpuRequest says what GPUs a piece of work asked for per process; ""
// when none.
func gpuRequest(w wire.WorkInfo) string {
	model := ""
	if w.GPUModel != "" {
		model = " of model " + w.GPUModel
	}
	switch {
	case w.GPUs > 0 && w.Kind == wire.WorkReservation:
		return fmt.Sprintf("a machine with at least %d GPUs%s (the reservation holds all of them)", w.GPUs, model)
	case w.GPUs > 0:
		return fmt.Sprintf("%s per process, whole, on one node%s", units.Plural(w.GPUs, "GPU"), model)
	case w.GPUMemory > 0:
		return fmt.Sprintf("a %s slice of one GPU's memory per process%s", units.FormatSize(w.GPUMemory), model)
	}
	return ""
}

// procGPUs says which GPUs a process holds (their UUIDs, or its slice of
// one) and what it used of them; "" when none.
func procGPUs(p wire.ProcInfo) string {
	if len(p.GPUs) == 0 {
		return ""
	}
	s := strings.Join(p.GPUs, ", ")
	if p.GPUSlice > 0 {
		s = units.FormatSize(p.GPUSlice) + " of " + s
	}
	var use []string
	if p.GPUMemory > 0 && p.EndedAt == 0 {
		use = append(use, "using "+units.FormatSize(p.GPUMemory))
	}
	if p.GPUUtil != nil && p.EndedAt == 0 {
		use = append(use, "utilization "+gpuUtil(p.GPUUtil))
	}
	if p.GPUMemoryPeak > 0 {
		use = append(use, "peak "+units.FormatSize(p.GPUMemoryPeak))
	}
	if p.GPUSeconds > 0 {
		use = append(use, "GPU time "+units.FormatDuration(time.Duration(p.GPUSeconds*float64(time.Second)).Round(time.Second)))
	}
	if len(use) > 0 {
		s += " · " + strings.Join(use, " · ")
	}
	return s
}

// gpuSummary is a node's GPUs for the machines page: how many of what
// memory, how many are given out (whole or in slices), the memory given
// out and used; "" when it has none.
func gpuSummary(n wire.NodeInfo) string {
	if len(n.GPUs) == 0 {
		return ""
	}
	count := map[int64]int{}
	var sizes []int64
	inUse := 0
	var alloc, used int64
	for _, g := range n.GPUs {
		if count[g.Memory] == 0 {
			sizes = append(sizes, g.Memory)
		}
		count[g.Memory]++
		if g.Allocated > 0 || len(g.Holders) > 0 {
			inUse++
		}
		alloc += g.Allocated
		used += g.Used
	}
	slices.Sort(sizes)
	parts := make([]string, len(sizes))
	for i, sz := range sizes {
		parts[i] = fmt.Sprintf("%d × %s", count[sz], units.FormatSize(sz))
	}
	s := fmt.Sprintf("%s · %d in use", strings.Join(parts, " + "), inUse)
	if alloc > 0 {
		s += " · " + units.FormatSize(alloc) + " allocated"
	}
	if used > 0 {
		s += " · " + units.FormatSize(used) + " used"
	}
	return s
}

// gpuUtil is a utilization in percent, "87%"; "—" where NVML does not
// give it.
func gpuUtil(p *int) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%d%%", *p)
}

// holderWork is the work id of a process id ("21.3" → "21").
func holderWork(proc string) string {
	w, _, _ := strings.Cut(proc, ".")
	return w
}

// anyNodeGPUs reports whether a node has GPUs.
func anyNodeGPUs(nodes []wire.NodeInfo) bool {
	return slices.ContainsFunc(nodes, func(n wire.NodeInfo) bool { return len(n.GPUs) > 0 })
}
