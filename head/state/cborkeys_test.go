package state

import (
	"testing"

	"github.com/ducc-project/ducc/wire/wiretest"
)

// The replicated log and the snapshots are CBOR: no two fields of one
// struct may share a key.
func TestCBORKeysUnique(t *testing.T) {
	for _, v := range []any{commandRecord{}, Work{}, snapHeader{}, Record{}} {
		wiretest.CheckCBORKeys(t, v)
	}
}
