package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// ModifiableKeys lists the registration keys `ducc services modify` takes.
func ModifiableKeys() []string {
	var out []string
	for _, k := range Keys(KindService) {
		if k.Modify {
			out = append(out, k.Name)
		}
	}
	return out
}

// CheckModify refuses keys that `ducc services modify` cannot change.
func CheckModify(keys []string) error {
	if len(keys) == 0 {
		return fmt.Errorf("nothing to modify: give keys like --instances 3 or --autostart")
	}
	mod := ModifiableKeys()
	for _, k := range keys {
		if !slices.Contains(mod, k) {
			return fmt.Errorf("%s cannot be modified; modifiable keys are: %s (unregister and register again for others)", k, strings.Join(mod, ", "))
		}
	}
	return nil
}

// Merge sets key of dst to its value in src, as `ducc services modify`
// does; lists are copied. It reports false for a key that cannot be
// modified (dst is unchanged).
func Merge(dst, src *wire.ServiceSpec, key string) bool {
	k, ok := lookup(KindService, key)
	if !ok || !k.Modify {
		return false
	}
	u := k.use(KindService)
	switch d := u.field(dst).(type) {
	case *string:
		*d = *u.field(src).(*string)
	case *int:
		*d = *u.field(src).(*int)
	case *int64:
		*d = *u.field(src).(*int64)
	case *bool:
		*d = *u.field(src).(*bool)
	case *[]string:
		*d = slices.Clone(*u.field(src).(*[]string))
	default:
		return false
	}
	return true
}

// MergeKeys merges keys from src into dst in order.
func MergeKeys(dst, src *wire.ServiceSpec, keys []string) {
	for _, k := range keys {
		Merge(dst, src, k)
	}
}
