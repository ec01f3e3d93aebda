package cli

import (
	"context"
	"errors"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// TestClientMalformedAs: an --as that would break the request is the
// caller's usage error, said before anything is sent (no agent needed).
func TestClientMalformedAs(t *testing.T) {
	c := newClient(&globals{socket: "/nonexistent/ducc.sock", as: "bob\r\nX-Other: 1"})
	var out wire.StatusInfo
	err := c.call(context.Background(), wire.MethodStatus, wire.Empty{}, &out)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("call with a line break in --as: %v, want a usage error", err)
	}
}
