package spec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ParseFile reads a spec file of a kind. .yaml and .yml are YAML; anything
// else is read as a properties file and, if that fails, as YAML. ${VAR} in
// a properties file may name an environment variable. The warnings are
// what the file says that ducc reads but does not act on (DUCC keys ducc
// ignores, undefined variables left in place), one line each.
func ParseFile(path string, kind Kind) (Raw, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", kind, err)
	}
	base := filepath.Dir(path)
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		raw, warn, err := ParseYAML(data, path, base, kind)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s (YAML): %w", kind, path, err)
		}
		return raw, warn, nil
	}
	raw, warn, perr := ParseProperties(data, path, base, os.LookupEnv, kind)
	if perr == nil {
		return raw, warn, nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".properties", ".job", ".txt", ".svc":
		return nil, nil, fmt.Errorf("%s %s (properties): %w", kind, path, perr)
	}
	raw, warn, yerr := ParseYAML(data, path, base, kind)
	if yerr == nil {
		return raw, warn, nil
	}
	if onlyKeysWrong(perr) {
		return nil, nil, fmt.Errorf("%s %s (properties): %w", kind, path, perr)
	}
	return nil, nil, fmt.Errorf("%s %s is neither a properties file (%v) nor YAML (%v); name it .yaml or .properties to pick one", kind, path, perr, yerr)
}

// onlyKeysWrong reports whether err says that a file read as properties
// has keys ducc does not take, all of them spelled like keys: the file is
// a properties file with the wrong keys, not YAML.
func onlyKeysWrong(err error) bool {
	var uk *unknownKeys
	if !errors.As(err, &uk) {
		return false
	}
	for _, k := range uk.keys {
		for i, c := range k.name {
			letter := c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
			if !letter && (i == 0 || !(c == '.' || (c >= '0' && c <= '9'))) {
				return false
			}
		}
	}
	return true
}

// ParseYAML reads a YAML spec strictly: one mapping, known keys only (all
// unknown ones are named in one error), no duplicates. name is the file's
// name for messages; base is the folder relative paths are resolved
// against. The warnings are as ParseFile's.
func ParseYAML(data []byte, name, base string, kind Kind) (Raw, []string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	raw := Raw{}
	if doc.Kind == 0 { // empty file
		return raw, nil, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("a %s is a mapping of keys to values, like 'description: nightly run'", kind)
	}
	var warn []string
	bad := &unknownKeys{kind: kind}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		key, ok := lookup(kind, kn.Value)
		if !ok {
			if why, ign := ignoredKey(kn.Value); ign {
				warn = append(warn, fmt.Sprintf("%s:%d: %s is ignored: %s", name, kn.Line, kn.Value, why))
				continue
			}
			bad.keys = append(bad.keys, badKey{at: fmt.Sprintf("line %d", kn.Line), name: kn.Value})
			continue
		}
		if _, dup := raw[key.Name]; dup {
			return nil, nil, fmt.Errorf("line %d: key %q given twice", kn.Line, key.Name)
		}
		v := Value{At: fmt.Sprintf("%s:%d", name, kn.Line), Base: base}
		switch vn.Kind {
		case yaml.ScalarNode:
			if vn.Tag != "!!null" {
				v.S = vn.Value
			}
			if key.Type == Items {
				return nil, nil, fmt.Errorf("line %d: %s is a list: write each item on its own line as '- item'", kn.Line, key.Name)
			}
		case yaml.SequenceNode:
			if !key.Type.takesList() {
				return nil, nil, fmt.Errorf("line %d: %s takes one value, not a list", kn.Line, key.Name)
			}
			v.IsList = true
			v.List = make([]string, 0, len(vn.Content))
			for _, e := range vn.Content {
				if e.Kind != yaml.ScalarNode {
					return nil, nil, fmt.Errorf("line %d: the entries of %s must be plain values", e.Line, key.Name)
				}
				v.List = append(v.List, e.Value)
			}
		case yaml.MappingNode:
			if key.Type != Env {
				return nil, nil, fmt.Errorf("line %d: %s takes a value, not a mapping", kn.Line, key.Name)
			}
			v.IsList = true
			for j := 0; j+1 < len(vn.Content); j += 2 {
				k, e := vn.Content[j], vn.Content[j+1]
				if e.Kind != yaml.ScalarNode {
					return nil, nil, fmt.Errorf("line %d: environment variable %s must have a plain value", e.Line, k.Value)
				}
				val := e.Value
				if e.Tag == "!!null" {
					val = ""
				}
				v.List = append(v.List, k.Value+"="+val)
			}
		default:
			return nil, nil, fmt.Errorf("line %d: unexpected value for %s", kn.Line, key.Name)
		}
		raw[key.Name] = v
	}
	if len(bad.keys) > 0 {
		return nil, nil, bad
	}
	return raw, warn, nil
}

// ParseProperties reads a DUCC (Java) properties file: `key = value`,
// `key: value` or `key value`; # and ! start comments; a line ending in a
// backslash continues on the next; backslash escapes as in Java; ${VAR} is
// replaced by an earlier key of the file or else env(VAR) ($${ writes a
// literal ${); an undefined variable is left as written, with a warning,
// as DUCC does. A key given twice keeps its last value. All unknown keys
// are named in one error; the warnings are as ParseFile's.
func ParseProperties(data []byte, name, base string, env func(string) (string, bool), kind Kind) (Raw, []string, error) {
	if !utf8.Valid(data) {
		return nil, nil, errors.New("not UTF-8 text")
	}
	raw := Raw{}
	vars := map[string]string{}
	var warn []string
	bad := &unknownKeys{kind: kind}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for continues(line) {
			line = line[:len(line)-1]
			if !sc.Scan() {
				break
			}
			lineNo++
			line += strings.TrimLeft(sc.Text(), " \t\f")
		}
		k, v := splitProperty(line)
		name2, err := unescapeProperty(k)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", start, err)
		}
		val, err := unescapeProperty(v)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", start, err)
		}
		key, ok := lookup(kind, name2)
		if !ok {
			if why, ign := ignoredKey(name2); ign {
				warn = append(warn, fmt.Sprintf("%s:%d: %s is ignored: %s", name, start, name2, why))
			} else {
				bad.keys = append(bad.keys, badKey{at: fmt.Sprintf("line %d", start), name: name2})
			}
			continue
		}
		if key.Type == Items {
			return nil, nil, fmt.Errorf("line %d: %s is only accepted in YAML specs; in a properties file use input_file, or pipe the items on standard input", start, key.Name)
		}
		val, undefined, err := substitute(val, vars, env)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", start, err)
		}
		for _, u := range undefined {
			if brokerResolved(kind, key.Name, u) {
				continue // the head resolves it (uimaas.go): nothing is left as written
			}
			warn = append(warn, fmt.Sprintf("%s:%d: ${%s} is not defined in the file or the environment; it is left as written", name, start, u))
		}
		vars[key.Name] = val
		raw[key.Name] = Value{S: val, At: fmt.Sprintf("%s:%d", name, start), Base: base}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(bad.keys) > 0 {
		return nil, nil, bad
	}
	return raw, warn, nil
}

// continues reports whether a properties line ends in an odd number of
// backslashes (a continuation).
func continues(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// white space, as java.util.Properties does.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	i = min(i, len(line))
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, strings.TrimRight(rest, " \t\f\r")
}

// unescapeProperty undoes Java properties escapes: \t \n \r \f \uXXXX, and
// \x for any other x.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`bad \u escape in %q: write four hex digits, like \u00e9`, s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf(`bad \u escape in %q: write four hex digits, like \u00e9`, s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// substitute replaces ${VAR} by vars[VAR] or else env(VAR); an undefined
// ${VAR} stays as written and its name is returned in undefined.
func substitute(s string, vars map[string]string, env func(string) (string, bool)) (out string, undefined []string, err error) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), undefined, nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			return "", nil, fmt.Errorf("unclosed ${ in %q: write ${NAME}", s)
		}
		name := s[i+2 : i+2+j]
		if name == "" {
			return "", nil, errors.New("empty ${}: write ${NAME}")
		}
		v, ok := vars[name]
		if !ok && env != nil {
			v, ok = env(name)
		}
		if !ok {
			undefined = append(undefined, name)
			v = "${" + name + "}"
		}
		b.WriteString(v)
		s = s[i+3+j:]
	}
}
