package state

import "fmt"

// itemCols is a chunk of a job's items in a snapshot (version 2), column
// by column. Decoding a few long strings and arrays is several times
// faster than decoding a map per item, which was most of a restore's time
// (BenchmarkRestore600k, docs/performance.md). The strings of a column
// are stored one after the other with their end offsets; restored items
// share the column's string.
type itemCols struct {
	N         int      `cbor:"1,keyasint"`
	Data      string   `cbor:"2,keyasint,omitempty"`
	DataEnd   []uint32 `cbor:"3,keyasint,omitempty"`
	State     []byte   `cbor:"4,keyasint,omitempty"` // nil when every item is pending
	Attempts  []uint16 `cbor:"5,keyasint,omitempty"` // nil when all are 0
	Millis    []int64  `cbor:"6,keyasint,omitempty"` // nil when all are 0
	Result    string   `cbor:"7,keyasint,omitempty"`
	ResultEnd []uint32 `cbor:"8,keyasint,omitempty"` // nil when no item has a result
	Error     string   `cbor:"9,keyasint,omitempty"`
	ErrorEnd  []uint32 `cbor:"10,keyasint,omitempty"` // nil when no item has an error
	Procs     []string `cbor:"11,keyasint,omitempty"` // the processes Proc names
	Proc      []uint32 `cbor:"12,keyasint,omitempty"` // 1 + index in Procs, 0 for none; nil when none has one
}

// colBytes closes a chunk once its strings hold this many bytes (or
// snapChunk items), so that a chunk stays well within a frame's limit
// whatever the items hold.
const colBytes = 1 << 20

// strCol is a column of strings being built.
type strCol struct {
	buf  []byte
	ends []uint32
	any  bool
}

func newStrCol(n int) strCol { return strCol{ends: make([]uint32, 0, n)} }

func (c *strCol) add(s string) {
	c.buf = append(c.buf, s...)
	c.ends = append(c.ends, uint32(len(c.buf)))
	c.any = c.any || s != ""
}

// take returns the column, nothing when every string was empty.
func (c *strCol) take() (string, []uint32) {
	if !c.any {
		return "", nil
	}
	return string(c.buf), c.ends
}

// splitCols cuts items into column chunks. The chunks share nothing with
// items, so they may be encoded after the state's lock is released.
func splitCols(items []Item) []*itemCols {
	var out []*itemCols
	for len(items) > 0 {
		size := min(len(items), snapChunk)
		data, result, errs := newStrCol(size), newStrCol(size), newStrCol(size)
		c := &itemCols{}
		procs := map[string]uint32{}
		state := make([]byte, 0, size)
		attempts := make([]uint16, 0, size)
		millis := make([]int64, 0, size)
		proc := make([]uint32, 0, size)
		n := 0
		for n < len(items) && n < snapChunk && len(data.buf)+len(result.buf)+len(errs.buf) < colBytes {
			it := &items[n]
			data.add(it.Data)
			result.add(it.Result)
			errs.add(it.Error)
			state = append(state, it.State)
			attempts = append(attempts, it.Attempts)
			millis = append(millis, it.Millis)
			var p uint32
			if it.Proc != "" {
				if p = procs[it.Proc]; p == 0 {
					c.Procs = append(c.Procs, it.Proc)
					p = uint32(len(c.Procs))
					procs[it.Proc] = p
				}
			}
			proc = append(proc, p)
			n++
		}
		c.N = n
		c.Data, c.DataEnd = string(data.buf), data.ends
		c.Result, c.ResultEnd = result.take()
		c.Error, c.ErrorEnd = errs.take()
		if anyNonZero(state) {
			c.State = state
		}
		if anyNonZero(attempts) {
			c.Attempts = attempts
		}
		if anyNonZero(millis) {
			c.Millis = millis
		}
		if len(c.Procs) > 0 {
			c.Proc = proc
		}
		out = append(out, c)
		items = items[n:]
	}
	return out
}

func anyNonZero[T comparable](s []T) bool {
	var zero T
	for _, v := range s {
		if v != zero {
			return true
		}
	}
	return false
}

// appendTo checks the chunk and appends its items to items.
func (c *itemCols) appendTo(items []Item) ([]Item, error) {
	n := c.N
	if n <= 0 {
		return nil, fmt.Errorf("empty chunk")
	}
	if len(c.DataEnd) != n || !sameLen(n, len(c.State), len(c.Attempts), len(c.Millis), len(c.ResultEnd), len(c.ErrorEnd), len(c.Proc)) {
		return nil, fmt.Errorf("chunk of %d items has columns of other lengths", n)
	}
	data, err := splitStr(c.Data, c.DataEnd, n)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	result, err := splitStr(c.Result, c.ResultEnd, n)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	errs, err := splitStr(c.Error, c.ErrorEnd, n)
	if err != nil {
		return nil, fmt.Errorf("errors: %w", err)
	}
	for i := range n {
		it := Item{Data: data(i), Result: result(i), Error: errs(i)}
		if c.State != nil {
			it.State = c.State[i]
		}
		if c.Attempts != nil {
			it.Attempts = c.Attempts[i]
		}
		if c.Millis != nil {
			it.Millis = c.Millis[i]
		}
		if c.Proc != nil && c.Proc[i] != 0 {
			p := int(c.Proc[i]) - 1
			if p >= len(c.Procs) {
				return nil, fmt.Errorf("item %d names process %d of %d", i, p, len(c.Procs))
			}
			it.Proc = c.Procs[p]
		}
		items = append(items, it)
	}
	return items, nil
}

// sameLen reports whether every length is n or 0 (a column left out).
func sameLen(n int, lens ...int) bool {
	for _, l := range lens {
		if l != 0 && l != n {
			return false
		}
	}
	return true
}

// splitStr checks a string column and returns its i-th string; a column
// left out (no ends) holds empty strings.
func splitStr(s string, ends []uint32, n int) (func(int) string, error) {
	if ends == nil {
		if s != "" {
			return nil, fmt.Errorf("%d bytes without offsets", len(s))
		}
		return func(int) string { return "" }, nil
	}
	prev := uint32(0)
	for _, e := range ends {
		if e < prev || int(e) > len(s) {
			return nil, fmt.Errorf("offset %d out of order or past %d bytes", e, len(s))
		}
		prev = e
	}
	if int(prev) != len(s) {
		return nil, fmt.Errorf("%d bytes, offsets end at %d", len(s), prev)
	}
	return func(i int) string {
		start := uint32(0)
		if i > 0 {
			start = ends[i-1]
		}
		return s[start:ends[i]]
	}, nil
}
