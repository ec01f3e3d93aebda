package rm

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []string{"background", "low", "normal", "high", "urgent", "fixed", "reserve"}
	if got := c.classNames(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("classes %v", got)
	}
	if c.ShareQuantum != units.Size(GiB) || c.MinInterval.D() != 5*time.Millisecond || c.Preemption.KillWait.D() != 15*time.Second {
		t.Fatalf("defaults %+v", c)
	}
	for fam, name := range map[string]string{FairShare: "normal", FixedShare: "fixed", Reserve: "reserve"} {
		if cl, err := c.DefaultClass(fam); err != nil || cl.Name != name {
			t.Errorf("DefaultClass(%s) = %v, %v", fam, cl, err)
		}
	}
	_, err := c.Class("hgih")
	if err == nil || err.Error() != `unknown class "hgih"; classes are: background, low, normal, high, urgent, fixed, reserve` {
		t.Fatalf("Class error %v", err)
	}
}

func TestParseConfigFull(t *testing.T) {
	c := mustConfig(t, `
scheduler:
  share_quantum: 2G
  default_memory: 8G
  global_allotment: 100G
  cycle: 2s
  min_interval: 10ms
  fragmentation_threshold: 4
  preemption: {observe_only: true, interval: 5s, kill_wait: 30s, max_per_round: 20%, natural_termination_factor: 0.5, deadzone: 5%, min_runtime: 1m}
  nodepools:
    - name: default
      nodes: "*"
      share_quantum: 4G
      pools:
        - {name: gpu, nodes: [gpu1, gpu2], search_order: 10}
  placement:
    - {groups: [ml], class: high}
  classes:
    - {name: normal, policy: FAIR_SHARE, priority: 10, weight: 100, default: true, guaranteed: 10G, max: 1T,
       submit_acl: "alice,bob ml", limits: [{user: alice, max_jobs: 2}, {group: ml, max_memory: 64G}]}
    - {name: high, policy: FAIR_SHARE, priority: 10, weight: 200, nodepool: gpu, expand_by_doubling: false, use_prediction: false, prediction_fudge: 30s, initialization_cap: 2}
    - {name: fixed, policy: FIXED_SHARE, priority: 5, default: true, max_allotment: 32G, admin_acl: "root"}
`)
	if c.Quantum("gpu") != 4*GiB || c.Quantum("default") != 4*GiB || c.Preemption.MaxPerRound != 0.2 || !c.Preemption.ObserveOnly {
		t.Fatalf("parsed %+v", c)
	}
	hi, _ := c.Class("high")
	if *hi.ExpandByDoubling || *hi.UsePrediction || hi.InitializationCap != 2 || hi.PredictionFudge.D() != 30*time.Second {
		t.Fatalf("high %+v", hi)
	}
	if cl, err := c.ResolveClass("zed", []string{"ml"}, "", Job); err != nil || cl.Name != "high" {
		t.Fatalf("placement rule: %v %v", cl, err)
	}
	if cl, err := c.ResolveClass("zed", nil, "", Service); err != nil || cl.Name != "fixed" {
		t.Fatalf("service default: %v %v", cl, err)
	}
	// As in DUCC: a reservation may use a FIXED_SHARE class and a job a
	// RESERVE class; a service may not use a RESERVE class.
	if cl, err := c.ResolveClass("zed", nil, "fixed", Reservation); err != nil || cl.Name != "fixed" {
		t.Fatalf("reservation in a FIXED_SHARE class: %v %v", cl, err)
	}
	if _, err := c.ResolveClass("zed", nil, "reserve", Service); err == nil {
		t.Fatal("service accepted a RESERVE class")
	}
	// ACLs and limits.
	if err := c.CheckSubmit("carol", nil, "normal", GiB, Usage{}); err == nil || !strings.Contains(err.Error(), "may not submit") {
		t.Fatalf("acl: %v", err)
	}
	if err := c.CheckSubmit("carol", []string{"ml"}, "normal", GiB, Usage{}); err != nil {
		t.Fatalf("group acl: %v", err)
	}
	if err := c.CheckSubmit("alice", nil, "normal", GiB, Usage{User: Tally{Jobs: 2}}); err == nil || !strings.Contains(err.Error(), "2 of at most 2 jobs") {
		t.Fatalf("max_jobs: %v", err)
	}
	err := c.CheckSubmit("bob", []string{"ml"}, "normal", 8*GiB, Usage{Groups: map[string]Tally{"ml": {Memory: 60 * GiB}}})
	if err == nil || !strings.Contains(err.Error(), "group ml") {
		t.Fatalf("max_memory: %v", err)
	}
	if !c.IsClassAdmin("root", nil, "fixed") || c.IsClassAdmin("alice", nil, "fixed") {
		t.Fatal("admin_acl")
	}
	if err := c.CheckSubmit("x", nil, "hgih", GiB, Usage{}); err == nil || !strings.Contains(err.Error(), "classes are: normal, high, fixed") {
		t.Fatalf("unknown class: %v", err)
	}
}

func TestParseConfigEmptyAndUnknownKeys(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil || len(c.Classes) != 7 {
		t.Fatalf("empty config: %v", err)
	}
	for _, y := range []string{
		"share_quantum: 1G\nshare_qantum: 2G\n",
		"classes:\n  - {name: a, policy: FAIR_SHARE, wieght: 3}\n",
		"preemption: {kil_wait: 3s}\n",
		"scheduler:\n  bogus: 1\n",
		"share_quantum: lots\n",
		"cycle: 3\n",
		"preemption: {max_per_round: ten}\n",
	} {
		if _, err := ParseConfig([]byte(y)); err == nil {
			t.Errorf("accepted %q", y)
		}
	}
}

func TestValidateReportsEveryMistake(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want string
	}{
		"duplicate class":      {`classes: [{name: a, policy: FAIR_SHARE, default: true}, {name: a, policy: FAIR_SHARE}]`, `class "a" is defined twice`},
		"duplicate pool":       {"nodepools: [{name: p, nodes: \"*\", pools: [{name: p, nodes: x1}]}]", `nodepool "p" is defined twice`},
		"overlapping pools":    {"nodepools: [{name: a, nodes: \"*\"}, {name: b, nodes: \"gpu*\"}]", `nodepools "a" and "b" overlap`},
		"overlapping lists":    {"nodepools: [{name: a, nodes: [n1, n2]}, {name: b, nodes: [n2]}]", `both list "n2"`},
		"glob overlap":         {"nodepools: [{name: a, nodes: \"gpu*\"}, {name: b, nodes: [gpu7]}]", `"gpu*" matches "gpu7"`},
		"two defaults":         {`classes: [{name: a, policy: FAIR_SHARE, default: true}, {name: b, policy: FAIR_SHARE, default: true}]`, `keep default: true on only one`},
		"mixed priority":       {`classes: [{name: a, policy: FAIR_SHARE, priority: 3}, {name: b, policy: FIXED_SHARE, priority: 3}]`, `priority 3 mixes policies`},
		"weight on fixed":      {`classes: [{name: f, policy: FIXED_SHARE, weight: 5}]`, `weight only applies to FAIR_SHARE`},
		"unknown pool":         {`classes: [{name: a, policy: FAIR_SHARE, nodepool: gpu}]`, `unknown nodepool "gpu"; nodepools are: default`},
		"bad policy":           {`classes: [{name: a, policy: FAIR}]`, `unknown policy "FAIR"`},
		"no policy":            {`classes: [{name: a}]`, `has no policy`},
		"guaranteed over max":  {`classes: [{name: a, policy: FAIR_SHARE, guaranteed: 10G, max: 5G}]`, `raise max or lower guaranteed`},
		"allotment on fair":    {`classes: [{name: a, policy: FAIR_SHARE, max_allotment: 5G}]`, `allotments only apply`},
		"nested quantum":       {"nodepools: [{name: a, nodes: \"*\", pools: [{name: b, nodes: b1, share_quantum: 2G}]}]", `only top-level pools may set it`},
		"child outside parent": {"nodepools: [{name: a, nodes: \"a*\", pools: [{name: b, nodes: [x1]}]}]", `not in its parent pool`},
		"bad glob":             {"nodepools: [{name: a, nodes: \"[\"}]", `bad node pattern`},
		"no nodes":             {"nodepools: [{name: a, nodes: []}]", `has no nodes`},
		"bad placement":        {`placement: [{groups: [ml], class: nope}]`, `unknown class "nope"`},
		"placement nobody":     {`placement: [{class: normal}]`, `matches nobody`},
		"bad fraction":         {`preemption: {max_per_round: 150%}`, `max_per_round`},
		"bad deadzone":         {`preemption: {deadzone: 1.5}`, `deadzone`},
		"min_interval":         {`{cycle: 1s, min_interval: 2s}`, `min_interval`},
		"limit both":           {`classes: [{name: a, policy: FAIR_SHARE, limits: [{user: u, group: g, max_jobs: 1}]}]`, `exactly one of user or group`},
		"init cap":             {`classes: [{name: a, policy: FAIR_SHARE, initialization_cap: -1}]`, `initialization_cap must be at least 1`},
		"negative weight":      {`classes: [{name: a, policy: FAIR_SHARE, weight: -1}]`, `negative weight`},
	} {
		_, err := ParseConfig([]byte(tc.yaml))
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a ConfigError", name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant it to mention %q", name, err, tc.want)
		}
	}
	// All mistakes at once.
	_, err := ParseConfig([]byte(`classes: [{name: a, policy: FIXED_SHARE, weight: 2, nodepool: x}, {name: a, policy: FAIR_SHARE}]`))
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) < 4 {
		t.Fatalf("want every problem, got %v", err)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("share_quantum: 1G\n"))
	f.Add([]byte("scheduler:\n  classes: [{name: a, policy: FAIR_SHARE}]\n"))
	f.Add([]byte("nodepools: [{name: a, nodes: \"*\", pools: [{name: b, nodes: [b1]}]}]\n"))
	f.Add([]byte("preemption: {max_per_round: 10%}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		timer := time.AfterFunc(3*time.Second, func() {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			panic(fmt.Sprintf("slow input %q\n%s", data, buf[:n]))
		})
		defer timer.Stop()
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		// A config that parses must be usable.
		Schedule(Input{Now: t0, Config: c, Nodes: mkNodes("n", 2, 8*GiB), Work: []Work{
			job(1, "a", c.Classes[0].Name, GiB, 10),
		}})
	})
}

func TestSubmitNeeds(t *testing.T) {
	c := DefaultConfig()
	c.Classes = []Class{
		{Name: "open", Policy: FixedShare},
		{Name: "star", Policy: FixedShare, SubmitACL: " * "},
		{Name: "users", Policy: FixedShare, SubmitACL: "alice,bob"},
		{Name: "userlimit", Policy: FixedShare, Limits: []Limit{{User: "*", MaxJobs: 2}}},
		{Name: "grouplimit", Policy: FixedShare, Limits: []Limit{{User: "*", MaxJobs: 2}, {Group: "ml", MaxJobs: 4}}},
	}
	for _, tc := range []struct {
		class         string
		groups, usage bool
	}{
		{"open", false, false},
		{"star", false, false},
		{"users", true, false},
		{"userlimit", false, true},
		{"grouplimit", true, true},
		{"nosuch", false, false},
	} {
		g, u := c.SubmitNeeds(tc.class)
		if g != tc.groups || u != tc.usage {
			t.Errorf("SubmitNeeds(%q) = groups %v, usage %v; want %v, %v", tc.class, g, u, tc.groups, tc.usage)
		}
	}
}
