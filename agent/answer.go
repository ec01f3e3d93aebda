package agent

import (
	"encoding/json"
	"strconv"

	"github.com/ducc-project/ducc/wire"
)

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
	var wl workerLine
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &wl) != nil || (wl.Ready == nil && wl.ID == nil) {
		return feedEvent{}, false
	}
	if wl.Ready != nil {
		return feedEvent{ready: *wl.Ready}, true
	}
	idx, err := strconv.Atoi(*wl.ID)
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
