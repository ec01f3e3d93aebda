package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// fuzzDecode checks that decoding arbitrary bytes into T never panics, that
// oversized input is rejected, and that whatever decodes re-encodes and
// decodes to the same encoding (the codec is deterministic).
func fuzzDecode[T any](f *testing.F, limit int, seeds ...T) {
	for _, s := range seeds {
		b, err := Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0xa0})
	f.Add([]byte{0xbf, 0xff})
	f.Add([]byte{0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 {
			var small T
			var tl *TooLargeError
			if err := UnmarshalLimit(data, &small, len(data)-1); !errors.As(err, &tl) {
				t.Fatalf("input of %d bytes not rejected by a limit of %d: %v", len(data), len(data)-1, err)
			}
		}
		var v T
		err := UnmarshalLimit(data, &v, limit)
		if len(data) > limit {
			var tl *TooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("oversized input (%d > %d) not rejected: %v", len(data), limit, err)
			}
			return
		}
		if err != nil {
			return
		}
		b, err := Marshal(v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var v2 T
		if err := Unmarshal(b, &v2); err != nil {
			t.Fatalf("decode of re-encoding: %v", err)
		}
		b2, err := Marshal(v2)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding not stable: %x vs %x (%v)", b, b2, err)
		}
	})
}

func FuzzHeartbeat(f *testing.F) {
	fuzzDecode(f, MaxHeartbeatSize, sampleHeartbeat(), Heartbeat{})
}

func FuzzDesiredState(f *testing.F) {
	fuzzDecode(f, MaxMessageSize, DesiredState{Node: "n1", Version: 9, Head: "12D3", Ack: []string{"1.1"}, Procs: []ProcSpec{{
		ID: "17.1", WorkID: 17, Kind: ProcPOP, User: "alice", UID: 1000, GID: 1000, Groups: []uint32{10, 20},
		Path: "/bin/sleep", Args: []string{"60"}, Env: []string{"A=b"}, MemoryLimit: 4 << 30, GraceMS: 30000,
	}}})
}

func FuzzLeaderAnnounce(f *testing.F) {
	fuzzDecode(f, MaxAnnounceSize, LeaderAnnounce{PeerID: "12D3", Node: "head1", Addrs: []string{"/ip4/10.0.0.1/tcp/4001"}, Term: 4, Time: 1700000000000})
}

func FuzzRequest(f *testing.F) {
	body, _ := Marshal(RunRequest{Path: "/bin/true", Memory: 1 << 30})
	fuzzDecode(f, MaxMessageSize,
		Request{Method: MethodRun, Caller: Caller{UID: 1000, GID: 1000, User: "alice", Groups: []uint32{1000}}, Body: cbor.RawMessage(body)},
		Request{Method: MethodStatus})
}

func FuzzResponse(f *testing.F) {
	body, _ := Marshal(WorkInfo{ID: 3, State: "Running"})
	fuzzDecode(f, MaxMessageSize, Response{Body: cbor.RawMessage(body)}, Response{Error: "unknown class", Code: CodeUsage})
}

func FuzzRunRequest(f *testing.F) {
	fuzzDecode(f, MaxMessageSize, RunRequest{Memory: 1 << 30, Class: "normal", Path: "/bin/sh", Args: []string{"-c", "true"},
		Env: []string{"X=1"}, Dir: "/tmp", Description: "test", MachineList: []string{"n1"}})
}

func FuzzWorkInfo(f *testing.F) {
	fuzzDecode(f, MaxMessageSize, WorkInfo{ID: 1, Kind: "MR", User: "bob", Class: "normal", State: "Running", Memory: 1 << 30,
		Command: []string{"/bin/sleep", "10"}, Procs: []ProcInfo{{ID: "1.1", Node: "n1", State: ProcRunning, PID: 4, CPUSeconds: 1.5}}})
}

func FuzzWorkList(f *testing.F) {
	fuzzDecode(f, MaxMessageSize, WorkList{Work: []WorkInfo{{ID: 1}, {ID: 2, Ended: true}}})
}

func FuzzReport(f *testing.F) {
	fuzzDecode(f, MaxMessageSize, Report{Node: "n1", Procs: []ProcStatus{{ID: "1.1", State: ProcExited, ExitCode: 137, OOMKilled: true}}})
}

func FuzzServiceRequests(f *testing.F) {
	// The Service Manager's request and reply bodies: the first byte picks
	// the type.
	spec := ServiceSpec{Endpoint: "HTTP:localhost:8080/", Executable: "/bin/srv", Args: []string{"${DUCC_SERVICE_INSTANCE}"},
		Instances: 2, Dependency: []string{"TCP:db:5432"}, PingArgs: []string{"-v"}, Environment: []string{"A=1"}}
	seeds := []any{ServiceRegisterRequest{Spec: spec}, ServiceControlRequest{Service: "7", Action: SvcModify, Spec: spec, Keys: []string{"instances"}},
		ServiceQueryRequest{Service: "CUSTOM:x"}, ServiceList{Services: []ServiceInfo{{ID: 7, Spec: spec, References: []uint64{9},
			Procs: []ServiceInstance{{Instance: 1, Proc: ProcInfo{ID: "7.2"}}}}}}}
	for i, s := range seeds {
		b, _ := Marshal(s)
		f.Add(append([]byte{byte(i)}, b...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		targets := []any{&ServiceRegisterRequest{}, &ServiceControlRequest{}, &ServiceQueryRequest{}, &ServiceList{}}
		v := targets[int(data[0])%len(targets)]
		if err := UnmarshalLimit(data[1:], v, MaxMessageSize); err != nil {
			return
		}
		if _, err := Marshal(v); err != nil {
			t.Fatalf("re-encode %T: %v", v, err)
		}
	})
}

func FuzzPingRunRequest(f *testing.F) {
	fuzzDecode(f, MaxMessageSize, PingRunRequest{Service: 7, Path: "/usr/bin/python3", Args: []string{"ping.py"}, User: "alice", UID: 1000, GID: 1000,
		Groups: []uint32{10}, Env: []string{"HOME=/home/alice"}, Dir: "/tmp", TimeoutMS: 5000, MemoryLimit: 256 << 20,
		State: PingState{Service: 7, Endpoint: "CUSTOM:x", Instances: []int{1, 2}, Active: []int{1}, StartedAt: []int64{1700000000000}, References: []uint64{9}}})
}

func FuzzPingRunReply(f *testing.F) {
	yes := true
	fuzzDecode(f, MaxMessageSize, PingRunReply{Answer: PingAnswer{Alive: true, Healthy: &yes, Info: "ok", Deletions: []int{2}, Autostart: &yes, LastUse: 5}},
		PingRunReply{Error: "pinger /x did not answer within 5s"})
}

func FuzzSmallRequests(f *testing.F) {
	// One fuzzer for the small request/reply bodies: the first byte picks
	// the type.
	seeds := []any{SubmitReply{ID: 1}, IDRequest{ID: 2}, CancelRequest{ID: 3, Reason: "x"}, WaitRequest{ID: 4, TimeoutMS: 5, State: "Running"},
		ListRequest{All: true, User: "u"}, NodeList{Nodes: []NodeInfo{{Name: "n1", Load1: 0.25}}}, StatusInfo{Head: "n1", Peers: []string{"a"}}, Caller{UID: 1}, Empty{}}
	for i, s := range seeds {
		b, _ := Marshal(s)
		f.Add(append([]byte{byte(i)}, b...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		targets := []any{&SubmitReply{}, &IDRequest{}, &CancelRequest{}, &WaitRequest{}, &ListRequest{}, &NodeList{}, &StatusInfo{}, &Caller{}, &Empty{}}
		v := targets[int(data[0])%len(targets)]
		if err := Unmarshal(data[1:], v); err != nil {
			return
		}
		if _, err := Marshal(v); err != nil {
			t.Fatalf("re-encode %T: %v", v, err)
		}
	})
}

func FuzzReadMsg(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteMsg(&buf, Request{Method: MethodShow, Caller: Caller{User: "a"}})
	_ = WriteMsg(&buf, Response{Error: "x", Code: 2})
	f.Add(buf.Bytes())
	f.Add(binary.AppendUvarint(nil, 20<<20))
	f.Add([]byte{0x00})
	f.Add(bytes.Repeat([]byte{0xff}, 12))
	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for i := 0; i < 4; i++ {
			before := r.Len()
			var req Request
			err := ReadMsg(r, &req, limit)
			if err != nil {
				n, k := binary.Uvarint(data[len(data)-before:])
				if k > 0 && n > limit {
					var tl *TooLargeError
					if !errors.As(err, &tl) {
						t.Fatalf("length %d over limit not reported as too large: %v", n, err)
					}
					if consumed := before - r.Len(); consumed != k {
						t.Fatalf("read %d bytes of an oversized frame, want only the %d-byte prefix", consumed, k)
					}
				}
				return
			}
		}
	})
}

func FuzzParseClusterKey(f *testing.F) {
	psk, _ := GenerateClusterKey()
	f.Add(FormatClusterKey(psk))
	f.Add([]byte("/key/swarm/psk/1.0.0/\n/base64/\n" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"))
	f.Add(append([]byte("/key/swarm/psk/1.0.0/\n/bin/\n"), make([]byte, 32)...))
	f.Add([]byte("/key/swarm/psk/1.0.0/\r\n/base16/\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseClusterKey(data)
		if len(data) > maxKeyFileSize && err == nil {
			t.Fatal("oversized key file accepted")
		}
		if err != nil {
			return
		}
		if len(k) != ClusterKeySize {
			t.Fatalf("accepted a key of %d bytes", len(k))
		}
		k2, err := ParseClusterKey(FormatClusterKey(k))
		if err != nil || !bytes.Equal(k, k2) {
			t.Fatalf("format/parse round trip: %v", err)
		}
	})
}
