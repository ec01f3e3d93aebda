package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
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
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *Request) (any, error) {
		switch req.Method {
		case MethodShow:
			var r IDRequest
			if err := req.DecodeBody(&r); err != nil {
				return nil, err
			}
			return WorkInfo{ID: r.ID, User: req.Caller.User, Kind: "MR", State: "Running"}, nil
		case MethodReport:
			return nil, nil
		case "usage":
			return nil, Errorf(CodeUsage, "unknown class %q; classes are: normal, high", "hgih")
		case "plain":
			return nil, errors.New("boom")
		case "panic":
			panic("handler bug")
		}
		return nil, Errorf(CodeUsage, "unknown method %q", req.Method)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	caller := Caller{UID: 1000, GID: 1000, User: "alice"}

	var info WorkInfo
	if err := Call(ctx, client, server.ID(), MethodShow, caller, IDRequest{ID: 42}, &info); err != nil {
		t.Fatal(err)
	}
	if info.ID != 42 || info.User != "alice" {
		t.Fatalf("got %+v", info)
	}
	if err := Call(ctx, client, server.ID(), MethodReport, caller, Report{Node: "n1"}, nil); err != nil {
		t.Fatal(err)
	}

	err := Call(ctx, client, server.ID(), "usage", caller, nil, nil)
	var ce *CodedError
	if !errors.As(err, &ce) || ce.Code != CodeUsage || !strings.Contains(err.Error(), `unknown class "hgih"`) {
		t.Fatalf("usage error: %v", err)
	}
	if err := Call(ctx, client, server.ID(), "plain", caller, nil, nil); ErrorCode(err) != CodeError || err.Error() != "boom" {
		t.Fatalf("plain error: %v (code %d)", err, ErrorCode(err))
	}
	if err := Call(ctx, client, server.ID(), "panic", caller, nil, nil); ErrorCode(err) != CodeError || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("panic: %v", err)
	}
	// A bad body is a usage error.
	if err := Call(ctx, client, server.ID(), MethodShow, caller, "not a struct", &info); ErrorCode(err) != CodeUsage {
		t.Fatalf("bad body: %v", err)
	}
}

func TestCallUnreachable(t *testing.T) {
	client := newTestHost(t, testKey(t))
	other := newTestHost(t, testKey(t)) // different key
	client.Peerstore().AddAddrs(other.ID(), other.Addrs(), time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := Call(ctx, client, other.ID(), MethodStatus, Caller{}, nil, nil)
	if ErrorCode(err) != CodeUnreachable || !errors.Is(err, ErrClusterKeyMismatch) {
		t.Fatalf("got %v (code %d)", err, ErrorCode(err))
	}
}

func TestCallCancelReachesHandler(t *testing.T) {
	handlerDone := make(chan error, 1)
	started := make(chan struct{})
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *Request) (any, error) {
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
	go func() { errc <- Call(ctx, client, server.ID(), MethodWait, Caller{}, WaitRequest{ID: 1}, nil) }()
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
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *Request) (any, error) {
		var w WaitRequest
		if err := req.DecodeBody(&w); err != nil {
			return nil, err
		}
		select {
		case <-time.After(time.Duration(w.TimeoutMS) * time.Millisecond):
			return WorkInfo{ID: w.ID, State: "Completed"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	// A call longer than any server-side I/O timeout used for the request
	// itself still works when ctx allows it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var info WorkInfo
	if err := Call(ctx, client, server.ID(), MethodWait, Caller{}, WaitRequest{ID: 5, TimeoutMS: 1500}, &info); err != nil || info.State != "Completed" {
		t.Fatalf("long call: %v %+v", err, info)
	}
	// The ctx deadline ends a call: the handler would answer only after a
	// minute, so the call can end sooner only by its deadline (the 30 s
	// below only guards against a hang).
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	errc := make(chan error, 1)
	go func() {
		var late WorkInfo
		errc <- Call(short, client, server.ID(), MethodWait, Caller{}, WaitRequest{ID: 5, TimeoutMS: 60000}, &late)
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
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *Request) (any, error) {
		var r IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		time.Sleep(time.Millisecond)
		return SubmitReply{ID: r.ID * 2}, nil
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
			var rep SubmitReply
			if err := Call(ctx, client, server.ID(), MethodRun, Caller{}, IDRequest{ID: uint64(i)}, &rep); err != nil {
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
	client, server := rpcPair(t, func(ctx context.Context, from peer.ID, req *Request) (any, error) {
		var r RunRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		return WorkInfo{Description: r.Description}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	desc := strings.Repeat("d", 8<<20)
	var info WorkInfo
	if err := Call(ctx, client, server.ID(), MethodRun, Caller{}, RunRequest{Description: desc}, &info); err != nil || len(info.Description) != len(desc) {
		t.Fatalf("8 MiB call: %v", err)
	}
	err := Call(ctx, client, server.ID(), MethodRun, Caller{}, RunRequest{Description: desc + desc}, &info)
	if ErrorCode(err) != CodeUsage || !strings.Contains(err.Error(), "exceeds limit of 16 MiB") {
		t.Fatalf("16 MiB call: %v", err)
	}
}

func BenchmarkCall(b *testing.B) {
	client, server := rpcPair(b, func(ctx context.Context, from peer.ID, req *Request) (any, error) {
		var r IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		return WorkInfo{ID: r.ID, State: "Running", User: req.Caller.User}, nil
	})
	ctx := context.Background()
	caller := Caller{UID: 1000, User: "alice"}
	var info WorkInfo
	if err := Call(ctx, client, server.ID(), MethodShow, caller, IDRequest{ID: 1}, &info); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Call(ctx, client, server.ID(), MethodShow, caller, IDRequest{ID: uint64(i)}, &info); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallParallel(b *testing.B) {
	client, server := rpcPair(b, func(ctx context.Context, from peer.ID, req *Request) (any, error) {
		return Empty{}, nil
	})
	ctx := context.Background()
	if err := Call(ctx, client, server.ID(), MethodStatus, Caller{}, nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := Call(ctx, client, server.ID(), MethodStatus, Caller{}, nil, nil); err != nil {
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
	if err := Call(ctx, h, h.ID(), MethodStatus, Caller{}, nil, nil); ErrorCode(err) != CodeUnreachable {
		t.Fatalf("a host calling itself over the network: %v", err)
	}
	handler := func(ctx context.Context, from peer.ID, req *Request) (any, error) {
		if from != h.ID() {
			return nil, fmt.Errorf("from %s", from)
		}
		switch req.Method {
		case "panic":
			panic("boom")
		case "plain":
			return nil, errors.New("plain")
		}
		var r IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		if r.ID == 0 {
			return nil, Errorf(CodeUsage, "id required")
		}
		return StatusInfo{Head: "self", RaftIndex: r.ID}, nil
	}
	var st StatusInfo
	tests := []struct {
		name, method string
		req          any
		wantCode     int
	}{
		{"ok", MethodStatus, IDRequest{ID: 9}, CodeOK},
		{"coded error", MethodStatus, IDRequest{}, CodeUsage},
		{"plain error", "plain", nil, CodeError},
		{"panic", "panic", nil, CodeError},
		{"bad body", MethodStatus, "not a struct", CodeUsage},
		{"too large", MethodStatus, strings.Repeat("x", MaxMessageSize+1), CodeUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CallLocal(ctx, handler, h.ID(), tc.method, Caller{User: "u"}, tc.req, &st, WithServeLogger(testLogger(t)))
			if ErrorCode(err) != tc.wantCode {
				t.Fatalf("code %d (%v), want %d", ErrorCode(err), err, tc.wantCode)
			}
			if err != nil {
				var ce *CodedError
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
	if err := CallLocal(done, handler, h.ID(), MethodStatus, Caller{}, IDRequest{ID: 1}, &st); ErrorCode(err) != CodeUnreachable {
		t.Errorf("call with an ended context: %v", err)
	}
}

func TestMethodTable(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Methods() {
		if seen[m.Name] {
			t.Errorf("method %q listed twice", m.Name)
		}
		seen[m.Name] = true
		if m.Callers == 0 || m.NewRequest == nil || m.NewReply == nil {
			t.Errorf("method %q is incomplete: %+v", m.Name, m)
		}
		if m.Callers&FromHead != 0 && m.ToHead() {
			t.Errorf("method %q is served by both the head and the agents", m.Name)
		}
		// Every request and reply type round-trips through the codec.
		for _, v := range []any{m.NewRequest(), m.NewReply()} {
			b, err := Marshal(v)
			if err != nil {
				t.Errorf("%s: marshal %T: %v", m.Name, v, err)
				continue
			}
			if err := Unmarshal(b, v); err != nil {
				t.Errorf("%s: unmarshal %T: %v", m.Name, v, err)
			}
		}
		got, ok := LookupMethod(m.Name)
		if !ok || got.Name != m.Name {
			t.Errorf("LookupMethod(%q) = %+v, %v", m.Name, got, ok)
		}
	}
	if _, ok := LookupMethod("no.such.method"); ok {
		t.Error("an unknown method was found")
	}
	if m, _ := LookupMethod(MethodDesired); m.ToHead() || m.OnSocket() {
		t.Errorf("desired: %+v", m)
	}
	if m, _ := LookupMethod(MethodReport); !m.ToHead() || m.OnSocket() || !m.ReadOnly {
		t.Errorf("report: %+v", m)
	}
}

func TestNotHead(t *testing.T) {
	err := NotHead("n1")
	if ErrorCode(err) != CodeUnreachable || !IsNotHead(err) {
		t.Errorf("NotHead: %v code %d", err, ErrorCode(err))
	}
	// The text survives a trip over the wire, where only the message and
	// code travel.
	if !IsNotHead(&CodedError{Code: CodeUnreachable, Msg: err.Error()}) || IsNotHead(errors.New("other")) || IsNotHead(nil) {
		t.Error("IsNotHead")
	}
}
