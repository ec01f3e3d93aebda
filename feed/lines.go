package feed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/stream"
)

// The lines of the stream protocol (docs/jobs.md), declared in
// wire/stream: reading a job process's and a driver process's stdout
// (readWorker, readDriver), and writing items to a job process
// (appendItemLine). Lines that are not protocol go to the process's log
// (otherLines).

// decodeLine decodes one line a worker printed on stdout: an event, and
// whether the line is protocol at all (a line that is not goes to the
// process's log). A protocol line with an id that is not an item's number
// gives an empty event.
//
// Nearly every line is an answer of the plain kind, which quickAnswer
// reads without encoding/json (that was a tenth of the agent's time in a
// stream job); anything else goes through encoding/json, and the two read
// every line quickAnswer takes alike (FuzzQuickAnswer).
func decodeLine(line []byte) (feedEvent, bool) {
	if o, ok := quickAnswer(line); ok {
		return feedEvent{outcome: &o}, true
	}
	return decodeLineJSON(line)
}

// decodeLineJSON is decodeLine with encoding/json.
func decodeLineJSON(line []byte) (feedEvent, bool) {
	var wl stream.WorkerLine
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &wl) != nil {
		return feedEvent{}, false
	}
	// The id is a string; null is none, anything else is not protocol.
	var id *string
	if len(wl.ID) > 0 && string(wl.ID) != "null" {
		id = new(string)
		if json.Unmarshal(wl.ID, id) != nil {
			return feedEvent{}, false
		}
	}
	if wl.Ready == nil && id == nil {
		return feedEvent{}, false
	}
	if wl.Ready != nil {
		return feedEvent{ready: *wl.Ready}, true
	}
	idx, err := strconv.Atoi(*id)
	if err != nil {
		return feedEvent{}, true
	}
	o := answerOutcome(idx, wl.OK, string(wl.Result), wl.Error)
	return feedEvent{outcome: &o}, true
}

// answerOutcome makes the outcome of an answer line.
func answerOutcome(idx int, ok bool, result string, errText *string) wire.ItemOutcome {
	o := wire.ItemOutcome{Index: idx, OK: ok && errText == nil}
	switch {
	case o.OK:
		o.Result = result
		o.LimitResult()
	case errText != nil:
		o.Error = *errText
	default:
		o.Error = "the worker answered without ok or error"
	}
	return o
}

// quickAnswer reads an answer line of the plain kind: one JSON object
// with "id" (a string of decimal digits) and any of "ok" (true or false),
// "result" (a string, a number, true or false) and "error" (a string),
// each key at most once, in any order, with strings of printable ASCII
// without escapes. It reports false for any other line, which may still
// be protocol (encoding/json then reads it: other spellings of the keys,
// escapes, nested results, null, duplicate keys, ready lines).
func quickAnswer(line []byte) (wire.ItemOutcome, bool) {
	s := lineScanner{b: line}
	if !s.byteIs('{') {
		return wire.ItemOutcome{}, false
	}
	var (
		idx                              int
		okv                              bool
		result, errText                  []byte
		seenID, seenOK, seenRes, seenErr bool
	)
	for {
		key, ok := s.plain()
		if !ok || !s.byteIs(':') {
			return wire.ItemOutcome{}, false
		}
		switch string(key) {
		case "id":
			v, ok := s.plain()
			if !ok || seenID || len(v) == 0 || len(v) > 18 {
				return wire.ItemOutcome{}, false
			}
			for _, c := range v {
				if c < '0' || c > '9' {
					return wire.ItemOutcome{}, false
				}
				idx = idx*10 + int(c-'0')
			}
			seenID = true
		case "ok":
			v, ok := s.literal()
			if !ok || seenOK {
				return wire.ItemOutcome{}, false
			}
			okv, seenOK = v, true
		case "result":
			s.ws()
			start := s.i
			var ok bool
			switch {
			case s.i < len(s.b) && s.b[s.i] == '"':
				_, ok = s.plain()
			case s.i < len(s.b) && (s.b[s.i] == 't' || s.b[s.i] == 'f'):
				_, ok = s.literal()
			default:
				ok = s.number()
			}
			if !ok || seenRes {
				return wire.ItemOutcome{}, false
			}
			result, seenRes = s.b[start:s.i], true
		case "error":
			v, ok := s.plain()
			if !ok || seenErr {
				return wire.ItemOutcome{}, false
			}
			errText, seenErr = v, true
		default:
			return wire.ItemOutcome{}, false
		}
		if s.byteIs(',') {
			continue
		}
		if !s.byteIs('}') {
			return wire.ItemOutcome{}, false
		}
		break
	}
	s.ws()
	if s.i != len(s.b) || !seenID {
		return wire.ItemOutcome{}, false
	}
	var e *string
	if seenErr {
		t := string(errText)
		e = &t
	}
	return answerOutcome(idx, okv, string(result), e), true
}

// lineScanner reads JSON tokens of the kinds quickAnswer takes.
type lineScanner struct {
	b []byte
	i int
}

func (s *lineScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byteIs skips white space and then c.
func (s *lineScanner) byteIs(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plain reads a string of printable ASCII without escapes and returns
// what is between its quotes.
func (s *lineScanner) plain() ([]byte, bool) {
	if !s.byteIs('"') {
		return nil, false
	}
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i:j]
			s.i = j + 1
			return v, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// literal reads true or false.
func (s *lineScanner) literal() (bool, bool) {
	s.ws()
	switch rest := s.b[s.i:]; {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *lineScanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// appendItemLine appends the line that hands it to a worker,
// {"id":"<index>","item":<the item as a JSON string>}, as encoding/json
// writes it (a stream.ItemLine).
func appendItemLine(b []byte, it wire.WorkItem) []byte {
	b = append(b, `{"id":"`...)
	b = strconv.AppendInt(b, int64(it.Index), 10)
	b = append(b, `","item":`...)
	plain := true
	for i := 0; i < len(it.Item) && plain; i++ {
		c := it.Item[i]
		// What encoding/json writes as it is: printable ASCII but for
		// the quote, the backslash and its HTML escapes.
		plain = c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	if plain {
		b = append(b, '"')
		b = append(b, it.Item...)
		b = append(b, '"')
	} else {
		q, _ := json.Marshal(it.Item)
		b = append(b, q...)
	}
	return append(b, "}\n"...)
}

// readWorker parses the worker's stdout and hands emit the events of each
// read at once (a read brings one answer or many); lines that are not
// protocol go to the process's log (otherLines). Lines end with "\n" or
// "\r\n", and the last one may end with the output instead. A line longer
// than maxLine ends the reading with an overlong event. It returns when
// the output ends or cannot be read, or when emit returns false.
func readWorker(log *slog.Logger, out io.Reader, openLog func() (*os.File, error), emit func([]feedEvent) bool) {
	other := &otherLines{open: openLog, log: log, who: "worker"}
	defer other.close()
	var evs []feedEvent
	line := func(l []byte) {
		l = bytes.TrimSuffix(l, []byte{'\r'})
		if ev, ok := decodeLine(l); ok {
			evs = append(evs, ev)
		} else {
			other.write(l)
		}
	}
	buf := make([]byte, 64<<10)
	start, end := 0, 0 // buf[start:end] is read and not yet split
	for {
		n, err := out.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[start:end], '\n')
			if i < 0 {
				break
			}
			line(buf[start : start+i])
			start += i + 1
		}
		if errors.Is(err, io.EOF) && start < end {
			line(buf[start:end])
		}
		if len(evs) > 0 {
			if !emit(evs) {
				return
			}
			evs = evs[:0]
		}
		if err != nil {
			return
		}
		// Keep the start of the next line; make room for a long one.
		end = copy(buf, buf[start:end])
		start = 0
		if end == len(buf) {
			if len(buf) >= maxLine {
				emit([]feedEvent{{overlong: true}})
				return
			}
			grown := make([]byte, min(2*len(buf), maxLine))
			copy(grown, buf[:end])
			buf = grown
		}
	}
}

// otherLines writes the lines of a process's stdout that are not protocol
// to the process's log, opened by open on the first such line (as the
// process's user, never through a symlink: proc.Manager.AppendLog). A log
// that cannot be opened or written is said once in the agent's log, and
// the lines are dropped from then on.
type otherLines struct {
	open   func() (*os.File, error)
	log    *slog.Logger
	who    string // "worker", "driver": for the agent's log
	f      *os.File
	opened bool
}

func (o *otherLines) write(line []byte) {
	if !o.opened {
		o.opened = true
		var err error
		if o.f, err = o.open(); err != nil {
			o.log.Warn("the "+o.who+"'s output that is not protocol is dropped: its log cannot be written", "err", err)
		}
	}
	if o.f == nil {
		return
	}
	if _, err := fmt.Fprintf(o.f, "%s\n", line); err != nil {
		o.log.Warn("cannot write the "+o.who+"'s output to its log", "err", err)
		o.f.Close()
		o.f = nil
	}
}

func (o *otherLines) close() {
	if o.f != nil {
		o.f.Close()
	}
}

// readDriver parses the driver's stdout; lines that are not protocol go to
// its log, as readWorker does for job processes.
func readDriver(ctx context.Context, log *slog.Logger, out *os.File, openLog func() (*os.File, error), events chan<- driverEvent) {
	defer close(events)
	other := &otherLines{open: openLog, log: log, who: "driver"}
	defer other.close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		var dl stream.DriverLine
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &dl) == nil && (dl.Ready != nil || dl.Item != nil || dl.End != nil || dl.Total != nil) {
			ev := driverEvent{}
			switch {
			case dl.Item != nil:
				ev.item = dl.Item
			case dl.Ready != nil:
				ev.ready = *dl.Ready
			case dl.End != nil:
				ev.end = *dl.End
			default:
				ev.total = *dl.Total
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
			continue
		}
		other.write(line)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		select {
		case events <- driverEvent{overlong: true}:
		case <-ctx.Done():
		}
	}
}
