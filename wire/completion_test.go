package wire

import (
	"strings"
	"testing"
)

// The completion reasons are one list: each has a short name of at most
// 11 characters that no other reason has, and reads back by either name.
func TestCompletions(t *testing.T) {
	all := Completions()
	if len(all) != 15 {
		t.Errorf("%d completion reasons, want 15: %v", len(all), all)
	}
	seen := map[string]Completion{}
	for _, c := range all {
		for _, name := range []string{string(c), c.Short()} {
			if other, ok := seen[strings.ToLower(name)]; ok && other != c {
				t.Errorf("%s and %s share the name %q", c, other, name)
			}
			seen[strings.ToLower(name)] = c
			if got, ok := ParseCompletion(strings.ToUpper(name)); !ok || got != c {
				t.Errorf("ParseCompletion(%q) = %q, %v; want %s", strings.ToUpper(name), got, ok, c)
			}
		}
		if len(c.Short()) > 11 || c.Means() == "" || !c.Known() {
			t.Errorf("%s: short name %q, meaning %q", c, c.Short(), c.Means())
		}
	}
	for _, bad := range []string{"", "bogus", "failed", "Exit(137)"} {
		if c, ok := ParseCompletion(bad); ok {
			t.Errorf("ParseCompletion(%q) = %s", bad, c)
		}
	}
	if Completion("Bogus").Short() != "Bogus" || Completion("Bogus").Known() {
		t.Error("an unknown reason is not its own short name")
	}
}
