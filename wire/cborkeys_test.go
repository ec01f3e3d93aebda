package wire_test

import (
	"testing"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/wiretest"
)

func TestCBORKeysUnique(t *testing.T) {
	for _, m := range wire.Methods() {
		wiretest.CheckCBORKeys(t, m.NewRequest())
		wiretest.CheckCBORKeys(t, m.NewReply())
	}
	for _, v := range []any{wire.Heartbeat{}, wire.DesiredState{}, wire.LeaderAnnounce{}, wire.LogRequest{}, wire.LogAccess{}, wire.LogChunk{}} {
		wiretest.CheckCBORKeys(t, v)
	}
}
