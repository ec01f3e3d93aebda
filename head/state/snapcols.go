package state

import (
	"fmt"

	"github.com/ducc-project/ducc/wire"
)

// itemCols is a chunk of a job's items in a snapshot (version 2), column
// by column. Decoding a few long strings and packed integer lists is many
// times faster than decoding a map per item, which was most of a
// restore's time (BenchmarkRestore600k, docs/performance.md). The strings
// of a column are stored one after the other with their lengths; restored
// items share the column's string. Integer columns are packed varints
// (wire.Uvarints); a column that is all zero or empty is left out.
type itemCols struct {
	N         int      `cbor:"1,keyasint"`
	Data      string   `cbor:"2,keyasint,omitempty"`
	DataLen   []byte   `cbor:"3,keyasint,omitempty"`
	State     []byte   `cbor:"4,keyasint,omitempty"` // one byte an item
	Attempts  []byte   `cbor:"5,keyasint,omitempty"`
	Millis    []byte   `cbor:"6,keyasint,omitempty"` // signed
	Result    string   `cbor:"7,keyasint,omitempty"`
	ResultLen []byte   `cbor:"8,keyasint,omitempty"`
	Error     string   `cbor:"9,keyasint,omitempty"`
	ErrorLen  []byte   `cbor:"10,keyasint,omitempty"`
	Procs     []string `cbor:"11,keyasint,omitempty"` // the processes Proc names
	Proc      []byte   `cbor:"12,keyasint,omitempty"` // 1 + index in Procs, 0 for none
}

// colBytes closes a chunk once its strings hold this many bytes (or
// snapChunk items), so that a chunk stays well within a frame's limit
// whatever the items hold.
const colBytes = 1 << 20

// strCol is a column of strings being built.
type strCol struct {
	buf  []byte
	lens []byte
	any  bool
}

func newStrCol(n int) strCol { return strCol{lens: make([]byte, 0, n)} }

func (c *strCol) add(s string) {
	c.buf = append(c.buf, s...)
	c.lens = wire.AppendUvarint(c.lens, uint64(len(s)))
	c.any = c.any || s != ""
}

// take returns the column, nothing when every string was empty.
func (c *strCol) take() (string, []byte) {
	if !c.any {
		return "", nil
	}
	return string(c.buf), c.lens
}

// intCol is a column of packed integers being built.
type intCol struct {
	b   []byte
	any bool
}

func (c *intCol) add(v uint64) {
	c.b = wire.AppendUvarint(c.b, v)
	c.any = c.any || v != 0
}

func (c *intCol) addSigned(v int64) {
	c.b = wire.AppendVarint(c.b, v)
	c.any = c.any || v != 0
}

func (c *intCol) take() []byte {
	if !c.any {
		return nil
	}
	return c.b
}

// splitCols cuts items into column chunks. The chunks share nothing with
// items, so they may be encoded after the state's lock is released.
func splitCols(items []Item) []*itemCols {
	var out []*itemCols
	for len(items) > 0 {
		size := min(len(items), snapChunk)
		data, result, errs := newStrCol(size), newStrCol(size), newStrCol(size)
		attempts := intCol{b: make([]byte, 0, size)}
		millis := intCol{b: make([]byte, 0, size)}
		proc := intCol{b: make([]byte, 0, size)}
		state := make([]byte, 0, size)
		c := &itemCols{}
		procs := map[string]uint64{}
		n := 0
		for n < len(items) && n < snapChunk && len(data.buf)+len(result.buf)+len(errs.buf) < colBytes {
			it := &items[n]
			data.add(it.Data)
			result.add(it.Result)
			errs.add(it.Error)
			state = append(state, byte(it.State))
			attempts.add(uint64(it.Attempts))
			millis.addSigned(it.Millis)
			var p uint64
			if it.Proc != "" {
				if p = procs[it.Proc]; p == 0 {
					c.Procs = append(c.Procs, it.Proc)
					p = uint64(len(c.Procs))
					procs[it.Proc] = p
				}
			}
			proc.add(p)
			n++
		}
		c.N = n
		c.Data, c.DataLen = string(data.buf), data.lens
		c.Result, c.ResultLen = result.take()
		c.Error, c.ErrorLen = errs.take()
		for _, s := range state {
			if s != 0 {
				c.State = state
				break
			}
		}
		c.Attempts, c.Millis, c.Proc = attempts.take(), millis.take(), proc.take()
		out = append(out, c)
		items = items[n:]
	}
	return out
}

// appendTo checks the chunk and appends its items to items.
func (c *itemCols) appendTo(items []Item) ([]Item, error) {
	n := c.N
	if n <= 0 || n > snapChunk {
		return nil, fmt.Errorf("chunk of %d items", n)
	}
	if c.State != nil && len(c.State) != n {
		return nil, fmt.Errorf("chunk of %d items has %d states", n, len(c.State))
	}
	data, err := splitStr(c.Data, c.DataLen, n, true)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	result, err := splitStr(c.Result, c.ResultLen, n, false)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	errs, err := splitStr(c.Error, c.ErrorLen, n, false)
	if err != nil {
		return nil, fmt.Errorf("errors: %w", err)
	}
	var attempts, proc []uint64
	var millis []int64
	if c.Attempts != nil {
		if attempts, err = wire.Uvarints(c.Attempts, n); err != nil {
			return nil, fmt.Errorf("attempts: %w", err)
		}
	}
	if c.Millis != nil {
		if millis, err = wire.Varints(c.Millis, n); err != nil {
			return nil, fmt.Errorf("times: %w", err)
		}
	}
	if c.Proc != nil {
		if proc, err = wire.Uvarints(c.Proc, n); err != nil {
			return nil, fmt.Errorf("processes: %w", err)
		}
	}
	for i := range n {
		it := Item{Data: data(i), Result: result(i), Error: errs(i)}
		if c.State != nil {
			it.State = ItemState(c.State[i])
		}
		if attempts != nil {
			it.Attempts = uint16(attempts[i])
		}
		if millis != nil {
			it.Millis = millis[i]
		}
		if proc != nil && proc[i] != 0 {
			if proc[i] > uint64(len(c.Procs)) {
				return nil, fmt.Errorf("item %d names process %d of %d", i, proc[i], len(c.Procs))
			}
			it.Proc = c.Procs[proc[i]-1]
		}
		items = append(items, it)
	}
	return items, nil
}

// splitStr checks a string column and returns its i-th string; a column
// left out (no lengths) holds empty strings, unless it is required.
func splitStr(s string, lens []byte, n int, required bool) (func(int) string, error) {
	if lens == nil && !required {
		if s != "" {
			return nil, fmt.Errorf("%d bytes without lengths", len(s))
		}
		return func(int) string { return "" }, nil
	}
	ls, err := wire.Uvarints(lens, n)
	if err != nil {
		return nil, err
	}
	ends := make([]int, n)
	end := 0
	for i, l := range ls {
		if l > uint64(len(s)-end) {
			return nil, fmt.Errorf("string %d of %d bytes runs past the column's %d", i, l, len(s))
		}
		end += int(l)
		ends[i] = end
	}
	if end != len(s) {
		return nil, fmt.Errorf("%d bytes, the lengths add up to %d", len(s), end)
	}
	return func(i int) string {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return s[start:ends[i]]
	}, nil
}
