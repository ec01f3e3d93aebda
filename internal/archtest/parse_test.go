package archtest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// row is one row of ARCHITECTURE.md's package table.
type row struct {
	line  int      // line number in ARCHITECTURE.md
	pkgs  []string // the row's packages, relative to the module ("cmd/ducc"); two in a combined row
	notGo bool     // "(not Go)": a directory that holds no Go package ("java/")
	cell  string   // the "may import" cell as written
	rule  rule
}

// name is how messages name the row: its package cell without backticks.
func (r row) name() string { return strings.Join(r.pkgs, ", ") }

// rule is what a "may import" cell says. The cell is a list separated by
// commas and semicolons of
//
//   - `pkg`: a project package every package of the row imports directly;
//   - "their parent": each package of the row imports its parent directory's
//     package (test helpers);
//   - "everything": anything (e2e), unchecked;
//   - "standard library", or a library name (libraries' keys), or "—"
//     (nothing): the cell then enumerates the row's third-party imports;
//   - "without P": a standard package P the row never links, even
//     indirectly;
//   - a last clause "never A, B or C": libraries, standard packages, `pkg`s
//     or "a daemon package" (daemonPackages) the row never links;
//
// and parentheses, which hold a note (ignored: "(metrics)"), "tests only"
// (the package's non-test files import no project package) or clauses
// "`pkg`: `a`, `b` too" separated by semicolons (more project packages for
// one package of a combined row).
type rule struct {
	projects   []string            // `pkg`s every package of the row imports
	extra      map[string][]string // "`pkg`: `a` too": more for one package of the row
	parent     bool                // "their parent"
	everything bool                // "everything"
	testsOnly  bool                // "(tests only)"
	libsListed bool                // the cell enumerates third-party imports ("standard library", a library, "—")
	libs       []string            // library names (libraries' keys)
	never      []string            // what the row never links: library names, standard packages, "`pkg`", daemonPackage
}

// daemonPackage is the never-clause item "a daemon package".
const daemonPackage = "a daemon package"

// libraries maps the library names the table uses to the import path
// prefixes (whole path elements) of their packages. A name that is not
// here is a parse error: add it here when the table names a new library.
var libraries = map[string][]string{
	"cbor":   {"github.com/fxamacker/cbor"},
	"libp2p": {"github.com/libp2p", "github.com/multiformats"},
	"Raft":   {"github.com/hashicorp/raft", "github.com/hashicorp/go-hclog"}, // go-hclog: the logger Raft takes
	"cobra":  {"github.com/spf13/cobra"},
	"x/sys":  {"golang.org/x/sys"},
	"yaml":   {"go.yaml.in/yaml"},
	"UIMA":   nil, // Java (java/), no Go
	"NVML":   {"github.com/NVIDIA/go-nvml"},
	"eBPF":   {"github.com/cilium/ebpf"},
}

// daemonPackages are the project packages "a daemon package" means: the
// ones cmd/ducc must not link (cmd/ducc/light_test.go); head/rm, pure, is
// not one (classfile reads class files into its config section).
var daemonPackages = []string{
	"agent", "sim", "proc", "cgroup", "web", "wire/p2p", "cmd/duccd", "gpu",
	"head", "head/server", "head/orch", "head/jd", "head/sm", "head/state",
}

// under tells whether import path p is prefix or under it (whole elements).
func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// isLibrary tells whether name is one of libraries' names.
func isLibrary(name string) bool {
	_, ok := libraries[name]
	return ok
}

// libraryOf returns the library name of third-party import path p, or "".
func libraryOf(p string) string {
	for name, prefixes := range libraries {
		for _, pre := range prefixes {
			if under(p, pre) {
				return name
			}
		}
	}
	return ""
}

var (
	tableHeader = regexp.MustCompile(`^\|\s*package\s*\|\s*owns\s*\|\s*may import\s*\|\s*$`)
	backticked  = regexp.MustCompile("`([^`]*)`")
	parenthesis = regexp.MustCompile(`\(([^()]*)\)`)
	alsoClause  = regexp.MustCompile("^`([^`]+)`:\\s*(.*\\S)\\s+too$")
	neverClause = regexp.MustCompile(`(?:^|[;,]\s*)never\s+(.*)$`)
	orAnd       = regexp.MustCompile(`,|\s+or\s+|\s+and\s+`)
	stdPackage  = regexp.MustCompile(`^[a-z0-9]+(/[a-z0-9]+)*$`) // no dot in the first element
)

// parseTable returns the rows of the package table in md, in order.
func parseTable(md string) ([]row, error) {
	lines := strings.Split(md, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return tableHeader.MatchString(l) })
	if start < 0 {
		return nil, fmt.Errorf("no package table (a line %q)", "| package | owns | may import |")
	}
	var rows []row
	for i := start + 1; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.Trim(l, "|-: ") == "" {
			continue // the separator line
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("ARCHITECTURE.md:%d: %d cells, want 3 (package, owns, may import)", i+1, len(cells))
		}
		r, err := parseRow(strings.TrimSpace(cells[0]), strings.TrimSpace(cells[2]))
		if err != nil {
			return nil, fmt.Errorf("ARCHITECTURE.md:%d: %v", i+1, err)
		}
		r.line = i + 1
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("the package table has no rows")
	}
	return rows, nil
}

// parseRow parses a row's package cell ("`a`", "`a`, `b`", "`java/` (not
// Go)") and its "may import" cell.
func parseRow(pkgCell, cell string) (row, error) {
	r := row{cell: cell}
	rest := pkgCell
	if strings.HasSuffix(rest, "(not Go)") {
		r.notGo = true
		rest = strings.TrimSuffix(rest, "(not Go)")
	}
	for _, m := range backticked.FindAllStringSubmatch(rest, -1) {
		r.pkgs = append(r.pkgs, strings.TrimSuffix(m[1], "/"))
	}
	if strings.Trim(backticked.ReplaceAllString(rest, ""), ", ") != "" || len(r.pkgs) == 0 {
		return r, fmt.Errorf("package cell %q: want `pkg`, `pkg`, … and perhaps (not Go)", pkgCell)
	}
	var err error
	r.rule, err = parseCell(cell)
	if err != nil {
		return r, fmt.Errorf("row %s: %v", r.name(), err)
	}
	for p := range r.rule.extra {
		if !slices.Contains(r.pkgs, p) {
			return r, fmt.Errorf("row %s: %q names `%s`, which is not a package of the row", r.name(), cell, p)
		}
	}
	return r, nil
}

// parseCell parses a "may import" cell (see rule).
func parseCell(cell string) (rule, error) {
	var r rule
	allow := cell
	if m := neverClause.FindStringSubmatchIndex(cell); m != nil {
		allow = cell[:m[0]]
		never := parenthesis.ReplaceAllString(cell[m[2]:m[3]], "")
		for _, item := range orAnd.Split(never, -1) {
			item = strings.TrimSpace(item)
			switch {
			case item == "":
			case item == daemonPackage, isLibrary(item):
				r.never = append(r.never, item)
			case backticked.MatchString(item) && backticked.ReplaceAllString(item, "") == "":
				r.never = append(r.never, item) // "`pkg`"
			case stdPackage.MatchString(item):
				r.never = append(r.never, item)
			default:
				return r, fmt.Errorf("%q: unknown item %q after never (want a library, a standard package, `pkg` or %q)", cell, item, daemonPackage)
			}
		}
	}
	// Parentheses: a note, "tests only", or "`pkg`: `a` too" clauses.
	for _, m := range parenthesis.FindAllStringSubmatch(allow, -1) {
		inner := strings.TrimSpace(m[1])
		if inner == "tests only" {
			r.testsOnly = true
			continue
		}
		if !strings.Contains(inner, "`") {
			continue // a note: "(metrics)"
		}
		for _, clause := range strings.Split(inner, ";") {
			c := alsoClause.FindStringSubmatch(strings.TrimSpace(clause))
			if c == nil {
				return r, fmt.Errorf("%q: parenthesis %q: a parenthesis with backticks holds clauses \"`pkg`: `a`, `b` too\" separated by semicolons", cell, m[0])
			}
			if r.extra == nil {
				r.extra = map[string][]string{}
			}
			for _, p := range backticked.FindAllStringSubmatch(c[2], -1) {
				r.extra[c[1]] = append(r.extra[c[1]], p[1])
			}
		}
	}
	allow = parenthesis.ReplaceAllString(allow, "")
	for _, item := range strings.FieldsFunc(allow, func(c rune) bool { return c == ',' || c == ';' }) {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case backticked.MatchString(item):
			if backticked.ReplaceAllString(item, "") != "" {
				return r, fmt.Errorf("%q: item %q: want `pkg` alone", cell, item)
			}
			r.projects = append(r.projects, backticked.FindStringSubmatch(item)[1])
		case item == "standard library", item == "—":
			r.libsListed = true
		case strings.HasPrefix(item, "without "):
			p := strings.TrimPrefix(item, "without ")
			if !stdPackage.MatchString(p) {
				return r, fmt.Errorf("%q: %q: want without <standard package>", cell, item)
			}
			r.never = append(r.never, p)
		case item == "their parent":
			r.parent = true
		case item == "everything":
			r.everything = true
		default:
			if !isLibrary(item) {
				return r, fmt.Errorf("%q: unknown item %q (want `pkg`, their parent, everything, standard library, —, without <package>, never …, or a library: %s; a new library goes into archtest's libraries map)", cell, item, strings.Join(libraryNames(), ", "))
			}
			r.libsListed = true
			r.libs = append(r.libs, item)
		}
	}
	return r, nil
}

// libraryNames returns libraries' keys, sorted.
func libraryNames() []string {
	var names []string
	for n := range libraries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
