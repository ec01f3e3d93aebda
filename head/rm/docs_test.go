package rm

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The configuration reference of docs/scheduling.md names every key of
// Config, and its example parses with ParseConfig: a key added here
// without a line there fails this test.
func TestDocsReference(t *testing.T) {
	data, err := os.ReadFile("../../docs/scheduling.md")
	if err != nil {
		t.Fatal(err)
	}
	_, ref, ok := strings.Cut(string(data), "## Configuration reference")
	if !ok {
		t.Fatal(`docs/scheduling.md has no "## Configuration reference" section`)
	}
	ref, _, _ = strings.Cut(ref, "\n## ")

	_, example, ok := strings.Cut(ref, "```yaml\n")
	if !ok {
		t.Fatal("the reference has no yaml example")
	}
	example, _, _ = strings.Cut(example, "```")
	c, err := ParseConfig([]byte(example))
	if err != nil {
		t.Fatalf("the reference's example does not parse: %v", err)
	}
	if len(c.Nodepools) < 2 || len(c.Classes) < 3 || len(c.Placement) == 0 {
		t.Errorf("the example lost its pools, classes or placement: %+v", c)
	}

	// Every key, in a table cell or in the prose, as `key`.
	var walk func(reflect.Type, string)
	seen := map[reflect.Type]bool{}
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Slice || ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" {
				continue
			}
			if !strings.Contains(ref, "`"+key+"`") && !strings.Contains(ref, "`"+key+":`") {
				t.Errorf("docs/scheduling.md, Configuration reference: key %s%s is not described", path, key)
			}
			if !strings.Contains(example, key+":") {
				t.Errorf("docs/scheduling.md, Configuration reference: the example does not show %s%s", path, key)
			}
			walk(f.Type, path+key+".")
		}
	}
	walk(reflect.TypeOf(Config{}), "")
}
