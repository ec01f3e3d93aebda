package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

func TestReserveAndClasses(t *testing.T) {
	c := startCluster(t)
	// The node has exactly 16 GiB: a 16G reservation gets it, an 8G one
	// never could (no promotion to a bigger machine), so it is refused at
	// once.
	out, errs, code := c.ducc("reserve", "--memory", "16G", "--wait")
	if code != 0 || !strings.Contains(out, "node n1") {
		t.Fatalf("reserve 16G: exit %d %q %q", code, out, errs)
	}
	id := strings.TrimSuffix(strings.Fields(out)[1], ":")
	out, errs, code = c.ducc("reserve", "--memory", "8G")
	if code != 2 || !strings.Contains(errs, "no node has exactly 8 GiB") || !strings.Contains(errs, "1 × 16 GiB") {
		t.Fatalf("reserve 8G: exit %d %q %q", code, out, errs)
	}
	// The reserved machine takes no other work; the reason says so.
	run, _, _ := c.ducc("run", "--detach", "--", "true")
	w := c.show(strings.TrimSpace(run))
	if w.State != "WaitingForResources" || w.Reason == "" {
		t.Errorf("run on a reserved node: %s %q", w.State, w.Reason)
	}

	out, _, code = c.ducc("classes", "--json")
	var cl wire.ClassList
	if code != 0 || json.Unmarshal([]byte(out), &cl) != nil {
		t.Fatalf("classes: %d %s", code, out)
	}
	byName := map[string]wire.ClassInfo{}
	for _, x := range cl.Classes {
		byName[x.Name] = x
	}
	for _, name := range []string{"background", "low", "normal", "high", "urgent", "fixed", "reserve"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("class %s missing from %s", name, out)
		}
	}
	if r := byName["reserve"]; r.Allocated != 16<<30 || r.Policy != "RESERVE" {
		t.Errorf("reserve class %+v", r)
	}

	// unreserve refuses other kinds, then releases; the run gets the node.
	if _, errs, code := c.ducc("unreserve", strings.TrimSpace(run)); code != 2 || !strings.Contains(errs, "not a reservation") {
		t.Errorf("unreserve of a managed reservation: %d %q", code, errs)
	}
	if _, errs, code := c.ducc("unreserve", id); code != 0 {
		t.Fatalf("unreserve: %s", errs)
	}
	if _, errs, code := c.ducc("wait", strings.TrimSpace(run)); code != 0 {
		t.Errorf("run after unreserve: exit %d %s", code, errs)
	}
	if w := c.show(id); w.Completion != "CanceledByUser" {
		t.Errorf("released reservation: %+v", w)
	}
	// As DUCC: a reservation in a FIXED_SHARE class holds its memory in
	// shares on a node, not a whole machine.
	out, errs, code = c.ducc("reserve", "--memory", "2G", "--class", "fixed", "--wait")
	if code != 0 {
		t.Fatalf("reserve in a fixed class: exit %d %q %q", code, out, errs)
	}
	fixedID := strings.Fields(out)[1]
	fixedID = strings.TrimSuffix(fixedID, ":")
	if w := c.show(fixedID); len(w.Procs) != 1 || w.Procs[0].MemoryLimit != 2<<30 {
		t.Errorf("reservation in a FIXED_SHARE class holds %+v; want one hold of 2 GiB", w.Procs)
	}
	if _, errs, code := c.ducc("reserve", "--memory", "8G", "--class", "normal"); code != 2 || !strings.Contains(errs, "RESERVE class") {
		t.Errorf("reserve in a FAIR_SHARE class: %d %q", code, errs)
	}
}

func TestAdminVaryAndReconfigure(t *testing.T) {
	c := startCluster(t)
	if out, errs, code := c.ducc("admin", "vary-off", "n1"); code != 0 || !strings.Contains(out, "n1 is VariedOff") {
		t.Fatalf("vary-off: %d %q %q", code, out, errs)
	}
	run, _, _ := c.ducc("run", "--detach", "--", "true")
	id := strings.TrimSpace(run)
	if w := c.show(id); w.State != "WaitingForResources" {
		t.Errorf("work placed on a varied-off node: %s", w.State)
	}
	if _, _, code := c.ducc("admin", "vary-on", "n1"); code != 0 {
		t.Fatal("vary-on failed")
	}
	if _, errs, code := c.ducc("wait", id); code != 0 {
		t.Errorf("run after vary-on: %d %s", code, errs)
	}
	if _, errs, code := c.ducc("admin", "quiesce", "nosuch"); code != 2 || !strings.Contains(errs, `no node "nosuch"`) {
		t.Errorf("quiesce of an unknown node: %d %q", code, errs)
	}

	// Reconfigure adds a class, through Raft: it survives a restart.
	cfg := filepath.Join(c.dir, "ducc.yaml")
	os.WriteFile(cfg, []byte(fairConfig+"    - {name: gold, policy: FIXED_SHARE, priority: 4, nodepool: default}\n"), 0o644)
	if out, errs, code := c.ducc("admin", "reconfigure", cfg); code != 0 {
		t.Fatalf("reconfigure: %d %q %q", code, out, errs)
	}
	bad := filepath.Join(c.dir, "bad.yaml")
	os.WriteFile(bad, []byte("scheduler:\n  classes:\n    - {name: x, policy: FAIR_SHARE, weight: 1, priority: 1}\n    - {name: x, policy: FAIR_SHARE, weight: 1, priority: 1}\n"), 0o644)
	if _, errs, code := c.ducc("admin", "reconfigure", bad); code != 2 || !strings.Contains(errs, "defined twice") {
		t.Errorf("bad reconfigure: %d %q", code, errs)
	}
	c.stop()
	c.start()
	if _, errs, code := c.ducc("run", "--class", "gold", "--", "true"); code != 0 {
		t.Errorf("run in the reconfigured class after a restart: %d %s", code, errs)
	}
	if _, errs, code := c.ducc("run", "--class", "urgent", "--", "true"); code != 2 || !strings.Contains(errs, "unknown class") {
		t.Errorf("a class removed by reconfigure still accepted: %d %s", code, errs)
	}
}
