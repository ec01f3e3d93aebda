package wiretest

import (
	"reflect"
	"strings"
	"testing"
)

// CheckCBORKeys reports every struct reachable from v whose fields share a
// CBOR key number: two fields on one key would decode into each other.
// Branches that add fields pick numbers independently; this catches the
// collision when they meet.
func CheckCBORKeys(t testing.TB, v any) {
	t.Helper()
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
			if ty.Kind() == reflect.Map {
				walk(ty.Key())
			}
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		keys := map[string]string{}
		for i := range ty.NumField() {
			f := ty.Field(i)
			if k, _, _ := strings.Cut(f.Tag.Get("cbor"), ","); k != "" && k != "-" {
				if other, dup := keys[k]; dup {
					t.Errorf("%s: fields %s and %s share CBOR key %s", ty, other, f.Name, k)
				}
				keys[k] = f.Name
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(v))
}
