package wire

import (
	"fmt"
	"math"

	"github.com/fxamacker/cbor/v2"

	"github.com/ducc-project/ducc/units"
)

// Size limits of encoded messages.
const (
	// MaxMessageSize bounds one message on a stream (RPC request or
	// response). Job submissions larger than this are sent in chunks.
	MaxMessageSize = 16 << 20
	// MaxHeartbeatSize bounds one Heartbeat on TopicHeartbeat.
	MaxHeartbeatSize = 1 << 20
	// MaxAnnounceSize bounds one LeaderAnnounce on TopicLeader.
	MaxAnnounceSize = 4 << 10
)

// Decoder limits. A message within MaxMessageSize cannot hold more than
// that many items anyway; these bound the work a hostile message can cause.
const (
	maxArrayElements = 1 << 20
	maxMapPairs      = 1 << 20
	maxNestedLevels  = 24
)

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	encOpts := cbor.CoreDetEncOptions()
	encOpts.IndefLength = cbor.IndefLengthForbidden
	encMode, err = encOpts.EncMode()
	if err != nil {
		panic(fmt.Sprintf("wire: cbor encoder options: %v", err))
	}
	decMode, err = cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:  maxNestedLevels,
		MaxArrayElements: maxArrayElements,
		MaxMapPairs:      maxMapPairs,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		UTF8:             cbor.UTF8RejectInvalid,
		// Unknown fields are ignored, so that a newer peer may add fields
		// during a rolling upgrade.
		ExtraReturnErrors: cbor.ExtraDecErrorNone,
	}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("wire: cbor decoder options: %v", err))
	}
}

// Marshal encodes v as deterministic (core deterministic encoding) CBOR.
func Marshal(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %T: %w", v, err)
	}
	return b, nil
}

// Unmarshal decodes CBOR data into v. Data larger than MaxMessageSize,
// trailing bytes, duplicate map keys, indefinite-length items, tags and
// invalid UTF-8 are rejected.
func Unmarshal(data []byte, v any) error {
	return UnmarshalLimit(data, v, MaxMessageSize)
}

// UnmarshalLimit is Unmarshal with an explicit size limit in bytes (for
// example MaxHeartbeatSize, or a larger limit for Raft snapshots).
func UnmarshalLimit(data []byte, v any, limit int) error {
	if len(data) > limit {
		return fmt.Errorf("wire: decode %T: %w", v, &TooLargeError{Size: uint64(len(data)), Limit: limit})
	}
	if err := decMode.Unmarshal(data, v); err != nil {
		return fmt.Errorf("wire: decode %T: %w", v, err)
	}
	return nil
}

// TooLargeError reports a message over its size limit.
type TooLargeError struct {
	Size  uint64
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("message of %s exceeds limit of %s", formatSize(e.Size), formatSize(uint64(e.Limit)))
}

// formatSize renders a byte count for humans: "20 MiB", "1.5 KiB".
func formatSize(n uint64) string {
	return units.FormatSize(int64(min(n, math.MaxInt64)))
}
