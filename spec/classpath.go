package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// classpathJars expands a Java class path entry that ends in * as java
// does: dir/* (or * alone, the current folder) stands for the jar files
// in dir (named .jar or .JAR), sorted. wildcard is false for any other
// entry; err says why a wildcard's folder could not be read.
func classpathJars(entry string) (jars []string, wildcard bool, err error) {
	if entry != "*" && !strings.HasSuffix(entry, "/*") {
		return nil, false, nil
	}
	dir := strings.TrimSuffix(entry, "*")
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, true, err
	}
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".jar") || strings.HasSuffix(n, ".JAR")) {
			jars = append(jars, filepath.Join(dir, n))
		}
	}
	slices.Sort(jars)
	return jars, true, nil
}
