package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ducc-project/ducc/wire"
)

// Two declared GPUs of 80 GiB (node.gpus): this machine has none, and the
// scheduler, the head and the agent cannot tell declared from found.
const (
	gpuA      = "GPU-e2e00000-0000-0000-0000-00000000000a"
	gpuB      = "GPU-e2e00000-0000-0000-0000-00000000000b"
	gpuConfig = `node:
  gpus:
    - {uuid: ` + gpuA + `, model: ducc e2e GPU, memory: 80G, minor: 0}
    - {uuid: ` + gpuB + `, model: ducc e2e GPU, memory: 80G, minor: 1}
`
)

// TestDeclaredGPUs is issue 25's check on a machine without a GPU: whole
// GPUs and slices are given out, fenced by CUDA_VISIBLE_DEVICES, waited
// for with a reason that names GPUs, and refused at once when no node can
// ever hold them.
func TestDeclaredGPUs(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root")
	}
	cfg := filepath.Join(t.TempDir(), "ducc.yaml")
	writeFile(t, cfg, gpuConfig)
	c := startCluster(t, "--config", cfg)

	// The node names its GPUs.
	out, errs, code := c.ducc("nodes")
	if code != 0 || !strings.Contains(out, "80") {
		t.Errorf("ducc nodes: exit %d: %s %s", code, out, errs)
	}
	var nodes wire.NodeList
	if out, errs, code := c.ducc("nodes", "--json"); code != 0 || json.Unmarshal([]byte(out), &nodes) != nil {
		t.Fatalf("ducc nodes --json: exit %d: %s %s", code, out, errs)
	}
	if len(nodes.Nodes) != 1 || len(nodes.Nodes[0].GPUs) != 2 {
		t.Fatalf("ducc nodes --json: want one node with 2 GPUs: %+v", nodes)
	}

	// One whole GPU: its process sees exactly one of the two.
	out, errs, code = c.ducc("run", "--gpus", "1", "--memory", "256M", "--", "sh", "-c", "echo visible=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES")
	if code != 0 {
		t.Fatalf("run --gpus 1: exit %d: %s %s", code, out, errs)
	}
	m := regexp.MustCompile(`visible=(\S*) nvidia=(\S*)`).FindStringSubmatch(out)
	if m == nil || (m[1] != gpuA && m[1] != gpuB) || m[2] != m[1] {
		t.Errorf("run --gpus 1 printed %q: want one declared UUID in both variables", out)
	}

	// Without GPUs on a node with GPUs: set, and empty.
	out, errs, code = c.ducc("run", "--memory", "256M", "--", "sh", "-c", `echo "[${CUDA_VISIBLE_DEVICES-unset}] [${NVIDIA_VISIBLE_DEVICES-unset}]"`)
	if code != 0 || strings.TrimSpace(out) != "[] []" {
		t.Errorf("run without GPUs: exit %d, printed %q (%s): want both variables set and empty", code, out, errs)
	}

	// Fenced: a process opens only its own GPU's device file. With no
	// driver here, device nodes made for the test answer ENXIO where the
	// fence lets a process through and EPERM where it does not.
	t.Run("fence", func(t *testing.T) {
		dev := filepath.Join(c.dir, "dev")
		if err := os.MkdirAll(dev, 0o755); err != nil {
			t.Fatal(err)
		}
		for minor := range 2 {
			if err := unix.Mknod(filepath.Join(dev, fmt.Sprint("nvidia", minor)), unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(minor)))); err != nil {
				t.Skipf("cannot make device nodes here: %v", err)
			}
		}
		script := `export LC_ALL=C; echo "[$CUDA_VISIBLE_DEVICES]"; for d in 0 1; do cat ` + dev + `/nvidia$d 2>&1 | head -1; done`
		out, errs, code := c.ducc("run", "--gpus", "1", "--memory", "256M", "--", "sh", "-c", script)
		if code != 0 {
			t.Fatalf("run --gpus 1: exit %d: %s %s", code, out, errs)
		}
		own, other := "nvidia0", "nvidia1"
		if strings.Contains(out, "["+gpuB+"]") {
			own, other = other, own
		}
		if !strings.Contains(out, own+": No such device or address") || !strings.Contains(out, other+": Operation not permitted") {
			t.Errorf("a process with one GPU opens its own (%s, ENXIO without a driver) and not the other (%s, EPERM):\n%s", own, other, out)
		}
		out, errs, code = c.ducc("run", "--memory", "256M", "--", "sh", "-c", script)
		if code != 0 || strings.Count(out, "Operation not permitted") != 2 {
			t.Errorf("a process without GPUs opens neither GPU (EPERM twice): exit %d:\n%s %s", code, out, errs)
		}
	})

	// Refused at once: more GPUs than any node has, a slice larger than
	// any GPU, and both kinds at once.
	for _, args := range [][]string{
		{"--gpus", "3"},
		{"--gpu-memory", "100G"},
		{"--gpus", "1", "--gpu-memory", "10G"},
	} {
		out, errs, code := c.ducc(append(append([]string{"run", "--detach", "--memory", "256M"}, args...), "--", "true")...)
		if code != 2 {
			t.Errorf("run %v: exit %d, want 2 (refused at once): %s %s", args, code, out, errs)
		}
		t.Logf("run %v: %s", args, strings.TrimSpace(errs))
	}
	if _, errs, _ := c.ducc("run", "--detach", "--gpus", "3", "--", "true"); !strings.Contains(errs, "no node has 3 GPUs") {
		t.Errorf("run --gpus 3 does not say what nodes have: %s", errs)
	}

	// Two whole GPUs held; a third waits, and says it waits for GPUs.
	held := detachAll(t, c, 2, "--gpus", "1")
	for _, id := range held {
		w := c.waitRunning(id)
		if len(w.Procs) == 0 || len(w.Procs[0].GPUs) != 1 {
			t.Errorf("work %s runs without its GPU: %+v", id, w.Procs)
		}
		if out, _, _ := c.ducc("show", id); !strings.Contains(out, w.Procs[0].GPUs[0]) || strings.Contains(out, "utilization") {
			t.Errorf("ducc show %s does not name its GPU %s, or shows a utilization without NVML:\n%s", id, w.Procs[0].GPUs[0], out)
		}
	}
	// Declared GPUs, no NVML: no utilization, '-' in the UTIL column.
	if out, errs, code := c.ducc("nodes", "--gpus"); code != 0 || !strings.Contains(out, " UTIL ") ||
		!regexp.MustCompile(`(?m)^\S+ +`+gpuA+` .* - +\S+$`).MatchString(out) {
		t.Errorf("ducc nodes --gpus: exit %d, want UTIL '-' for %s: %s %s", code, gpuA, out, errs)
	}
	if out, _, _ := c.ducc("nodes", "--json"); strings.Contains(out, `"util"`) {
		t.Errorf("ducc nodes --json has a utilization without NVML: %s", out)
	}
	if a, b := c.show(held[0]).Procs[0].GPUs[0], c.show(held[1]).Procs[0].GPUs[0]; a == b {
		t.Errorf("two whole-GPU processes hold the same GPU %s", a)
	}
	third := detachAll(t, c, 1, "--gpus", "1")[0]
	waitReason(t, c, third, wire.ReasonGPUs)
	cancelAll(t, c, append(held, third)...)

	// Slices: four of 40 GiB on two 80 GiB GPUs run at once; a fifth waits.
	slices := detachAll(t, c, 4, "--gpu-memory", "40G")
	on := map[string]int{}
	for _, id := range slices {
		w := c.waitRunning(id)
		if len(w.Procs) == 0 || len(w.Procs[0].GPUs) != 1 {
			t.Fatalf("slice %s runs without its GPU: %+v", id, w.Procs)
		}
		on[w.Procs[0].GPUs[0]]++
	}
	if on[gpuA] != 2 || on[gpuB] != 2 {
		t.Errorf("four 40 GiB slices on two 80 GiB GPUs: %v, want two on each", on)
	}
	fifth := detachAll(t, c, 1, "--gpu-memory", "40G")[0]
	waitReason(t, c, fifth, wire.ReasonGPUs)
	cancelAll(t, c, append(slices, fifth)...)
}

// detachAll starts n `ducc run --detach` processes of `sleep 600` with
// extra flags and returns their ids.
func detachAll(t *testing.T, c *cluster, n int, extra ...string) []string {
	t.Helper()
	var ids []string
	for range n {
		args := append(append([]string{"run", "--detach", "--memory", "256M"}, extra...), "--", "sleep", "600")
		out, errs, code := c.ducc(args...)
		if code != 0 {
			t.Fatalf("ducc %v: exit %d: %s %s", args, code, out, errs)
		}
		ids = append(ids, regexp.MustCompile(`\d+`).FindString(out))
	}
	return ids
}

// waitReason waits until pending work id says it waits for code.
func waitReason(t *testing.T, c *cluster, id string, code wire.ReasonCode) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		w := c.show(id)
		if w.ReasonCode == code {
			if !strings.Contains(strings.ToLower(w.Reason), "gpu") {
				t.Errorf("work %s waits for %s, but its reason does not name GPUs: %q", id, code, w.Reason)
			}
			return
		}
		if w.State == "Running" || w.Ended || time.Now().After(deadline) {
			t.Fatalf("work %s: state %s, reason %s %q; want it waiting for %s", id, w.State, w.ReasonCode, w.Reason, code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cancelAll cancels work and waits until it has ended.
func cancelAll(t *testing.T, c *cluster, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, errs, code := c.ducc("cancel", id); code != 0 {
			t.Errorf("cancel %s: exit %d: %s", id, code, errs)
		}
	}
	for _, id := range ids {
		c.waitEnd(t, id, time.Minute)
	}
}
