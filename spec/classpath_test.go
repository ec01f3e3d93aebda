package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestClasspathJars(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.jar", "B.JAR", "c.zip", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.jar"), 0o755); err != nil { // a folder, not a jar
		t.Fatal(err)
	}
	tests := []struct {
		entry    string
		jars     []string
		wildcard bool
		err      bool
	}{
		{dir + "/*", []string{filepath.Join(dir, "B.JAR"), filepath.Join(dir, "a.jar")}, true, false},
		{filepath.Join(dir, "missing") + "/*", nil, true, true},
		{filepath.Join(dir, "a.jar"), nil, false, false},
		{dir, nil, false, false},
		{dir + "/x*", nil, false, false}, // java expands only a whole * entry
	}
	for _, tc := range tests {
		jars, wildcard, err := classpathJars(tc.entry)
		if !slices.Equal(jars, tc.jars) || wildcard != tc.wildcard || (err != nil) != tc.err {
			t.Errorf("classpathJars(%q) = %q, %v, %v; want %q, %v, error %v", tc.entry, jars, wildcard, err, tc.jars, tc.wildcard, tc.err)
		}
	}
}
