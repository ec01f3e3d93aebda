package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frames are a uvarint length prefix followed by that many bytes of CBOR.
// A zero-length frame is invalid (no CBOR value is empty).

// WriteMsg encodes v and writes it as one length-prefixed frame, in a
// single Write call. Messages over MaxMessageSize are refused.
func WriteMsg(w io.Writer, v any) error {
	body, err := Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > MaxMessageSize {
		return fmt.Errorf("wire: write %T: %w", v, &TooLargeError{Size: uint64(len(body)), Limit: MaxMessageSize})
	}
	buf := make([]byte, 0, binary.MaxVarintLen64+len(body))
	buf = binary.AppendUvarint(buf, uint64(len(body)))
	buf = append(buf, body...)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("wire: write %T: %w", v, err)
	}
	return nil
}

// ReadMsg reads one length-prefixed frame of at most limit bytes and decodes
// it into v. The length prefix is checked against limit before the body is
// allocated. ReadMsg never reads past the end of the frame, so several
// frames can be read from the same stream. A clean end of stream before the
// first byte of the frame is returned as io.EOF.
func ReadMsg(r io.Reader, v any, limit int) error {
	n, err := readUvarint(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("wire: read %T: length prefix: %w", v, err)
	}
	if n == 0 {
		return fmt.Errorf("wire: read %T: empty frame", v)
	}
	if limit < 0 || n > uint64(limit) {
		return fmt.Errorf("wire: read %T: %w", v, &TooLargeError{Size: n, Limit: limit})
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("wire: read %T: body of %d bytes: %w", v, n, err)
	}
	return UnmarshalLimit(body, v, limit)
}

var errVarintOverflow = errors.New("length prefix overflows a 64-bit integer")

// readUvarint reads a uvarint one byte at a time so that nothing after it
// is consumed. io.EOF is returned only if no byte was read.
func readUvarint(r io.Reader) (uint64, error) {
	var x uint64
	var s uint
	var b [1]byte
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		c := b[0]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errVarintOverflow
			}
			return x | uint64(c)<<s, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, errVarintOverflow
}
