package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// TestRunMemoryCapIsWhatWasAsked: 'ducc run --memory 256M' of a process
// that takes 600 MiB is killed at 256 MiB (it held a 1 GiB share and ran
// with a 1 GiB cap, exit 0); 'ducc show' and the process's record say
// 256 MiB, and the process's log ends with a line that says the memory cap
// killed it (issue 26, items 2 and 10).
func TestRunMemoryCapIsWhatWasAsked(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root for cgroups")
	}
	py := needPython(t)
	c := startCluster(t)
	out, errs, code := c.ducc("run", "--memory", "256M", "--", py, "-c", "b = bytearray(600 << 20); print('survived')")
	m := regexp.MustCompile(`(?m)^ducc: (\d+) (.*)$`).FindStringSubmatch(errs)
	if code != 137 || m == nil || m[2] != "exceeded its memory limit of 256 MiB" {
		t.Fatalf("ducc run --memory 256M of 600 MiB: exit %d, want 137 and \"exceeded its memory limit of 256 MiB\"\nstdout: %s\nstderr: %s", code, out, errs)
	}
	id := m[1]
	w := c.show(id)
	if w.MemoryCap != 256<<20 || len(w.Procs) != 1 || w.Procs[0].MemoryLimit != 256<<20 || w.Procs[0].OOMKills != 1 {
		t.Errorf("show: memory cap %d, processes %+v; want one killed at 256 MiB", w.MemoryCap, w.Procs)
	}
	text, _, _ := c.ducc("show", id)
	if flat := strings.Join(strings.Fields(text), " "); !strings.Contains(flat, "256 MiB per process (held as 1 share of 1 GiB)") {
		t.Errorf("ducc show does not say the cap is the 256 MiB asked:\n%s", text)
	}
	log, lerrs, lcode := c.ducc("logs", id)
	want := "ducc: process " + id + ".1 was killed by the OOM killer: it exceeded its memory limit of 256 MiB\n"
	if lcode != 0 || !strings.HasSuffix(log, want) {
		t.Errorf("ducc logs %s: exit %d, stdout %q (stderr %q); want it to end with %q", id, lcode, log, lerrs, want)
	}
}
