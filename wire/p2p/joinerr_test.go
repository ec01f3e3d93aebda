package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/multiformats/go-multiaddr"
)

func TestExplainJoinError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, never speak: a peer with another key
		}
	}()
	open := multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", ln.Addr().(*net.TCPAddr).Port))
	closedLn, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", closedLn.Addr().(*net.TCPAddr).Port))
	closedLn.Close()
	timedOut := fmt.Errorf("failed to dial: %w", context.DeadlineExceeded)
	for _, tc := range []struct {
		name     string
		addr     multiaddr.Multiaddr
		err      error
		mismatch bool
	}{
		{"handshake timed out, host there", open, timedOut, true},
		{"timed out, nothing listening", closed, timedOut, false},
		{"another failure", open, errors.New("no route to host"), false},
		{"no error", open, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ExplainJoinError(context.Background(), tc.addr, tc.err)
			if errors.Is(got, ErrClusterKeyMismatch) != tc.mismatch {
				t.Errorf("ExplainJoinError(%v) = %v; key mismatch %v, want %v", tc.err, got, !tc.mismatch, tc.mismatch)
			}
		})
	}
}
