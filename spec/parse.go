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
// a properties file may name an environment variable.
func ParseFile(path string, kind Kind) (Raw, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", kind, err)
	}
	base := filepath.Dir(path)
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		raw, err := ParseYAML(data, path, base, kind)
		if err != nil {
			return nil, fmt.Errorf("%s %s (YAML): %w", kind, path, err)
		}
		return raw, nil
	}
	raw, perr := ParseProperties(data, path, base, os.LookupEnv, kind)
	if perr == nil {
		return raw, nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".properties", ".job", ".txt", ".svc":
		return nil, fmt.Errorf("%s %s (properties): %w", kind, path, perr)
	}
	raw, yerr := ParseYAML(data, path, base, kind)
	if yerr == nil {
		return raw, nil
	}
	return nil, fmt.Errorf("%s %s is neither a properties file (%v) nor YAML (%v); name it .yaml or .properties to pick one", kind, path, perr, yerr)
}

// ParseYAML reads a YAML spec strictly: one mapping, known keys only, no
// duplicates. name is the file's name for messages; base is the folder
// relative paths are resolved against.
func ParseYAML(data []byte, name, base string, kind Kind) (Raw, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	raw := Raw{}
	if doc.Kind == 0 { // empty file
		return raw, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("a %s is a mapping of keys to values, like 'description: nightly run'", kind)
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		key, ok := lookup(kind, kn.Value)
		if !ok {
			return nil, fmt.Errorf("line %d: %w", kn.Line, unknown(kind, kn.Value))
		}
		if _, dup := raw[key.Name]; dup {
			return nil, fmt.Errorf("line %d: key %q given twice", kn.Line, key.Name)
		}
		v := Value{At: fmt.Sprintf("%s:%d", name, kn.Line), Base: base}
		switch vn.Kind {
		case yaml.ScalarNode:
			if vn.Tag != "!!null" {
				v.S = vn.Value
			}
			if key.Type == Items {
				return nil, fmt.Errorf("line %d: %s is a list: write each item on its own line as '- item'", kn.Line, key.Name)
			}
		case yaml.SequenceNode:
			if !key.Type.takesList() {
				return nil, fmt.Errorf("line %d: %s takes one value, not a list", kn.Line, key.Name)
			}
			v.IsList = true
			v.List = make([]string, 0, len(vn.Content))
			for _, e := range vn.Content {
				if e.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: the entries of %s must be plain values", e.Line, key.Name)
				}
				v.List = append(v.List, e.Value)
			}
		case yaml.MappingNode:
			if key.Type != Env {
				return nil, fmt.Errorf("line %d: %s takes a value, not a mapping", kn.Line, key.Name)
			}
			v.IsList = true
			for j := 0; j+1 < len(vn.Content); j += 2 {
				k, e := vn.Content[j], vn.Content[j+1]
				if e.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: environment variable %s must have a plain value", e.Line, k.Value)
				}
				val := e.Value
				if e.Tag == "!!null" {
					val = ""
				}
				v.List = append(v.List, k.Value+"="+val)
			}
		default:
			return nil, fmt.Errorf("line %d: unexpected value for %s", kn.Line, key.Name)
		}
		raw[key.Name] = v
	}
	return raw, nil
}

// ParseProperties reads a DUCC (Java) properties file: `key = value`,
// `key: value` or `key value`; # and ! start comments; a line ending in a
// backslash continues on the next; backslash escapes as in Java; ${VAR} is
// replaced by an earlier key of the file or else env(VAR) ($${ writes a
// literal ${). A key given twice keeps its last value.
func ParseProperties(data []byte, name, base string, env func(string) (string, bool), kind Kind) (Raw, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not UTF-8 text")
	}
	raw := Raw{}
	vars := map[string]string{}
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
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		val, err := unescapeProperty(v)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		key, ok := lookup(kind, name2)
		if !ok {
			return nil, fmt.Errorf("line %d: %w", start, unknown(kind, name2))
		}
		if key.Type == Items {
			return nil, fmt.Errorf("line %d: %s is only accepted in YAML specs; in a properties file use input_file, or pipe the items on standard input", start, key.Name)
		}
		val, err = substitute(val, vars, env)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		vars[key.Name] = val
		raw[key.Name] = Value{S: val, At: fmt.Sprintf("%s:%d", name, start), Base: base}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return raw, nil
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

// substitute replaces ${VAR} by vars[VAR] or else env(VAR).
func substitute(s string, vars map[string]string, env func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
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
			return "", fmt.Errorf("unclosed ${ in %q: write ${NAME}", s)
		}
		name := s[i+2 : i+2+j]
		if name == "" {
			return "", errors.New("empty ${}: write ${NAME}")
		}
		v, ok := vars[name]
		if !ok && env != nil {
			v, ok = env(name)
		}
		if !ok {
			return "", fmt.Errorf("undefined variable ${%s}: define it earlier in the file or in the environment (write $${ for a literal ${)", name)
		}
		b.WriteString(v)
		s = s[i+3+j:]
	}
}
