package units

import "testing"

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		word string
		want string
	}{
		{1, "error", "1 error"},
		{0, "error", "0 errors"},
		{2, "process", "2 processes"},
		{1, "process", "1 process"},
		{3, "entry", "3 entries"},
		{2, "key", "2 keys"},
		{5, "instance", "5 instances"},
	} {
		if got := Plural(tc.n, tc.word); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.word, got, tc.want)
		}
	}
}
