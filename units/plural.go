package units

import (
	"strconv"
	"strings"
)

// Plural counts n of word in English: "1 error", "2 errors", "3
// processes", "2 entries". It is the one place the command line, the head
// and the dashboard say how many of something there are.
func Plural(n int, word string) string {
	s := strconv.Itoa(n) + " "
	switch {
	case n == 1:
		return s + word
	case strings.HasSuffix(word, "s"):
		return s + word + "es"
	case strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ey"):
		return s + strings.TrimSuffix(word, "y") + "ies"
	}
	return s + word + "s"
}
