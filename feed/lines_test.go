package feed

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/stream"
)

func TestDecodeLine(t *testing.T) {
	long := `"` + strings.Repeat("x", wire.MaxResultSize) + `"`
	tests := []struct {
		line     string
		quick    bool // quickAnswer takes it
		protocol bool
		ready    bool
		want     *wire.ItemOutcome
	}{
		{line: `{"id": "3", "ok": true}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true}},
		{line: `{"id":"3","ok":true,"result":"done"}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true, Result: `"done"`}},
		{line: ` { "result" : -1.5e+3 , "ok" : true , "id" : "0042" } `, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 42, OK: true, Result: `-1.5e+3`}},
		{line: `{"id": "3", "ok": true, "result": 6}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true, Result: `6`}},
		{line: `{"id": "3", "ok": true, "result": false}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true, Result: `false`}},
		{line: `{"id": "3", "error": "boom"}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, Error: "boom"}},
		{line: `{"id": "3", "ok": true, "error": "boom"}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, Error: "boom"}},
		{line: `{"id": "3", "ok": false}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, Error: "the worker answered without ok or error"}},
		{line: `{"id": "3"}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, Error: "the worker answered without ok or error"}},
		{line: `{"id": "3", "ok": true, "result": ` + long + `}`, quick: true, protocol: true, want: &wire.ItemOutcome{Index: 3, Error: "result of 65538 bytes exceeds 64 KiB"}},
		// encoding/json's business: the same outcomes, read the slow way.
		{line: `{"id": "3", "ok": true, "result": {"a": [1, 2]}}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true, Result: `{"a": [1, 2]}`}},
		{line: `{"id": "3", "ok": true, "result": "caf\u00e9"}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true, Result: `"caf\u00e9"`}},
		{line: `{"id": "3", "ok": true, "result": "café"}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true, Result: `"café"`}},
		{line: `{"id": "3", "ok": true, "result": null}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true, Result: `null`}},
		{line: `{"id": "3", "error": null, "ok": true}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true}},
		{line: `{"ID": "3", "OK": true}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true}},
		{line: `{"id": "\u0033", "ok": true}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true}},
		{line: `{"id": "3", "ok": true, "id": "4"}`, protocol: true, want: &wire.ItemOutcome{Index: 4, OK: true}},
		{line: `{"id": "3", "error": "line\nbreak"}`, protocol: true, want: &wire.ItemOutcome{Index: 3, Error: "line\nbreak"}},
		{line: `{"id": "3", "ok": true, "extra": 1}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true}},
		{line: `{"id": "+3", "ok": true}`, protocol: true, want: &wire.ItemOutcome{Index: 3, OK: true}},
		{line: `{"id": "x", "ok": true}`, protocol: true},
		{line: `{"ready": true}`, protocol: true, ready: true},
		{line: `{"ready": true, "id": null}`, protocol: true, ready: true},
		// Not protocol.
		{line: ``},
		{line: `hello`},
		{line: `{"other": 1}`},
		{line: `{"id": 3, "ok": true}`},
		{line: `{"id": null, "ok": true}`},
		{line: `{"ready": true, "id": 3}`},
		{line: `{"id": ["3"], "ok": true}`},
		{line: `{"id": "3", "ok": true} trailing`},
		{line: `{"id": "3", "ok": true,}`},
		{line: `{"id": "3", "ok": tru}`},
		{line: `{"id": "3", "ok": true, "result": 012}`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			if _, quick := quickAnswer([]byte(tt.line)); quick != tt.quick {
				t.Errorf("quickAnswer took it: %v, want %v", quick, tt.quick)
			}
			ev, protocol := decodeLine([]byte(tt.line))
			if protocol != tt.protocol || ev.ready != tt.ready || !reflect.DeepEqual(ev.outcome, tt.want) {
				t.Errorf("decodeLine: %+v (outcome %+v), protocol %v; want ready %v, outcome %+v, protocol %v",
					ev, ev.outcome, protocol, tt.ready, tt.want, tt.protocol)
			}
		})
	}
}

// FuzzQuickAnswer: every line quickAnswer takes, encoding/json reads
// alike.
//
//	go test -fuzz FuzzQuickAnswer ./feed/
func FuzzQuickAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id": "3", "ok": true}`, `{"id":"12","ok":false,"error":"e"}`, `{"result": 1e5, "id": "0"}`,
		`{"id": "3", "ok": true, "result": "a b"}`, `{"id": "3", "result": -0.5}`, `{"id": "3", "ok": true, "result": true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		o, ok := quickAnswer(line)
		if !ok {
			return
		}
		ev, protocol := decodeLineJSON(line)
		if !protocol || ev.ready || ev.outcome == nil || !reflect.DeepEqual(*ev.outcome, o) {
			t.Fatalf("%q: quickAnswer %+v, encoding/json %+v (outcome %+v, protocol %v)", line, o, ev, ev.outcome, protocol)
		}
	})
}

// TestAppendItemLine: the line that hands an item to a worker is what
// encoding/json writes for it (stream.ItemLine), byte for byte.
func TestAppendItemLine(t *testing.T) {
	for _, item := range []string{"", "x", "a b c 0123456789 ~!@#$%^*()", `say "hi"`, `back\slash`, "<a href=x>&", "tab\there", "line\nbreak", "café", "\xff\xfe", "\u2028"} {
		it := wire.WorkItem{Index: 12345, Item: item}
		want, err := json.Marshal(stream.ItemLine{ID: json.RawMessage(`"12345"`), Item: &item})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendItemLine([]byte("before"), it)); got != "before"+string(want)+"\n" {
			t.Errorf("%q: %q, want %q", item, got, want)
		}
	}
}
