package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goPackage is what go list says of one package.
type goPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	Imports    []string
	Error      *struct{ Err string }
}

// graph is the module's packages and everything they link, from one
// `go list -deps ./...`.
type graph struct {
	module string                // module path
	root   string                // module directory
	pkgs   map[string]*goPackage // by import path
	own    []string              // the module's packages, relative ("cmd/ducc"), sorted
}

// rel returns the project package p relative to the module, or "" if p is
// not the module's.
func (g *graph) rel(p string) string {
	if strings.HasPrefix(p, g.module+"/") {
		return strings.TrimPrefix(p, g.module+"/")
	}
	return ""
}

// moduleRoot returns the directory of the nearest go.mod above the test's
// directory and the module path it declares.
func moduleRoot() (dir, module string, err error) {
	dir, err = os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, l := range strings.Split(string(data), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
					return dir, strings.Trim(f[1], `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s/go.mod declares no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// loadGraph runs go list -deps over the module.
func loadGraph(t *testing.T) *graph {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: the package table is not checked")
	}
	root, module, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Dir,Standard,GoFiles,Imports,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, stderr.Bytes())
	}
	g := &graph{module: module, root: root, pkgs: map[string]*goPackage{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(goPackage)
		if err := dec.Decode(p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list -deps ./...: %v", err)
		}
		if p.Error != nil && !strings.Contains(p.Error.Err, "no non-test Go files") {
			t.Fatalf("go list -deps ./...: %s: %s", p.ImportPath, p.Error.Err)
		}
		g.pkgs[p.ImportPath] = p
		if r := g.rel(p.ImportPath); r != "" {
			g.own = append(g.own, r)
		}
	}
	slices.Sort(g.own)
	if len(g.own) < 5 {
		t.Fatalf("go list -deps ./... listed only %d packages of %s: %q", len(g.own), module, g.own)
	}
	return g
}

// ownImports returns the project packages (relative) and the third-party
// packages that project package p imports directly in its non-test files,
// each sorted.
func (g *graph) ownImports(p string) (project, thirdParty []string) {
	for _, imp := range g.pkgs[g.module+"/"+p].Imports {
		switch dep := g.pkgs[imp]; {
		case g.rel(imp) != "":
			project = append(project, g.rel(imp))
		case dep != nil && dep.Standard, imp == "C":
		default:
			thirdParty = append(thirdParty, imp)
		}
	}
	slices.Sort(project)
	slices.Sort(thirdParty)
	return project, thirdParty
}

// importedIn returns the non-test files of project package p (relative to
// the module) that import imp, for messages.
func (g *graph) importedIn(p, imp string) string {
	gp := g.pkgs[g.module+"/"+p]
	var files []string
	for _, name := range gp.GoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(gp.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, is := range f.Imports {
			if q, _ := strconv.Unquote(is.Path.Value); q == imp {
				files = append(files, path.Join(p, name))
				break
			}
		}
	}
	if len(files) == 0 {
		return ""
	}
	return " (" + strings.Join(files, ", ") + ")"
}

// chain returns the import path from package from to package to, "a → b →
// c", or "" if from does not link to.
func (g *graph) chain(from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var path []string
			for q := to; q != ""; q = prev[q] {
				path = append(path, q)
			}
			slices.Reverse(path)
			return strings.Join(path, " → ")
		}
		if gp := g.pkgs[p]; gp != nil {
			for _, imp := range gp.Imports {
				if _, seen := prev[imp]; !seen {
					prev[imp] = p
					queue = append(queue, imp)
				}
			}
		}
	}
	return ""
}

// deps returns every package project package p links (its non-test
// files), sorted.
func (g *graph) deps(p string) []string {
	from := g.module + "/" + p
	seen := map[string]bool{from: true}
	queue := []string{from}
	var out []string
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		if gp := g.pkgs[q]; gp != nil {
			for _, imp := range gp.Imports {
				if !seen[imp] {
					seen[imp] = true
					out = append(out, imp)
					queue = append(queue, imp)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// forbids tells whether never-item item (see rule.never) covers import
// path dep.
func (g *graph) forbids(item, dep string) bool {
	switch {
	case item == daemonPackage:
		return slices.Contains(daemonPackages, g.rel(dep))
	case isLibrary(item):
		return libraryOf(dep) == item
	case strings.HasPrefix(item, "`"):
		return dep == g.module+"/"+strings.Trim(item, "`")
	default: // a standard package and those under it
		gp := g.pkgs[dep]
		return under(dep, item) && gp != nil && gp.Standard
	}
}

func TestPackageTable(t *testing.T) {
	g := loadGraph(t)
	md, err := os.ReadFile(filepath.Join(g.root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(string(md))
	if err != nil {
		t.Fatal(err)
	}
	problems := checkTable(g, rows)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Log("ARCHITECTURE.md's package table must say what the code imports (internal/archtest/doc.go says what is checked): " +
			"edit the rows named above, or the code where the import is the mistake.")
	}
}

// checkTable returns what is wrong between the table's rows and the code.
func checkTable(g *graph, rows []row) []string {
	var problems []string
	report := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	rowOf := map[string]int{} // package → index in rows
	for i, r := range rows {
		for _, p := range r.pkgs {
			if j, dup := rowOf[p]; dup {
				report("ARCHITECTURE.md:%d: package `%s` has a row already (line %d): merge the two rows", r.line, p, rows[j].line)
				continue
			}
			rowOf[p] = i
			if r.notGo {
				for _, own := range g.own {
					if under(own, p) {
						report("ARCHITECTURE.md:%d, row %s: marked (not Go), but `%s` is a Go package: give `%s` a row of its own, or remove the (not Go) mark", r.line, r.name(), own, own)
					}
				}
			} else if !slices.Contains(g.own, p) {
				report("ARCHITECTURE.md:%d, row %s: there is no package `%s` (go list ./... does not list %s/%s): remove it from the table, or mark the row (not Go) if it is a directory without Go", r.line, r.name(), p, g.module, p)
			}
		}
	}
	for _, p := range g.own {
		if _, ok := rowOf[p]; !ok {
			report("%s", missingRow(g, rows, rowOf, p))
		}
	}
	for i, r := range rows {
		if r.notGo {
			continue
		}
		for _, p := range r.pkgs {
			if slices.Contains(g.own, p) {
				problems = append(problems, checkPackage(g, rows, rowOf, i, p)...)
			}
		}
	}
	return problems
}

// allowed returns the project packages row r says its package p imports.
func (r row) allowed(p string) []string {
	allowed := slices.Clone(r.rule.projects)
	if r.rule.parent {
		allowed = append(allowed, path.Dir(p))
	}
	return append(allowed, r.rule.extra[p]...)
}

// checkPackage compares what package p of rows[i] imports with the row.
func checkPackage(g *graph, rows []row, rowOf map[string]int, i int, p string) []string {
	r := rows[i]
	var problems []string
	report := func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf("ARCHITECTURE.md:%d, row %s: ", r.line, r.name())+fmt.Sprintf(format, a...))
	}
	project, thirdParty := g.ownImports(p)
	allowed := r.allowed(p)
	cellFor := func(q string) string { // where the row names q, for the message
		if slices.Contains(r.rule.extra[p], q) {
			return fmt.Sprintf("the clause \"`%s`: … too\" of its may-import cell", p)
		}
		if len(r.pkgs) > 1 && !(r.rule.parent && q == path.Dir(p)) {
			if len(r.rule.extra) > 0 {
				return fmt.Sprintf("its may-import cell, for `%s` alone: \"; `%s`: `%s` too\" inside its parenthesis", p, p, q)
			}
			return fmt.Sprintf("its may-import cell, for `%s` alone: \" (`%s`: `%s` too)\"", p, p, q)
		}
		return "its may-import cell"
	}
	switch {
	case r.rule.everything && r.rule.testsOnly:
		for _, q := range project {
			report("the cell says tests only, but `%s` imports `%s`%s in a non-test file: move that code into a _test.go file", p, q, g.importedIn(p, g.module+"/"+q))
		}
	case r.rule.everything:
	default:
		for _, q := range project {
			if !slices.Contains(allowed, q) {
				report("`%s` imports `%s`%s, which its may-import cell %q does not list: add `%s` to %s (or remove the import, if it is the mistake)",
					p, q, g.importedIn(p, g.module+"/"+q), r.cell, q, cellFor(q))
			}
		}
		for _, q := range allowed {
			if !slices.Contains(project, q) {
				what := "remove `" + q + "` from " + cellFor(q)
				if r.rule.parent && q == path.Dir(p) {
					what = "the cell says their parent: give `" + p + "` a row of its own"
				}
				report("the may-import cell %q lists `%s`, which `%s` does not import (non-test files): %s", r.cell, q, p, what)
			}
		}
	}
	// Imports go down the table; test helpers and tests-only packages sit
	// under what they help test.
	if !r.rule.parent && !r.rule.everything && !r.rule.testsOnly {
		for _, q := range project {
			if j, ok := rowOf[q]; ok && j <= i {
				report("`%s` imports `%s`, whose row (line %d) is not below it; imports go down the table: move the row of `%s` below that of `%s`, or the other above", p, q, rows[j].line, q, p)
			}
		}
	}
	if r.rule.libsListed {
		checkLibraries(g, r, p, thirdParty, report)
	}
	if len(r.rule.never) > 0 {
		checkNever(g, r, p, report)
	}
	return problems
}

// missingRow says that project package p has no row, and what row to add
// where: below the rows of the packages importing it, above those of the
// packages it imports.
func missingRow(g *graph, rows []row, rowOf map[string]int, p string) string {
	project, thirdParty := g.ownImports(p)
	cell := "standard library"
	if len(project) > 0 {
		cell = "`" + strings.Join(project, "`, `") + "`"
	} else if len(thirdParty) > 0 {
		cell = "<the libraries it imports>"
	}
	var importers []string // those whose rows do not list p yet
	below := -1            // the last row of a package importing p
	for _, q := range g.own {
		if qi, _ := g.ownImports(q); slices.Contains(qi, p) {
			j, ok := rowOf[q]
			if !ok || !slices.Contains(rows[j].allowed(q), p) {
				importers = append(importers, q)
			}
			if ok && !rows[j].rule.parent && !rows[j].rule.everything {
				below = max(below, j)
			}
		}
	}
	above := len(rows) // the first row of a package p imports
	for _, q := range project {
		if j, ok := rowOf[q]; ok {
			above = min(above, j)
		}
	}
	msg := fmt.Sprintf("package `%s` has no row in ARCHITECTURE.md's package table: add the row\n\t| `%s` | <what it owns, as %s/doc.go says> | %s |\n", p, p, p, cell)
	switch {
	case below < 0 && above == len(rows):
		msg += "\twhere it fits"
	case below < above:
		var where []string
		if below >= 0 {
			where = append(where, fmt.Sprintf("after the row of %s (line %d, which imports it)", rows[below].name(), rows[below].line))
		}
		if above < len(rows) {
			where = append(where, fmt.Sprintf("before the row of %s (line %d, which it imports)", rows[above].name(), rows[above].line))
		}
		msg += "\t" + strings.Join(where, " and ")
	default:
		msg += fmt.Sprintf("\tafter the row of %s (line %d, which imports it) and before that of %s (line %d, which it imports): reorder those rows so that imports go down the table",
			rows[below].name(), rows[below].line, rows[above].name(), rows[above].line)
	}
	if len(importers) > 0 {
		msg += fmt.Sprintf(", and add `%s` to the may-import cells of: %s", p, strings.Join(importers, ", "))
	}
	return msg
}

// checkLibraries compares the direct third-party imports of package p with
// its row r, whose cell enumerates them.
func checkLibraries(g *graph, r row, p string, thirdParty []string, report func(string, ...any)) {
	for _, imp := range thirdParty {
		if lib := libraryOf(imp); lib == "" || !slices.Contains(r.rule.libs, lib) {
			name := lib
			if name == "" {
				name = "a name for it (and add the name to libraries in internal/archtest/parse_test.go)"
			}
			report("the may-import cell %q names the libraries `%s` imports, but not %s%s: add %s to the cell (or remove the import)", r.cell, p, imp, g.importedIn(p, imp), name)
		}
	}
	for _, lib := range r.rule.libs {
		if !slices.ContainsFunc(thirdParty, func(imp string) bool { return libraryOf(imp) == lib }) {
			report("the may-import cell %q names %s, which `%s` does not import directly (non-test files): remove %s from the cell", r.cell, lib, p, lib)
		}
	}
}

// checkNever looks for what package p links, even indirectly, that its row
// r says it never does.
func checkNever(g *graph, r row, p string, report func(string, ...any)) {
	deps := g.deps(p)
	for _, item := range r.rule.never {
		for _, d := range deps {
			if g.forbids(item, d) {
				report("the may-import cell %q says never %s, but `%s` links %s (go list -deps: %s): take that import out of `%s`",
					r.cell, item, p, d, g.chain(g.module+"/"+p, d), p)
				break // one chain per item is enough to act on
			}
		}
	}
}
