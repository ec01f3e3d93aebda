package rm

import (
	"reflect"
	"testing"
	"time"
)

// modelNodes are a node "a01" with two 80 GiB GPUs of model H100 and a
// node "b01" with two 40 GiB GPUs of model A100.
func modelNodes() []Node {
	a := gpuNodes("a", 1, 64*GiB, 2, 80*GiB)
	b := gpuNodes("b", 1, 64*GiB, 2, 40*GiB)
	for i := range a[0].GPUs {
		a[0].GPUs[i].Model = "H100"
	}
	for i := range b[0].GPUs {
		b[0].GPUs[i].Model = "A100"
	}
	return append(a, b...)
}

// withModel is w asking GPUs of model.
func withModel(w Work, model string) Work {
	w.GPUModel = model
	return w
}

func TestGPUModelPlacement(t *testing.T) {
	tests := []struct {
		name string
		work []Work
		gpus map[uint64][][]string
		pend map[uint64]WaitCode
		has  map[uint64][]string
	}{
		{
			name: "a model takes only its devices, though others fit better",
			work: []Work{withModel(run(1, "a", GiB, 1, 0), "A100"), withModel(run(2, "a", GiB, 0, 30*GiB), "H100")},
			gpus: map[uint64][][]string{1: {{"b01-g0"}}, 2: {{"a01-g0"}}},
		},
		{
			name: "a third whole GPU of a model waits though another model is free",
			work: []Work{withModel(run(1, "a", GiB, 1, 0), "A100"), withModel(run(2, "a", GiB, 1, 0), "A100"),
				withModel(run(3, "a", GiB, 1, 0), "A100")},
			gpus: map[uint64][][]string{1: {{"b01-g0"}}, 2: {{"b01-g1"}}},
			pend: map[uint64]WaitCode{3: WaitGPUs},
			has:  map[uint64][]string{3: {"b01 0 of 2 A100 GPUs free"}},
		},
		{
			name: "a slice bigger than every device of the model never fits",
			work: []Work{withModel(run(1, "a", GiB, 0, 60*GiB), "A100")},
			pend: map[uint64]WaitCode{1: WaitNoFit},
			has:  map[uint64][]string{1: {`of model "A100"`}},
		},
		{
			name: "an unknown model names the models",
			work: []Work{withModel(run(1, "a", GiB, 1, 0), "V100")},
			pend: map[uint64]WaitCode{1: WaitNoFit},
			has:  map[uint64][]string{1: {`no GPU is of model "V100"; the models are "A100", "H100"`}},
		},
		{
			name: "no model takes any device",
			work: []Work{run(1, "a", GiB, 2, 0), run(2, "a", GiB, 2, 0)},
			gpus: map[uint64][][]string{1: {{"a01-g0", "a01-g1"}}, 2: {{"b01-g0", "b01-g1"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Now: t0.Add(time.Hour), Config: flat(DefaultConfig()), Nodes: modelNodes(), Work: tc.work}
			p := Schedule(in)
			checkPlan(t, in, p)
			checkGPUs(t, in, p)
			got := startGPUs(p)
			for id, want := range tc.gpus {
				if !reflect.DeepEqual(got[id], want) {
					t.Errorf("work %d got GPUs %v, want %v", id, got[id], want)
				}
			}
			checkPending(t, p, tc.pend, tc.has)
		})
	}
}

func TestGPUModelReservation(t *testing.T) {
	res := func(id uint64, k int, model string) Work {
		return Work{ID: id, Kind: Reservation, User: "a", Class: "reserve", Memory: 64 * GiB, SubmitTime: t0,
			GPUs: k, GPUModel: model}
	}
	tests := []struct {
		name string
		w    Work
		node string // "" none
	}{
		{"two of a model", res(1, 2, "A100"), "b01"},
		{"any two", res(1, 2, ""), "a01"},
		{"three of none", res(1, 3, ""), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Now: t0.Add(time.Hour), Config: flat(DefaultConfig()), Nodes: modelNodes(), Work: []Work{tc.w}}
			p := Schedule(in)
			checkPlan(t, in, p)
			checkGPUs(t, in, p)
			switch {
			case tc.node == "" && len(p.Starts) > 0:
				t.Fatalf("started %+v", p.Starts)
			case tc.node != "" && (len(p.Starts) != 1 || p.Starts[0].Node != tc.node):
				t.Fatalf("starts %+v, want one on %s", p.Starts, tc.node)
			case tc.node != "" && len(p.Starts[0].GPUs) != 2:
				t.Fatalf("reservation holds GPUs %v, want both of %s", p.Starts[0].GPUs, tc.node)
			}
		})
	}
}

func TestGPUFitModel(t *testing.T) {
	tests := []struct {
		name  string
		k     int
		mem   int64
		model string
		want  string
	}{
		{"any model", 2, 0, "", ""},
		{"a model that has two", 2, 0, "H100", ""},
		{"three of a model", 3, 0, "H100", `no node has 3 GPUs of model "H100"; nodes have 2 × 80 GiB GPUs (1 node), no GPUs (1 node)`},
		{"a slice of a model", 0, 40 * GiB, "A100", ""},
		{"a slice too big for the model", 0, 60 * GiB, "A100",
			`no GPU has 60 GiB of memory for the slice of model "A100" (the largest has 40 GiB); nodes have 2 × 40 GiB GPUs (1 node), no GPUs (1 node)`},
		{"an unknown model", 1, 0, "V100", `no GPU is of model "V100"; the models are "A100", "H100"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GPUFitModel(tc.k, tc.mem, tc.model, modelNodes()); got != tc.want {
				t.Errorf("GPUFitModel(%d, %d, %q) = %q\nwant %q", tc.k, tc.mem, tc.model, got, tc.want)
			}
		})
	}
}
