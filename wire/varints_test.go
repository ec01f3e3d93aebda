package wire

import (
	"reflect"
	"testing"
)

func TestPackedVarints(t *testing.T) {
	us := []uint64{0, 1, 127, 128, 1 << 40}
	var b []byte
	for _, v := range us {
		b = AppendUvarint(b, v)
	}
	if got, err := Uvarints(b, len(us)); err != nil || !reflect.DeepEqual(got, us) {
		t.Errorf("Uvarints: %v %v", got, err)
	}
	is := []int64{0, -1, 63, -64, 1 << 50}
	var c []byte
	for _, v := range is {
		c = AppendVarint(c, v)
	}
	if got, err := Varints(c, len(is)); err != nil || !reflect.DeepEqual(got, is) {
		t.Errorf("Varints: %v %v", got, err)
	}
	bad := []struct {
		name string
		b    []byte
		n    int
	}{
		{"too few", b, len(us) + 1},
		{"trailing bytes", b, len(us) - 1},
		{"cut in a number", []byte{0x80}, 1},
		{"empty", nil, 1},
	}
	for _, tc := range bad {
		if _, err := Uvarints(tc.b, tc.n); err == nil {
			t.Errorf("Uvarints %s: no error", tc.name)
		}
		if _, err := Varints(tc.b, tc.n); err == nil {
			t.Errorf("Varints %s: no error", tc.name)
		}
	}
}
