package classfile

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ducc-project/ducc/head/rm"
)

// MaxFileSize bounds a class or node file (DUCC's are a few KiB).
const MaxFileSize = 4 << 20

// ReadFile reads a file named in a class file (os.ReadFile in production).
type ReadFile func(path string) ([]byte, error)

// stanza is one `Type name [parent] { key = value; ... }`.
type stanza struct {
	typ, name, parent string
	line              int
	attrs             map[string]string
	order             []string // attribute names as written
}

// Translate reads the class file at path and returns the scheduler section
// as YAML (with `scheduler:` at the top), the configuration it makes, and
// warnings for what ducc reads but does not honour. All problems of the
// file are reported together. usersPath, if not "", is a DUCC user
// registry (ducc.users: User stanzas only) whose stanzas join the class
// file's.
func Translate(path, usersPath string, read ReadFile) (yamlText []byte, cfg *rm.Config, warnings []string, err error) {
	stanzas, err := readStanzas(path, read)
	if err != nil {
		return nil, nil, nil, err
	}
	if usersPath != "" {
		users, err := readStanzas(usersPath, read)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, u := range users {
			if u.typ != "User" {
				return nil, nil, nil, fmt.Errorf("%s line %d: a user registry holds only User stanzas; %s %s belongs in the class file", usersPath, u.line, u.typ, u.name)
			}
			for _, s := range stanzas {
				if s.typ == "User" && s.name == u.name {
					return nil, nil, nil, fmt.Errorf("%s line %d: user %s is also defined in %s (line %d): keep one", usersPath, u.line, u.name, path, s.line)
				}
			}
		}
		stanzas = append(stanzas, users...)
	}
	t := &translator{file: path, dir: filepath.Dir(path), read: read}
	out := t.translate(stanzas)
	if len(t.errs) > 0 {
		return nil, nil, t.warn, fmt.Errorf("%s cannot be used as it is:\n  %s", path, strings.Join(t.errs, "\n  "))
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{"scheduler": out}); err != nil {
		return nil, nil, t.warn, fmt.Errorf("encode the scheduler section: %w", err)
	}
	text := buf.Bytes()
	cfg, err = rm.ParseConfig(text)
	if err != nil {
		return nil, nil, t.warn, fmt.Errorf("%s translates to a scheduler section ducc refuses: %w", path, err)
	}
	return text, cfg, t.warn, nil
}

// readStanzas reads and parses one DUCC stanza file.
func readStanzas(path string, read ReadFile) ([]stanza, error) {
	data, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a DUCC class file", path, MaxFileSize)
	}
	stanzas, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return stanzas, nil
}

// LooksLikeClassFile reports whether data is a DUCC class file (its first
// word is a stanza type) rather than YAML.
func LooksLikeClassFile(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, _, _ := strings.Cut(line, " ")
		switch word {
		case "Nodepool", "Class", "User":
			return true
		}
		return false
	}
	return false
}

// parse splits a class file into stanzas. The grammar is DUCC's: words
// separated by blanks or commas; `=` is optional; a line end or `;` ends
// a value; `#` starts a comment line.
func parse(data []byte) ([]stanza, error) {
	toks, err := tokenize(data)
	if err != nil {
		return nil, err
	}
	var out []stanza
	seen := map[string]int{}
	for i := 0; i < len(toks); {
		if toks[i].s == ";" {
			i++
			continue
		}
		st := stanza{typ: toks[i].s, line: toks[i].line, attrs: map[string]string{}}
		switch st.typ {
		case "Nodepool", "Class", "User":
		default:
			return nil, fmt.Errorf("line %d: %q is not a stanza: a class file holds 'Nodepool NAME { ... }', 'Class NAME [PARENT] { ... }' and 'User NAME { ... }'", st.line, st.typ)
		}
		i++
		word := func() (string, bool) {
			if i < len(toks) && !isPunct(toks[i].s) {
				i++
				return toks[i-1].s, true
			}
			return "", false
		}
		var ok bool
		if st.name, ok = word(); !ok {
			return nil, fmt.Errorf("line %d: %s has no name", st.line, st.typ)
		}
		st.parent, _ = word()
		if i >= len(toks) || toks[i].s != "{" {
			return nil, fmt.Errorf("line %d: %s %s: missing '{'", st.line, st.typ, st.name)
		}
		i++
		for {
			for i < len(toks) && toks[i].s == ";" {
				i++
			}
			if i >= len(toks) {
				return nil, fmt.Errorf("line %d: %s %s: missing '}'", st.line, st.typ, st.name)
			}
			if toks[i].s == "}" {
				i++
				break
			}
			key, line := toks[i].s, toks[i].line
			if isPunct(key) {
				return nil, fmt.Errorf("line %d: %s %s: unexpected %q: write 'key = value'", line, st.typ, st.name, key)
			}
			i++
			if i < len(toks) && toks[i].s == "=" {
				i++
			}
			var val []string
			for i < len(toks) && toks[i].s != ";" && toks[i].s != "}" {
				if toks[i].s == "{" || toks[i].s == "=" {
					return nil, fmt.Errorf("line %d: %s %s: unexpected %q in the value of %s", toks[i].line, st.typ, st.name, toks[i].s, key)
				}
				val = append(val, toks[i].s)
				i++
			}
			if len(val) == 0 {
				return nil, fmt.Errorf("line %d: %s %s: %s has no value", line, st.typ, st.name, key)
			}
			if _, dup := st.attrs[key]; dup {
				return nil, fmt.Errorf("line %d: %s %s: %s is given twice", line, st.typ, st.name, key)
			}
			st.attrs[key] = strings.Join(val, " ")
			st.order = append(st.order, key)
		}
		k := st.typ + " " + st.name
		if prev, dup := seen[k]; dup {
			return nil, fmt.Errorf("line %d: %s is defined twice (first on line %d)", st.line, k, prev)
		}
		seen[k] = st.line
		out = append(out, st)
	}
	return out, nil
}

type token struct {
	s    string
	line int
}

func isPunct(s string) bool { return s == "{" || s == "}" || s == "=" || s == ";" }

// tokenize splits into words and the punctuation { } = ;, with a ; at
// each line end as DUCC does.
func tokenize(data []byte) ([]token, error) {
	var out []token
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxFileSize)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if i := strings.Index(text, " #"); i >= 0 { // a trailing comment
			text = text[:i]
		}
		var word strings.Builder
		flush := func() {
			if word.Len() > 0 {
				out = append(out, token{word.String(), line})
				word.Reset()
			}
		}
		for _, c := range text {
			switch c {
			case ' ', '\t', '\f', '\r', ',':
				flush()
			case '{', '}', '=', ';':
				flush()
				out = append(out, token{string(c), line})
			default:
				word.WriteRune(c)
			}
		}
		flush()
		out = append(out, token{";", line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}

// The YAML written, mirroring head/rm's config with empty fields left out.
type (
	yamlPool struct {
		Name         string     `yaml:"name"`
		Nodes        []string   `yaml:"nodes,flow"`
		SearchOrder  int        `yaml:"search_order,omitempty"`
		ShareQuantum string     `yaml:"share_quantum,omitempty"`
		Pools        []yamlPool `yaml:"pools,omitempty"`
	}
	yamlLimit struct {
		User      string `yaml:"user"`
		MaxMemory string `yaml:"max_memory"`
	}
	yamlClass struct {
		Name              string      `yaml:"name"`
		Policy            string      `yaml:"policy"`
		Priority          int         `yaml:"priority"`
		Weight            int         `yaml:"weight,omitempty"`
		Nodepool          string      `yaml:"nodepool,omitempty"`
		Default           bool        `yaml:"default,omitempty"`
		SubmitACL         string      `yaml:"submit_acl,omitempty"`
		InitializationCap int         `yaml:"initialization_cap,omitempty"`
		ExpandByDoubling  *bool       `yaml:"expand_by_doubling,omitempty"`
		UsePrediction     *bool       `yaml:"use_prediction,omitempty"`
		PredictionFudge   string      `yaml:"prediction_fudge,omitempty"`
		Limits            []yamlLimit `yaml:"limits,omitempty"`
	}
	yamlScheduler struct {
		Nodepools []yamlPool  `yaml:"nodepools"`
		Classes   []yamlClass `yaml:"classes"`
	}
)

type translator struct {
	file, dir string
	read      ReadFile
	errs      []string
	warn      []string
}

func (t *translator) errorf(line int, format string, a ...any) {
	t.errs = append(t.errs, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, a...))
}

func (t *translator) warnf(line int, format string, a ...any) {
	t.warn = append(t.warn, fmt.Sprintf("%s:%d: ", t.file, line)+fmt.Sprintf(format, a...))
}

func (t *translator) translate(stanzas []stanza) yamlScheduler {
	var pools, classes, users []stanza
	for _, s := range stanzas {
		switch s.typ {
		case "Nodepool":
			pools = append(pools, s)
		case "Class":
			classes = append(classes, s)
		case "User":
			users = append(users, s)
		}
	}
	out := yamlScheduler{Nodepools: t.pools(pools)}
	out.Classes = t.classes(classes, users)
	return out
}

// pools builds the nodepool tree from the Nodepool stanzas (parent =
// NAME nests a pool).
func (t *translator) pools(stanzas []stanza) []yamlPool {
	if len(stanzas) == 0 {
		t.errs = append(t.errs, "no Nodepool stanza: add one, e.g. 'Nodepool --default-- { }'")
		return nil
	}
	byName := map[string]*stanza{}
	for i := range stanzas {
		byName[stanzas[i].name] = &stanzas[i]
	}
	children := map[string][]string{}
	var top []string
	for _, s := range stanzas {
		if s.parent != "" {
			t.errorf(s.line, "Nodepool %s: nodepools do not inherit; to nest it, write 'parent = %s' inside the braces", s.name, s.parent)
		}
		for _, k := range s.order {
			switch k {
			case "nodefile", "parent", "search-order", "share-quantum":
			case "domain":
				t.warnf(s.line, "Nodepool %s: domain is ignored: ducc names nodes as their agents report them (node.name); write full names in the node file if your agents use them", s.name)
			default:
				t.errorf(s.line, "Nodepool %s: unknown attribute %q: a nodepool takes nodefile, parent, search-order, share-quantum and domain", s.name, k)
			}
		}
		if p := s.attrs["parent"]; p != "" {
			if byName[p] == nil {
				t.errorf(s.line, "Nodepool %s: parent %q is not a nodepool of the file", s.name, p)
				continue
			}
			children[p] = append(children[p], s.name)
		} else {
			top = append(top, s.name)
		}
	}
	var build func(name string, depth int) yamlPool
	build = func(name string, depth int) yamlPool {
		s := byName[name]
		p := yamlPool{Name: name}
		if depth > 20 {
			t.errorf(s.line, "Nodepool %s: its parents form a loop", name)
			return p
		}
		if f := s.attrs["nodefile"]; f != "" {
			p.Nodes = t.nodeFile(s.line, t.resolve(t.dir, f), map[string]bool{})
		} else if depth == 0 && len(top) == 1 {
			p.Nodes = []string{"*"} // DUCC: every node not in another pool
		} else {
			t.errorf(s.line, "Nodepool %s has no nodefile: DUCC gives it the nodes no other pool lists, ducc needs them named; give it a nodefile", name)
		}
		if v := s.attrs["search-order"]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.errorf(s.line, "Nodepool %s: search-order %q is not a whole number", name, v)
			}
			p.SearchOrder = n
		}
		if v := s.attrs["share-quantum"]; v != "" {
			p.ShareQuantum = t.gigabytes(s.line, "Nodepool "+name+": share-quantum", v)
		}
		for _, c := range children[name] {
			p.Pools = append(p.Pools, build(c, depth+1))
		}
		return p
	}
	var out []yamlPool
	for _, name := range top {
		out = append(out, build(name, 0))
	}
	return out
}

// nodeFile reads a DUCC node file: host names, `import FILE` lines, #
// comments.
func (t *translator) nodeFile(line int, path string, seen map[string]bool) []string {
	if seen[path] {
		t.errorf(line, "node file %s imports itself", path)
		return nil
	}
	seen[path] = true
	data, err := t.read(path)
	if err != nil {
		t.errorf(line, "cannot read node file: %v", err)
		return nil
	}
	if len(data) > MaxFileSize {
		t.errorf(line, "node file %s is larger than %d bytes", path, MaxFileSize)
		return nil
	}
	var nodes []string
	for i, l := range strings.Split(string(data), "\n") {
		if j := strings.IndexByte(l, '#'); j >= 0 {
			l = l[:j]
		}
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "import" {
			nodes = append(nodes, t.nodeFile(line, t.resolve(filepath.Dir(path), f[1]), seen)...)
			continue
		}
		for _, n := range f {
			if strings.ContainsAny(n, "*?[\\/") {
				t.errorf(line, "node file %s line %d: %q is not a host name", path, i+1, n)
				continue
			}
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		t.errorf(line, "node file %s lists no nodes", path)
	}
	return nodes
}

func (t *translator) resolve(dir, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

// gigabytes turns DUCC's GB count into a ducc size ("60G").
func (t *translator) gigabytes(line int, what, v string) string {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.errorf(line, "%s %q is not a whole number of GB", what, v)
		return ""
	}
	return strconv.Itoa(n) + "G"
}

// classAttrs are the class attributes ducc honours, with how.
var classAttrs = []string{"policy", "priority", "weight", "nodepool", "default", "abstract", "users",
	"expand-by-doubling", "initialization-cap", "use-prediction", "prediction-fudge"}

// ignoredClassAttrs are class attributes DUCC 2 itself ignores or that
// change nothing in ducc, with why.
var ignoredClassAttrs = map[string]string{
	"max-processes": "DUCC 2 ignores it too; cap a user's non-preemptable memory with a User stanza's max-allotment",
	"max-machines":  "DUCC 2 ignores it too; cap a user's reservations with a User stanza's max-allotment",
	"cap":           "DUCC 2 ignores it too; a FAIR_SHARE class's ceiling is 'max' in ducc's scheduler section",
	"debug":         "ducc has no debug class: it attaches no debuggers",
	"enforce":       "ducc always reserves machines of exactly the asked size",
}

// classes resolves inheritance and writes the concrete classes.
func (t *translator) classes(stanzas []stanza, users []stanza) []yamlClass {
	byName := map[string]*stanza{}
	for i := range stanzas {
		byName[stanzas[i].name] = &stanzas[i]
	}
	// resolved returns the attributes of a class with its ancestors' filled in.
	var resolved func(s *stanza, depth int) map[string]string
	resolved = func(s *stanza, depth int) map[string]string {
		attrs := map[string]string{}
		if s.parent != "" && depth < 20 {
			p := byName[s.parent]
			if p == nil {
				t.errorf(s.line, "Class %s inherits from %q, which is not a class of the file", s.name, s.parent)
			} else {
				for k, v := range resolved(p, depth+1) {
					if k != "abstract" && k != "default" {
						attrs[k] = v
					}
				}
			}
		} else if depth >= 20 {
			t.errorf(s.line, "Class %s: its parents form a loop", s.name)
		}
		for k, v := range s.attrs {
			attrs[k] = v
		}
		return attrs
	}
	for _, s := range stanzas {
		for _, k := range s.order {
			if why, ok := ignoredClassAttrs[k]; ok {
				t.warnf(s.line, "Class %s: %s is ignored: %s", s.name, k, why)
			} else if !slices.Contains(classAttrs, k) {
				t.errorf(s.line, "Class %s: unknown attribute %q; a class takes %s", s.name, k, strings.Join(classAttrs, ", "))
			}
		}
	}
	var out []yamlClass
	for i := range stanzas {
		s := &stanzas[i]
		a := resolved(s, 0)
		if a["abstract"] == "true" && s.attrs["abstract"] == "true" {
			continue
		}
		c := yamlClass{Name: s.name, Policy: a["policy"], Nodepool: a["nodepool"]}
		c.Priority = t.integer(s, "priority", a["priority"])
		if c.Policy == rm.FairShare {
			c.Weight = t.integer(s, "weight", a["weight"])
		}
		if d := t.boolean(s, "default", s.attrs["default"]); d != nil {
			c.Default = *d
		}
		if u := a["users"]; u != "" {
			c.SubmitACL = strings.Join(strings.Fields(u), ",")
		}
		c.InitializationCap = t.integer(s, "initialization-cap", a["initialization-cap"])
		c.ExpandByDoubling = t.boolean(s, "expand-by-doubling", a["expand-by-doubling"])
		c.UsePrediction = t.boolean(s, "use-prediction", a["use-prediction"])
		if v := a["prediction-fudge"]; v != "" {
			if ms := t.integer(s, "prediction-fudge", v); ms > 0 {
				c.PredictionFudge = strconv.Itoa(ms) + "ms"
			}
		}
		if c.Policy != rm.FairShare {
			for _, u := range users {
				if v := u.attrs["max-allotment"]; v != "" {
					c.Limits = append(c.Limits, yamlLimit{User: u.name, MaxMemory: t.gigabytes(u.line, "User "+u.name+": max-allotment", v)})
				}
			}
		}
		out = append(out, c)
	}
	for _, u := range users {
		for _, k := range u.order {
			if k != "max-allotment" {
				t.errorf(u.line, "User %s: unknown attribute %q; a User stanza takes max-allotment", u.name, k)
			}
		}
		if u.attrs["max-allotment"] != "" {
			t.warnf(u.line, "User %s: max-allotment becomes a limit in each FIXED_SHARE and RESERVE class: DUCC counts it across those classes together, ducc per class", u.name)
		}
	}
	return out
}

func (t *translator) integer(s *stanza, key, v string) int {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.errorf(s.line, "Class %s: %s %q is not a whole number", s.name, key, v)
	}
	return n
}

func (t *translator) boolean(s *stanza, key, v string) *bool {
	if v == "" {
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		t.errorf(s.line, "Class %s: %s %q is not true or false", s.name, key, v)
		return nil
	}
	return &b
}
