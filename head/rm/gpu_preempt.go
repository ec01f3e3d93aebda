package rm

// GPUs given back (docs/scheduling.md, "GPUs"): preemption and eviction
// free a GPU work's devices as they free its memory. A victim is taken
// for the GPUs it holds while the beneficiary's GPUs do not fit yet, or
// for its memory while memory is short; stopping it frees its devices
// only once it is gone, and the space held for the beneficiary (addHold)
// keeps others from the node's memory meanwhile.

// gpuFreeable tells whether stopping processes on n could ever make room
// for w's GPUs: the node's devices are of the number and size w asks.
func (s *sched) gpuFreeable(w *work, n *node) bool {
	return gpuCanHold(s.devs(n), w.w.GPUs, w.w.GPUMemory, w.w.GPUModel)
}

// gpuVictims picks, from cands (in victim order), the processes to stop
// on n so that one process of w finds both its memory (order shares, of
// which free are free now) and its GPUs, and appends them to out; nil if
// the candidates cannot make that room. A candidate that helps neither
// is passed over, so a node's memory-only processes are not stopped for
// GPUs they do not hold.
func (s *sched) gpuVictims(w *work, n *node, order, free int, cands, out []victim) []victim {
	g := s.gpuOf(n)
	sim := nodeGPU{devs: append([]gpuDev(nil), g.devs...)}
	fits := false
	for _, v := range cands {
		if fits && free >= order {
			break
		}
		holds := len(v.p.p.GPUs) > 0 && v.p.w.asksGPU()
		if !(holds && !fits) && free >= order {
			continue
		}
		if v.cat == catOver && overBudget(v, out) {
			continue
		}
		out = append(out, v)
		free += v.p.shares
		if holds {
			sim.release(v.p)
			_, _, fits = sim.pick(w, s.gpuBuf[:0])
		}
	}
	if !fits || free < order {
		return nil
	}
	return out
}

// release takes p's devices off g (a copy of a node's GPU state that
// preemption plans on).
func (g *nodeGPU) release(p *proc) {
	for _, id := range p.p.GPUs {
		i := g.index(id)
		if i < 0 {
			continue
		}
		if d := &g.devs[i]; p.w.w.GPUs > 0 {
			d.whole = false
		} else {
			d.used = max(d.used-p.w.w.GPUMemory, 0)
		}
	}
}

// evictGPUFor is evictFor's search for work that asks GPUs: the node of
// w's pool where evicting fair-share processes of worse priority (cat)
// frees w's memory and GPUs at the least cost, and the victims there.
func (s *sched) evictGPUFor(w *work, exact bool, cat func(*proc) int) (*node, []victim) {
	return s.bestVictims(w, w.pool.nodes, nil, w.order, exact, cat, 0, nil, nil)
}
