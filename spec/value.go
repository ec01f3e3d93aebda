package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/units"
)

// Value is one key's value as written: a scalar, or a list (a YAML list or
// map, or flags given several times), with where it was written.
type Value struct {
	S      string
	List   []string
	IsList bool
	// At says where the value was written, for messages: "job.yaml:12",
	// "--process-memory-size".
	At string
	// Base is the folder relative paths are resolved against ("" = keep
	// them relative).
	Base string
}

// Raw is a spec as read, before interpretation: key name → value.
type Raw map[string]Value

// set interprets v and stores it in the field of target that kind uses
// for k.
func set(k *Key, u *use, target any, v Value) error {
	if v.IsList && !k.Type.takesList() {
		return errors.New("takes one value, not a list")
	}
	scalar := strings.TrimSpace(v.S)
	ptr := u.field(target)
	switch k.Type {
	case Text:
		*ptr.(*string) = v.S
	case String:
		if k.Check != nil {
			s, err := k.Check(scalar)
			if err != nil {
				return err
			}
			scalar = s
		}
		*ptr.(*string) = scalar
	case Executable:
		// A relative path (with a slash) is relative to where it was
		// written; a bare name is looked up in PATH on the node.
		p := expandHome(scalar)
		if strings.Contains(p, "/") && !filepath.IsAbs(p) && v.Base != "" {
			p = filepath.Join(v.Base, p)
		}
		*ptr.(*string) = p
	case Path:
		p := expandHome(scalar)
		if p != "" && p != "-" && !filepath.IsAbs(p) && v.Base != "" {
			p = filepath.Join(v.Base, p)
		}
		*ptr.(*string) = p
	case Args:
		args, err := words(v)
		if err != nil {
			return err
		}
		*ptr.(*[]string) = args
	case List:
		l := v.List
		if !v.IsList {
			l = SplitList(v.S)
		}
		*ptr.(*[]string) = l
	case Env:
		env, err := words(v)
		if err != nil {
			return err
		}
		for _, e := range env {
			name, _, ok := strings.Cut(e, "=")
			if !ok {
				// DUCC's forms: NAME copies the submitter's NAME, PREFIX*
				// every variable starting with PREFIX (see ExpandEnv).
				ok = envName(strings.TrimSuffix(name, "*"))
			}
			if !ok || name == "" || strings.ContainsAny(name, " \t") {
				return fmt.Errorf("%q is not NAME=VALUE, NAME or PREFIX*: write environment entries like \"LANG=C.UTF-8 MODEL=/data/m1 HOME UIMA*\"", e)
			}
		}
		p := ptr.(*[]string)
		*p = dedupEnv(append(*p, env...))
	case Int:
		n, err := strconv.ParseInt(scalar, 10, 32)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", v.S)
		}
		if n < k.Min {
			if k.Min == 0 {
				return fmt.Errorf("must not be negative, got %d", n)
			}
			return fmt.Errorf("must be at least %d, got %d", k.Min, n)
		}
		*ptr.(*int) = int(n)
	case Size:
		b, err := units.ParseSize(scalar)
		if err != nil {
			return err
		}
		if b <= 0 {
			return fmt.Errorf("%q: the size must be positive, like 4G or 512M", v.S)
		}
		*ptr.(*int64) = b
	case Minutes:
		ms, err := units.ParseMinutes(scalar)
		if err != nil {
			return err
		}
		*ptr.(*int64) = ms
	case Millis:
		ms, err := units.ParseMillis(scalar)
		if err != nil {
			return err
		}
		*ptr.(*int64) = ms
	case Bool:
		b, err := parseBool(scalar)
		if err != nil {
			return err
		}
		*ptr.(*bool) = b
	case Items:
		if !v.IsList {
			return errors.New("input_items is a YAML list of items")
		}
		*ptr.(*[]string) = v.List
	default:
		return fmt.Errorf("key %s has unknown type %d", k.Name, k.Type)
	}
	return nil
}

// words is a list value, or a scalar split like a shell would.
func words(v Value) ([]string, error) {
	if v.IsList {
		return v.List, nil
	}
	return SplitShell(v.S)
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "true", "yes", "on", "1", "y", "t":
		return true, nil
	case "false", "no", "off", "0", "n", "f":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return h + p[1:]
		}
	}
	return p
}

// SplitList splits "a, b c" into [a b c]; nothing gives nil.
func SplitList(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(f) == 0 {
		return nil
	}
	return f
}

// SplitShell splits a string into words the way a POSIX shell would,
// without expansions: white space separates words, '...' is literal,
// "..." allows \" \\ \$ \` escapes, and a backslash outside quotes escapes
// the next character.
func SplitShell(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		inTok bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inTok {
				out = append(out, cur.String())
				cur.Reset()
				inTok = false
			}
		case c == '\'':
			inTok = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inTok = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf(`unterminated " in %q`, s)
			}
		case c == '\\':
			inTok = true
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		default:
			inTok = true
			cur.WriteByte(c)
		}
	}
	if inTok {
		out = append(out, cur.String())
	}
	return out, nil
}

// dedupEnv keeps one entry per name: the last one given, in the place of
// the first (so that flags override the file).
func dedupEnv(env []string) []string {
	if len(env) < 2 {
		return env
	}
	pos := map[string]int{}
	out := make([]string, 0, len(env))
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if i, ok := pos[name]; ok {
			out[i] = e
			continue
		}
		pos[name] = len(out)
		out = append(out, e)
	}
	return out
}

// envName reports whether s is a plain environment variable name.
func envName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && (i == 0 || !(c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// ExpandEnv resolves DUCC's short environment forms against the
// submitter's environment (os.Environ()): NAME alone copies the
// submitter's NAME (left out if unset), PREFIX* copies every variable
// whose name starts with PREFIX. NAME=VALUE entries stay; for a name given
// twice the last entry wins.
func ExpandEnv(env, environ []string) []string {
	var out []string
	for _, e := range env {
		if strings.Contains(e, "=") {
			out = append(out, e)
			continue
		}
		if prefix, ok := strings.CutSuffix(e, "*"); ok {
			for _, kv := range environ {
				if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, prefix) {
					out = append(out, kv)
				}
			}
			continue
		}
		for _, kv := range environ {
			if name, _, _ := strings.Cut(kv, "="); name == e {
				out = append(out, kv)
			}
		}
	}
	return dedupEnv(out)
}
