package wire

import (
	"os"
	"path/filepath"
)

// The agent's local API: HTTP/JSON on a Unix socket, where the kernel
// tells the agent who calls (SO_PEERCRED). The ducc CLI is its client;
// the agent serves it. The calls of the method table that may come from
// the socket (FromCLI) are POST /v1/<method> with the JSON request as
// body and the JSON reply as answer; the paths below are the others.
const (
	// PathCall is the prefix of a method call: POST PathCall + method.
	PathCall = "/v1/"
	// PathRunAttach is POST: run a process (RunRequest) and stream its
	// AttachEvents (id, output, final state) until it ends.
	PathRunAttach = "/v1/run/attach"
	// PathLogs is GET ?id=ID[&process=P][&follow=1]: a work's log as
	// AttachEvents.
	PathLogs = "/v1/logs"
	// PathID is GET: the agent's identity (IDInfo).
	PathID = "/v1/id"
)

// AsHeader carries --as USER from the CLI; only root may set it.
const AsHeader = "X-Ducc-As"

// SystemSocket is the socket of an agent installed as a system service.
const SystemSocket = "/run/ducc/ducc.sock"

// SocketName is the socket's name in a dev agent's data directory.
const SocketName = "ducc.sock"

// DefaultDevDataDir is the data directory of `ducc agent --dev` without
// --data-dir: $XDG_DATA_HOME/ducc, else ~/.local/share/ducc.
func DefaultDevDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ducc")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "ducc")
	}
	return filepath.Join(home, ".local", "share", "ducc")
}

// APIError is the JSON body of a failed local API call, and the error of
// an AttachEvent.
type APIError struct {
	Error string `json:"error"`
	Code  int    `json:"code"`
}

// AttachEvent is one line of the NDJSON stream of PathRunAttach and
// PathLogs: first the id, then output, then the final state.
type AttachEvent struct {
	ID     uint64    `json:"id,omitempty"`
	Output []byte    `json:"output,omitempty"`
	Notice string    `json:"notice,omitempty"`
	Work   *WorkInfo `json:"work,omitempty"`
	Error  *APIError `json:"error,omitempty"`
}

// IDInfo is an agent's identity, as `ducc id` prints it.
type IDInfo struct {
	Cluster      string   `json:"cluster"`
	Node         string   `json:"node"`
	PeerID       string   `json:"peer_id"`
	Addrs        []string `json:"addrs"` // full multiaddrs ending in /p2p/<peer id>
	HeadEligible bool     `json:"head_eligible"`
	Raft         string   `json:"raft,omitempty"`
	Head         string   `json:"head,omitempty"` // peer id of the head this agent follows
	JoinError    string   `json:"join_error,omitempty"`
}
