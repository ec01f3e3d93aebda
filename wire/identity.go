package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Key files are small; anything larger is not one of ours.
const maxKeyFileSize = 4 << 10

// ClusterKeySize is the size of a cluster pre-shared key in bytes.
const ClusterKeySize = 32

const (
	swarmKeyHeader = "/key/swarm/psk/1.0.0/"
	swarmKeyBase16 = "/base16/"
	swarmKeyBase64 = "/base64/"
	swarmKeyBin    = "/bin/"
)

// GenerateClusterKey returns a new random cluster key.
func GenerateClusterKey() ([]byte, error) {
	psk := make([]byte, ClusterKeySize)
	if _, err := io.ReadFull(rand.Reader, psk); err != nil {
		return nil, fmt.Errorf("generate cluster key: %w", err)
	}
	return psk, nil
}

// FormatClusterKey renders psk in libp2p's swarm-key file format
// ("/key/swarm/psk/1.0.0/\n/base16/\n<64 hex digits>\n").
func FormatClusterKey(psk []byte) []byte {
	var b bytes.Buffer
	b.WriteString(swarmKeyHeader + "\n" + swarmKeyBase16 + "\n")
	b.WriteString(hex.EncodeToString(psk))
	b.WriteByte('\n')
	return b.Bytes()
}

// ParseClusterKey parses a cluster key in libp2p's swarm-key format. The
// /base16/, /base64/ and /bin/ encodings are accepted; the key must be
// exactly 32 bytes.
func ParseClusterKey(data []byte) ([]byte, error) {
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("malformed cluster key: %d bytes is too large for a key file", len(data))
	}
	header, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(bytes.TrimRight(header, "\r")) != swarmKeyHeader {
		return nil, fmt.Errorf("malformed cluster key: the first line must be %q", swarmKeyHeader)
	}
	enc, rest, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, errors.New("malformed cluster key: missing encoding line (/base16/, /base64/ or /bin/)")
	}
	var key []byte
	switch e := string(bytes.TrimRight(enc, "\r")); e {
	case swarmKeyBase16:
		s := bytes.TrimSpace(rest)
		if len(s) != 2*ClusterKeySize {
			return nil, fmt.Errorf("malformed cluster key: expected %d hex digits, found %d characters", 2*ClusterKeySize, len(s))
		}
		key = make([]byte, ClusterKeySize)
		if _, err := hex.Decode(key, s); err != nil {
			return nil, fmt.Errorf("malformed cluster key: %w", err)
		}
	case swarmKeyBase64:
		s := bytes.TrimSpace(rest)
		k, err := base64.StdEncoding.DecodeString(string(s))
		if err != nil {
			return nil, fmt.Errorf("malformed cluster key: %w", err)
		}
		key = k
	case swarmKeyBin:
		key = bytes.Clone(rest)
	default:
		return nil, fmt.Errorf("malformed cluster key: unknown encoding %q (want /base16/, /base64/ or /bin/)", truncate(e, 40))
	}
	if len(key) != ClusterKeySize {
		return nil, fmt.Errorf("malformed cluster key: key is %d bytes, want %d", len(key), ClusterKeySize)
	}
	return key, nil
}

// LoadClusterKey reads and parses the cluster key file at path.
func LoadClusterKey(path string) ([]byte, error) {
	data, err := ReadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	psk, err := ParseClusterKey(data)
	if err != nil {
		return nil, fmt.Errorf("cluster key %s: %w", path, err)
	}
	return psk, nil
}

// LoadOrCreateClusterKey loads the cluster key at path, or creates a new
// random one there (mode 0600) if the file does not exist. The first head
// of a new cluster creates it; every other node must be given a copy.
func LoadOrCreateClusterKey(path string) ([]byte, error) {
	psk, err := LoadClusterKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return psk, err
	}
	psk, err = GenerateClusterKey()
	if err != nil {
		return nil, err
	}
	created, err := CreateKeyFile(path, FormatClusterKey(psk))
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	if !created {
		return LoadClusterKey(path)
	}
	return psk, nil
}

// ReadKeyFile reads a small key file (at most 4 KiB: anything larger is
// not one of ours).
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a key file", path, maxKeyFileSize)
	}
	return data, nil
}

// CreateKeyFile writes data to path with mode 0600, atomically and
// without replacing an existing file: the data goes to a temporary file
// that is hard-linked into place. It reports false if path already existed.
func CreateKeyFile(path string, data []byte) (bool, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return false, fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("create %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
