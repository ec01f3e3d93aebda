package classfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/head/rm"
)

func TestTranslateSite(t *testing.T) {
	text, cfg, warn, err := Translate("testdata/site.classes", "", os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Nodepools) != 1 || cfg.Nodepools[0].Name != "--default--" {
		t.Fatalf("pools %+v", cfg.Nodepools)
	}
	top := cfg.Nodepools[0]
	if got := strings.Join(top.Nodes, " "); got != "node1 node2 node3 gpu1 gpu2" {
		t.Errorf("default pool nodes %q (node file with import)", got)
	}
	if len(top.Pools) != 1 || top.Pools[0].Name != "gpus" || strings.Join(top.Pools[0].Nodes, " ") != "gpu1 gpu2" || top.Pools[0].SearchOrder != 50 {
		t.Errorf("nested pool %+v", top.Pools)
	}
	byName := map[string]rm.Class{}
	for _, c := range cfg.Classes {
		byName[c.Name] = c
	}
	for _, abstract := range []string{"fair-base", "fixed-base"} {
		if _, ok := byName[abstract]; ok {
			t.Errorf("abstract class %s was written", abstract)
		}
	}
	tests := []struct {
		class, policy string
		prio, weight  int
		pool          string
		def           bool
	}{
		{"background", rm.FairShare, 10, 1, "--default--", false},
		{"normal", rm.FairShare, 10, 100, "--default--", true},
		{"gpu", rm.FairShare, 10, 200, "gpus", false},
		{"fixed", rm.FixedShare, 5, 0, "--default--", true},
		{"JobDriver", rm.FixedShare, 9, 0, "--default--", false},
		{"reserve", rm.Reserve, 1, 0, "--default--", true},
	}
	for _, tc := range tests {
		c, ok := byName[tc.class]
		if !ok {
			t.Errorf("class %s missing", tc.class)
			continue
		}
		if c.Policy != tc.policy || c.Priority != tc.prio || c.Weight != tc.weight || c.Nodepool != tc.pool || c.Default != tc.def {
			t.Errorf("class %s = %+v", tc.class, c)
		}
	}
	if byName["gpu"].SubmitACL != "alice,bob" {
		t.Errorf("users → submit_acl %q", byName["gpu"].SubmitACL)
	}
	if ms := byName["normal"].PredictionFudge; ms.String() != "10s" {
		t.Errorf("prediction-fudge 10000 ms → %v", ms)
	}
	if l := byName["fixed"].Limits; len(l) != 1 || l[0].User != "alice" || l[0].MaxMemory != 60<<30 {
		t.Errorf("User max-allotment → limits %+v", l)
	}
	all := strings.Join(warn, "\n")
	for _, w := range []string{"domain is ignored", "debug is ignored", "max-processes is ignored", "max-allotment becomes a limit"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	if !strings.HasPrefix(string(text), "scheduler:\n") {
		t.Errorf("YAML does not start with scheduler:\n%s", text)
	}
	// The YAML is what the agent and 'ducc admin reconfigure' read.
	again, err := rm.ParseConfig(text)
	if err != nil || len(again.Classes) != len(cfg.Classes) {
		t.Errorf("the printed YAML does not read back: %v", err)
	}
}

func TestTranslateErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"not a stanza", "scheduling.class_set = a b\n", []string{"line 1", "is not a stanza"}},
		{"missing brace", "Class a { policy = FAIR_SHARE\n", []string{"missing '}'"}},
		{"unknown attributes all named", "Nodepool p { }\nClass a { policy = FAIR_SHARE; priority = 1; colour = red; nodepool = p }\nClass b a { flavour = x }\n",
			[]string{`unknown attribute "colour"`, `unknown attribute "flavour"`}},
		{"unknown parent", "Nodepool p { }\nClass a nosuch { weight = 1 }\n", []string{`inherits from "nosuch"`}},
		{"duplicate", "Nodepool p { }\nNodepool p { }\n", []string{"defined twice"}},
		{"pool without nodes", "Nodepool p { }\nNodepool q { }\nClass a { policy = FAIR_SHARE; priority = 1; nodepool = p }\n", []string{"Nodepool q has no nodefile"}},
		{"missing node file", "Nodepool p { nodefile = /nonexistent/ducc.nodes }\n", []string{"cannot read node file"}},
		{"bad number", "Nodepool p { }\nClass a { policy = FAIR_SHARE; priority = high; nodepool = p }\n", []string{`priority "high" is not a whole number`}},
		{"rm refuses", "Nodepool p { }\nClass a { policy = FAIR_SHARE; priority = 1; nodepool = p }\nClass b { policy = RESERVE; priority = 1; nodepool = p }\n",
			[]string{"mixes policies"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "ducc.classes")
			os.WriteFile(p, []byte(tc.text), 0o644)
			_, _, _, err := Translate(p, "", os.ReadFile)
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLooksLikeClassFile(t *testing.T) {
	for text, want := range map[string]bool{
		"# c\n\nNodepool x { }\n":     true,
		"Class a { }":                 true,
		"scheduler:\n  classes: []\n": false,
		"":                            false,
	} {
		if got := LooksLikeClassFile([]byte(text)); got != want {
			t.Errorf("LooksLikeClassFile(%q) = %v", text, got)
		}
	}
}

// FuzzTranslate: any class file is translated or refused, never a panic.
func FuzzTranslate(f *testing.F) {
	seed, _ := os.ReadFile("testdata/site.classes")
	f.Add(seed)
	f.Add([]byte("Nodepool p { }\nClass a p2 { x = { }"))
	f.Add([]byte("Class a a { }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(p string) ([]byte, error) {
			if filepath.Base(p) == "in.classes" {
				return data, nil
			}
			return []byte("n1\nimport in.classes\n"), nil
		}
		text, cfg, _, err := Translate("/x/in.classes", "", read)
		if err == nil && (cfg == nil || len(text) == 0) {
			t.Fatal("no error and no result")
		}
	})
}

// DUCC's user registry (ducc.users) joins the class file's stanzas.
func TestTranslateUsersFile(t *testing.T) {
	dir := t.TempDir()
	classes := filepath.Join(dir, "ducc.classes")
	os.WriteFile(classes, []byte("Nodepool p { }\nClass fair { policy = FAIR_SHARE; priority = 10; nodepool = p; default = true }\n"+
		"Class fixed { policy = FIXED_SHARE; priority = 5; nodepool = p; default = true }\n"), 0o644)
	users := filepath.Join(dir, "ducc.users")
	os.WriteFile(users, []byte("# registry\nUser bob { max-allotment = 30 }\n"), 0o644)
	_, cfg, _, err := Translate(classes, users, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Classes {
		if c.Name == "fixed" && (len(c.Limits) != 1 || c.Limits[0].User != "bob" || c.Limits[0].MaxMemory != 30<<30) {
			t.Errorf("fixed's limits %+v", c.Limits)
		}
	}
	os.WriteFile(users, []byte("Class x { policy = FAIR_SHARE }\n"), 0o644)
	if _, _, _, err := Translate(classes, users, os.ReadFile); err == nil || !strings.Contains(err.Error(), "only User stanzas") {
		t.Errorf("a class in the user registry: %v", err)
	}
}
