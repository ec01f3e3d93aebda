package archtest

import (
	"slices"
	"strings"
	"testing"
)

// fakeGraph is a small module "m" as go list would describe it: each
// entry is a package and its direct imports.
func fakeGraph(imports map[string][]string) *graph {
	g := &graph{module: "m", pkgs: map[string]*goPackage{}}
	for p, imps := range imports {
		std := !strings.Contains(strings.Split(p, "/")[0], ".") && !strings.HasPrefix(p, "m/")
		g.pkgs[p] = &goPackage{ImportPath: p, Standard: std, Imports: imps}
		if r := g.rel(p); r != "" {
			g.own = append(g.own, r)
		}
	}
	slices.Sort(g.own)
	return g
}

// The code of the fake module: a new package feed (no row yet) that agent
// imports, a CLI that links libp2p through wire, and tick.
var fakeImports = map[string][]string{
	"m/cmd/ducc":                       {"m/cmd/internal/cli"},
	"m/cmd/internal/cli":               {"m/wire", "fmt"},
	"m/agent":                          {"m/wire", "m/feed", "m/tick", "fmt"},
	"m/feed":                           {"m/wire"},
	"m/wire":                           {"fmt", "github.com/fxamacker/cbor/v2", "github.com/libp2p/go-libp2p"},
	"m/tick":                           {"time"},
	"fmt":                              nil,
	"time":                             nil,
	"github.com/fxamacker/cbor/v2":     nil,
	"github.com/libp2p/go-libp2p":      {"github.com/libp2p/go-libp2p/core", "net/http"},
	"github.com/libp2p/go-libp2p/core": nil,
	"net/http":                         nil,
}

func mustTable(t *testing.T, rows ...string) []row {
	t.Helper()
	md := "| package | owns | may import |\n|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	rs, err := parseTable(md)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestCheckTableFindsDrift(t *testing.T) {
	g := fakeGraph(fakeImports)
	rows := mustTable(t,
		"| `cmd/ducc` | CLI | `cmd/internal/cli` |",
		"| `tick` | wakes | standard library |", // above agent, which imports it
		"| `agent` | daemon | `wire`, `cgroup` |",
		"| `cmd/internal/cli` | CLI | `wire`; never libp2p, net/http or a daemon package |",
		"| `wire` | bytes | `units`; cbor; never libp2p |",
		"| `gone` | nothing | — |",
		"| `java/` (not Go) | Java | UIMA |",
	)
	problems := checkTable(g, rows)
	want := []string{
		"ARCHITECTURE.md:8, row gone: there is no package `gone`",
		"package `feed` has no row in ARCHITECTURE.md's package table: add the row\n\t| `feed` | <what it owns, as feed/doc.go says> | `wire` |\n\tafter the row of agent (line 5, which imports it) and before the row of wire (line 7, which it imports), and add `feed` to the may-import cells of: agent",
		"ARCHITECTURE.md:5, row agent: `agent` imports `feed`, which its may-import cell \"`wire`, `cgroup`\" does not list: add `feed` to its may-import cell",
		"ARCHITECTURE.md:5, row agent: `agent` imports `tick`, which its may-import cell",
		"ARCHITECTURE.md:5, row agent: the may-import cell \"`wire`, `cgroup`\" lists `cgroup`, which `agent` does not import (non-test files): remove `cgroup` from its may-import cell",
		"ARCHITECTURE.md:5, row agent: `agent` imports `tick`, whose row (line 4) is not below it",
		"ARCHITECTURE.md:6, row cmd/internal/cli: the may-import cell \"`wire`; never libp2p, net/http or a daemon package\" says never libp2p, but `cmd/internal/cli` links github.com/libp2p/go-libp2p (go list -deps: m/cmd/internal/cli → m/wire → github.com/libp2p/go-libp2p)",
		"ARCHITECTURE.md:6, row cmd/internal/cli: the may-import cell \"`wire`; never libp2p, net/http or a daemon package\" says never net/http, but `cmd/internal/cli` links net/http (go list -deps: m/cmd/internal/cli → m/wire → github.com/libp2p/go-libp2p → net/http)",
		"ARCHITECTURE.md:7, row wire: the may-import cell \"`units`; cbor; never libp2p\" lists `units`, which `wire` does not import",
		"ARCHITECTURE.md:7, row wire: the may-import cell \"`units`; cbor; never libp2p\" names the libraries `wire` imports, but not github.com/libp2p/go-libp2p: add libp2p to the cell",
		"ARCHITECTURE.md:7, row wire: the may-import cell \"`units`; cbor; never libp2p\" says never libp2p, but `wire` links github.com/libp2p/go-libp2p",
	}
	// mustTable puts the header on line 1, the separator on line 2, the
	// rows from line 3.
	for _, w := range want {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("no problem starting with\n\t%s\namong:\n\t%s", w, strings.Join(problems, "\n\t"))
		}
	}
	if len(problems) != len(want) {
		t.Errorf("%d problems, want %d:\n\t%s", len(problems), len(want), strings.Join(problems, "\n\t"))
	}
}

func TestCheckTableAgrees(t *testing.T) {
	g := fakeGraph(fakeImports)
	rows := mustTable(t,
		"| `cmd/ducc` | CLI | `cmd/internal/cli` |",
		"| `cmd/internal/cli` | CLI | `wire`; never a daemon package |",
		"| `agent` | daemon | `feed`, `wire`, `tick` |",
		"| `feed` | job stream | `wire` |",
		"| `wire` | bytes | cbor, libp2p |",
		"| `tick` | wakes | standard library |",
		"| `java/` (not Go) | Java | UIMA |",
	)
	if problems := checkTable(g, rows); len(problems) > 0 {
		t.Errorf("problems with a table that agrees:\n\t%s", strings.Join(problems, "\n\t"))
	}
}

func TestCheckTableNotGoAndDaemon(t *testing.T) {
	imports := map[string][]string{
		"m/java/tool":        nil,
		"m/cmd/internal/cli": {"m/agent"},
		"m/agent":            nil,
	}
	g := fakeGraph(imports)
	rows := mustTable(t,
		"| `cmd/internal/cli` | CLI | `agent`; never a daemon package |",
		"| `agent` | daemon | — |",
		"| `java/` (not Go) | Java | UIMA |",
	)
	problems := checkTable(g, rows)
	for _, w := range []string{
		"ARCHITECTURE.md:5, row java: marked (not Go), but `java/tool` is a Go package",
		"ARCHITECTURE.md:3, row cmd/internal/cli: the may-import cell \"`agent`; never a daemon package\" says never a daemon package, but `cmd/internal/cli` links m/agent (go list -deps: m/cmd/internal/cli → m/agent)",
	} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("no problem starting with\n\t%s\namong:\n\t%s", w, strings.Join(problems, "\n\t"))
		}
	}
	if len(problems) != 3 { // and java/tool has no row
		t.Errorf("%d problems, want 3:\n\t%s", len(problems), strings.Join(problems, "\n\t"))
	}
}
