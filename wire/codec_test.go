package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sampleHeartbeat() Heartbeat {
	return Heartbeat{
		Node: "n1", PeerID: "12D3KooW", Addrs: []string{"/ip4/127.0.0.1/tcp/4001"}, Seq: 7, Time: 1700000000000,
		MemTotal: 64 << 30, MemSchedulable: 60 << 30, MemUsed: 3 << 30, CPUs: 16, Load1: 0.5, DesiredVersion: 3,
		Procs:        []ProcStatus{{ID: "17.1", WorkID: 17, State: ProcRunning, PID: 1234, RSS: 1 << 30, ExitCode: 0, GPUUtil: Percent(42)}},
		HeadEligible: true, Version: "0.1",
		GPUs:   []GPUDevice{{UUID: "GPU-a", Model: "H100", Memory: 80 << 30}, {UUID: "MIG-b", Model: "H100", Memory: 10 << 30, Parent: "GPU-c"}},
		GPUUse: []GPUUse{{UUID: "GPU-a", Util: Percent(0), MemoryUsed: 1 << 20}, {UUID: "MIG-b"}},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	hb := sampleHeartbeat()
	b, err := Marshal(hb)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Marshal(hb)
	if !bytes.Equal(b, b2) {
		t.Fatal("encoding is not deterministic")
	}
	var got Heartbeat
	if err := Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hb, got) {
		t.Fatalf("round trip: got %+v want %+v", got, hb)
	}
}

func TestCodecRejects(t *testing.T) {
	var hb Heartbeat
	// duplicate map key 1
	if err := Unmarshal([]byte{0xa2, 0x01, 0x61, 'a', 0x01, 0x61, 'b'}, &hb); err == nil {
		t.Error("duplicate map key accepted")
	}
	// indefinite-length map
	if err := Unmarshal([]byte{0xbf, 0x01, 0x61, 'a', 0xff}, &hb); err == nil {
		t.Error("indefinite-length map accepted")
	}
	// trailing bytes
	if err := Unmarshal([]byte{0xa0, 0x00}, &hb); err == nil {
		t.Error("trailing bytes accepted")
	}
	// oversized
	big := make([]byte, MaxMessageSize+1)
	err := Unmarshal(big, &hb)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Errorf("oversized input: got %v", err)
	}
	// array claiming 2^32 elements with no data must fail fast, not allocate
	if err := Unmarshal([]byte{0xa1, 0x03, 0x9a, 0xff, 0xff, 0xff, 0xff}, &hb); err == nil {
		t.Error("huge array header accepted")
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[uint64]string{17: "17 B", 4096: "4 KiB", 20 << 20: "20 MiB", 1536: "1.5 KiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	hb := sampleHeartbeat()
	for i := 0; i < 3; i++ {
		hb.Seq = uint64(i)
		if err := WriteMsg(&buf, hb); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		var got Heartbeat
		if err := ReadMsg(&buf, &got, MaxHeartbeatSize); err != nil {
			t.Fatal(err)
		}
		if got.Seq != uint64(i) {
			t.Fatalf("frame %d: seq %d", i, got.Seq)
		}
	}
	var got Heartbeat
	if err := ReadMsg(&buf, &got, MaxHeartbeatSize); err != io.EOF {
		t.Fatalf("at end: got %v, want io.EOF", err)
	}
}

// countingReader fails the test if more than max bytes are read.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestFrameOversizedPrefix(t *testing.T) {
	prefix := binary.AppendUvarint(nil, 20<<20)
	r := &countingReader{r: io.MultiReader(bytes.NewReader(prefix), strings.NewReader(strings.Repeat("x", 1<<10)))}
	var req Request
	err := ReadMsg(r, &req, MaxMessageSize)
	if err == nil || !strings.Contains(err.Error(), "message of 20 MiB exceeds limit of 16 MiB") {
		t.Fatalf("got %v", err)
	}
	if r.n != len(prefix) {
		t.Fatalf("read %d bytes past the prefix", r.n-len(prefix))
	}
	// overflowing varint
	bad := bytes.Repeat([]byte{0xff}, 11)
	if err := ReadMsg(bytes.NewReader(bad), &req, MaxMessageSize); err == nil {
		t.Fatal("overflowing length prefix accepted")
	}
	// truncated body
	trunc := append(binary.AppendUvarint(nil, 10), 0xa0)
	if err := ReadMsg(bytes.NewReader(trunc), &req, MaxMessageSize); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated body: got %v", err)
	}
	// empty frame
	if err := ReadMsg(bytes.NewReader([]byte{0}), &req, MaxMessageSize); err == nil {
		t.Fatal("empty frame accepted")
	}
}

func TestWriteMsgTooLarge(t *testing.T) {
	big := RunRequest{Args: []string{strings.Repeat("x", MaxMessageSize)}}
	var buf bytes.Buffer
	err := WriteMsg(&buf, big)
	var tl *TooLargeError
	if !errors.As(err, &tl) || buf.Len() != 0 {
		t.Fatalf("got %v, wrote %d bytes", err, buf.Len())
	}
}

func TestClusterKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.key")
	if _, err := LoadClusterKey(path); err == nil {
		t.Fatal("missing key file accepted")
	}
	k1, err := LoadOrCreateClusterKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "/key/swarm/psk/1.0.0/\n/base16/\n") || len(data) != len("/key/swarm/psk/1.0.0/\n/base16/\n")+65 {
		t.Fatalf("unexpected key file %q", data)
	}
	k2, err := LoadOrCreateClusterKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("reload: %v", err)
	}
	k3, err := LoadClusterKey(path)
	if err != nil || !bytes.Equal(k1, k3) {
		t.Fatalf("load: %v", err)
	}

	for name, bad := range map[string]string{
		"empty":      "",
		"header":     "/key/swarm/psk/2.0.0/\n/base16/\n" + strings.Repeat("ab", 32),
		"encoding":   "/key/swarm/psk/1.0.0/\n/base32/\n" + strings.Repeat("ab", 32),
		"short":      "/key/swarm/psk/1.0.0/\n/base16/\n" + strings.Repeat("ab", 31),
		"long":       "/key/swarm/psk/1.0.0/\n/base16/\n" + strings.Repeat("ab", 33),
		"not hex":    "/key/swarm/psk/1.0.0/\n/base16/\n" + strings.Repeat("zz", 32),
		"no newline": "/key/swarm/psk/1.0.0/",
	} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadClusterKey(path)
		if err == nil || !strings.Contains(err.Error(), "malformed cluster key") {
			t.Errorf("%s: got %v", name, err)
		}
	}
	// CRLF line endings and base64 are accepted.
	crlf := strings.ReplaceAll(string(FormatClusterKey(k1)), "\n", "\r\n")
	if k, err := ParseClusterKey([]byte(crlf)); err != nil || !bytes.Equal(k, k1) {
		t.Errorf("CRLF: %v", err)
	}
}

func TestClusterKeyConcurrentCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.key")
	const n = 8
	keys := make(chan []byte, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			k, err := LoadOrCreateClusterKey(path)
			keys <- k
			errs <- err
		}()
	}
	var first []byte
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		k := <-keys
		if first == nil {
			first = k
		} else if !bytes.Equal(first, k) {
			t.Fatal("concurrent creators got different keys")
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}
