package p2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
)

func rpcPair(t testing.TB, handler Handler) (client, server host.Host) {
	t.Helper()
	psk := testKey(t)
	server, client = newTestHost(t, psk), newTestHost(t, psk)
	Serve(server, handler, WithServeLogger(testLogger(t)))
	client.Peerstore().AddAddrs(server.ID(), server.Addrs(), time.Hour)
	return client, server
}

func TestCallRoundTrip(t *testing.T) {
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		switch req.Method {
		case wire.MethodShow:
			var r wire.IDRequest
			if err := req.DecodeBody(&r); err != nil {
				return nil, err
			}
			return wire.WorkInfo{ID: r.ID, User: req.Caller.User, Kind: "MR", State: "Running"}, nil
		case wire.MethodReport:
			return nil, nil
		case "usage":
			return nil, wire.Errorf(wire.CodeUsage, "unknown class %q; classes are: normal, high", "hgih")
		case "plain":
			return nil, errors.New("boom")
		case "panic":
			panic("handler bug")
		}
		return nil, wire.Errorf(wire.CodeUsage, "unknown method %q", req.Method)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	caller := wire.Caller{UID: 1000, GID: 1000, User: "alice"}

	var info wire.WorkInfo
	if err := Call(ctx, client, server.ID(), wire.MethodShow, caller, wire.IDRequest{ID: 42}, &info); err != nil {
		t.Fatal(err)
	}
	if info.ID != 42 || info.User != "alice" {
		t.Fatalf("got %+v", info)
	}
	if err := Call(ctx, client, server.ID(), wire.MethodReport, caller, wire.Report{Node: "n1"}, nil); err != nil {
		t.Fatal(err)
	}

	err := Call(ctx, client, server.ID(), "usage", caller, nil, nil)
	var ce *wire.CodedError
	if !errors.As(err, &ce) || ce.Code != wire.CodeUsage || !strings.Contains(err.Error(), `unknown class "hgih"`) {
		t.Fatalf("usage error: %v", err)
	}
	if err := Call(ctx, client, server.ID(), "plain", caller, nil, nil); wire.ErrorCode(err) != wire.CodeError || err.Error() != "boom" {
		t.Fatalf("plain error: %v (code %d)", err, wire.ErrorCode(err))
	}
	if err := Call(ctx, client, server.ID(), "panic", caller, nil, nil); wire.ErrorCode(err) != wire.CodeError || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("panic: %v", err)
	}
	// A bad body is a usage error.
	if err := Call(ctx, client, server.ID(), wire.MethodShow, caller, "not a struct", &info); wire.ErrorCode(err) != wire.CodeUsage {
		t.Fatalf("bad body: %v", err)
	}
}

func TestCallUnreachable(t *testing.T) {
	client := newTestHost(t, testKey(t))
	other := newTestHost(t, testKey(t)) // different key
	client.Peerstore().AddAddrs(other.ID(), other.Addrs(), time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := Call(ctx, client, other.ID(), wire.MethodStatus, wire.Caller{}, nil, nil)
	if wire.ErrorCode(err) != wire.CodeUnreachable || !errors.Is(err, ErrClusterKeyMismatch) {
		t.Fatalf("got %v (code %d)", err, wire.ErrorCode(err))
	}
}

func TestCallCancelReachesHandler(t *testing.T) {
	handlerDone := make(chan error, 1)
	started := make(chan struct{})
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		close(started)
		select {
		case <-ctx.Done():
			handlerDone <- ctx.Err()
		case <-time.After(10 * time.Second):
			handlerDone <- errors.New("handler context not cancelled")
		}
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Call(ctx, client, server.ID(), wire.MethodWait, wire.Caller{}, wire.WaitRequest{ID: 1}, nil)
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
	if err := <-handlerDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler: %v", err)
	}
}

func TestCallLongAndDeadline(t *testing.T) {
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		var w wire.WaitRequest
		if err := req.DecodeBody(&w); err != nil {
			return nil, err
		}
		select {
		case <-time.After(time.Duration(w.TimeoutMS) * time.Millisecond):
			return wire.WorkInfo{ID: w.ID, State: "Completed"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	// A call longer than any server-side I/O timeout used for the request
	// itself still works when ctx allows it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var info wire.WorkInfo
	if err := Call(ctx, client, server.ID(), wire.MethodWait, wire.Caller{}, wire.WaitRequest{ID: 5, TimeoutMS: 1500}, &info); err != nil || info.State != "Completed" {
		t.Fatalf("long call: %v %+v", err, info)
	}
	// The ctx deadline ends a call: the handler would answer only after a
	// minute, so the call can end sooner only by its deadline (the 30 s
	// below only guards against a hang).
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	errc := make(chan error, 1)
	go func() {
		var late wire.WorkInfo
		errc <- Call(short, client, server.ID(), wire.MethodWait, wire.Caller{}, wire.WaitRequest{ID: 5, TimeoutMS: 60000}, &late)
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call past its deadline: %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("call hung past its ctx deadline")
	}
}

func TestCallConcurrent(t *testing.T) {
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		var r wire.IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		time.Sleep(time.Millisecond)
		return wire.SubmitReply{ID: r.ID * 2}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 500
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rep wire.SubmitReply
			if err := Call(ctx, client, server.ID(), wire.MethodRun, wire.Caller{}, wire.IDRequest{ID: uint64(i)}, &rep); err != nil {
				errs <- err
				return
			}
			if rep.ID != uint64(i)*2 {
				errs <- fmt.Errorf("call %d: got %d", i, rep.ID)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestCallLargeBody(t *testing.T) {
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		var r wire.RunRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		return wire.WorkInfo{Description: r.Description}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	desc := strings.Repeat("d", 8<<20)
	var info wire.WorkInfo
	if err := Call(ctx, client, server.ID(), wire.MethodRun, wire.Caller{}, wire.RunRequest{Description: desc}, &info); err != nil || len(info.Description) != len(desc) {
		t.Fatalf("8 MiB call: %v", err)
	}
	err := Call(ctx, client, server.ID(), wire.MethodRun, wire.Caller{}, wire.RunRequest{Description: desc + desc}, &info)
	if wire.ErrorCode(err) != wire.CodeUsage || !strings.Contains(err.Error(), "exceeds limit of 16 MiB") {
		t.Fatalf("16 MiB call: %v", err)
	}
}

func BenchmarkCall(b *testing.B) {
	client, server := rpcPair(b, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		var r wire.IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		return wire.WorkInfo{ID: r.ID, State: "Running", User: req.Caller.User}, nil
	})
	ctx := context.Background()
	caller := wire.Caller{UID: 1000, User: "alice"}
	var info wire.WorkInfo
	if err := Call(ctx, client, server.ID(), wire.MethodShow, caller, wire.IDRequest{ID: 1}, &info); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Call(ctx, client, server.ID(), wire.MethodShow, caller, wire.IDRequest{ID: uint64(i)}, &info); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallParallel(b *testing.B) {
	client, server := rpcPair(b, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		return wire.Empty{}, nil
	})
	ctx := context.Background()
	if err := Call(ctx, client, server.ID(), wire.MethodStatus, wire.Caller{}, nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := Call(ctx, client, server.ID(), wire.MethodStatus, wire.Caller{}, nil, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func TestCallLocal(t *testing.T) {
	h := newTestHost(t, testKey(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := Call(ctx, h, h.ID(), wire.MethodStatus, wire.Caller{}, nil, nil); wire.ErrorCode(err) != wire.CodeUnreachable {
		t.Fatalf("a host calling itself over the network: %v", err)
	}
	handler := func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		if from != h.ID() {
			return nil, fmt.Errorf("from %s", from)
		}
		switch req.Method {
		case "panic":
			panic("boom")
		case "plain":
			return nil, errors.New("plain")
		}
		var r wire.IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		if r.ID == 0 {
			return nil, wire.Errorf(wire.CodeUsage, "id required")
		}
		return wire.StatusInfo{Head: "self", RaftIndex: r.ID}, nil
	}
	var st wire.StatusInfo
	tests := []struct {
		name, method string
		req          any
		wantCode     int
	}{
		{"ok", wire.MethodStatus, wire.IDRequest{ID: 9}, wire.CodeOK},
		{"coded error", wire.MethodStatus, wire.IDRequest{}, wire.CodeUsage},
		{"plain error", "plain", nil, wire.CodeError},
		{"panic", "panic", nil, wire.CodeError},
		{"bad body", wire.MethodStatus, "not a struct", wire.CodeUsage},
		{"too large", wire.MethodStatus, strings.Repeat("x", wire.MaxMessageSize+1), wire.CodeUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CallLocal(ctx, handler, h.ID(), tc.method, wire.Caller{User: "u"}, tc.req, &st, WithServeLogger(testLogger(t)))
			if wire.ErrorCode(err) != tc.wantCode {
				t.Fatalf("code %d (%v), want %d", wire.ErrorCode(err), err, tc.wantCode)
			}
			if err != nil {
				var ce *wire.CodedError
				if !errors.As(err, &ce) {
					t.Errorf("not a CodedError: %T", err)
				}
			}
		})
	}
	if st.Head != "self" || st.RaftIndex != 9 {
		t.Errorf("reply %+v", st)
	}
	done, stop := context.WithCancel(ctx)
	stop()
	if err := CallLocal(done, handler, h.ID(), wire.MethodStatus, wire.Caller{}, wire.IDRequest{ID: 1}, &st); wire.ErrorCode(err) != wire.CodeUnreachable {
		t.Errorf("call with an ended context: %v", err)
	}
}

// TestEncodedSize checks that the size of an envelope computed without
// encoding its body again is the size of its encoding.
func TestEncodedSize(t *testing.T) {
	bodies := []any{nil, wire.Empty{}, "x", strings.Repeat("y", 300), strings.Repeat("z", 70_000), []int{1, 2, 3}}
	for _, b := range bodies {
		var raw cbor.RawMessage
		if b != nil {
			var err error
			if raw, err = wire.Marshal(b); err != nil {
				t.Fatal(err)
			}
		}
		req := wire.Request{Method: wire.MethodStatus, Caller: wire.Caller{User: "alice", UID: 1000}, Body: raw}
		resp := wire.Response{Error: "e", Code: 2, Body: raw}
		for _, c := range []struct {
			v    any
			body *cbor.RawMessage
		}{{&req, &req.Body}, {&resp, &resp.Body}} {
			want, err := wire.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodedSize(c.v, c.body)
			if err != nil || got != len(want) {
				t.Errorf("body of %d bytes: encodedSize = %d, %v; encoding is %d bytes", len(raw), got, err, len(want))
			}
			if !bytes.Equal(*c.body, raw) {
				t.Errorf("encodedSize changed the body")
			}
		}
	}
}
