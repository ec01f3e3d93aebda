package spec

import (
	"fmt"

	"github.com/spf13/pflag"
)

// AddFlags adds a flag for every key of kind that has one; keep, if not
// nil, picks the keys. Bool keys are bool flags; Env and List keys may be
// given several times (Env entries add up, List values too); every other
// key is a string flag read like the key's value in a file, so that flags
// and files say the same things about bad values.
func AddFlags(fs *pflag.FlagSet, kind Kind, keep func(*Key) bool) {
	for _, k := range Keys(kind) {
		u := k.use(kind)
		if u.flag == "-" || (keep != nil && !keep(k)) {
			continue
		}
		help := k.Help(kind)
		add := func(name, help string) {
			switch k.Type {
			case Bool:
				fs.Bool(name, false, help)
			case Env, List:
				fs.StringArray(name, nil, help+"; may be repeated")
			default:
				fs.Var(&flagValue{typ: typeNames[k.Type]}, name, help)
			}
		}
		add(u.flag, help)
		for _, a := range u.also {
			add(a, "same as --"+u.flag)
		}
		for _, a := range u.hidden {
			add(a, "same as --"+u.flag)
			_ = fs.MarkHidden(a)
		}
	}
}

// FlagValues lays the flags of kind that were given over raw (made by
// AddFlags on fs); cwd resolves relative paths. A flag replaces the file's
// value, except Env flags, which add to the file's environment (for a
// name given twice the last entry wins).
func FlagValues(fs *pflag.FlagSet, kind Kind, raw Raw, cwd string) error {
	for _, k := range Keys(kind) {
		u := k.use(kind)
		if u.flag == "-" {
			continue
		}
		names := append(append([]string{u.flag}, u.also...), u.hidden...)
		var given []string
		for _, n := range names {
			if f := fs.Lookup(n); f != nil && f.Changed {
				given = append(given, n)
			}
		}
		if len(given) == 0 {
			continue
		}
		// The flag the user typed (the last one given wins).
		at := "--" + given[len(given)-1]
		switch k.Type {
		case Bool:
			b, err := fs.GetBool(given[len(given)-1])
			if err != nil {
				return err
			}
			raw[k.Name] = Value{S: fmt.Sprint(b), At: at}
		case Env:
			var env []string
			if v, ok := raw[k.Name]; ok {
				w, err := words(v)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", v.At, k.Name, err)
				}
				env = w
			}
			for _, n := range given {
				vals, err := fs.GetStringArray(n)
				if err != nil {
					return err
				}
				for _, s := range vals {
					w, err := SplitShell(s)
					if err != nil {
						return fmt.Errorf("--%s: %w", n, err)
					}
					env = append(env, w...)
				}
			}
			raw[k.Name] = Value{List: env, IsList: true, At: at, Base: cwd}
		case List:
			var l []string
			for _, n := range given {
				vals, err := fs.GetStringArray(n)
				if err != nil {
					return err
				}
				for _, s := range vals {
					l = append(l, SplitList(s)...)
				}
			}
			raw[k.Name] = Value{List: l, IsList: true, At: at, Base: cwd}
		default:
			s := fs.Lookup(given[len(given)-1]).Value.String()
			raw[k.Name] = Value{S: s, At: at, Base: cwd}
		}
	}
	return nil
}

// flagValue holds a flag's text as given, to be read like the key's value
// in a file; its type name tells the help what to write.
type flagValue struct{ s, typ string }

func (v *flagValue) String() string     { return v.s }
func (v *flagValue) Set(s string) error { v.s = s; return nil }
func (v *flagValue) Type() string       { return v.typ }

// typeNames name the values of string flags in the help.
var typeNames = map[Type]string{
	Text: "string", String: "string", Executable: "command", Path: "path", Args: "args",
	Int: "int", Size: "size", Minutes: "minutes", Millis: "ms",
}
