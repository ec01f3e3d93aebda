package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

func TestResultsPaging(t *testing.T) {
	all := []wire.ItemResult{
		{Index: 0, Item: "a", OK: true, Result: `{"words":3}`, Millis: 5, Proc: "17.1", Attempts: 1},
		{Index: 1, Item: "b", OK: false, Error: "exit status 3: boom", Attempts: 2},
		{Index: 2, Item: "c <&>", OK: true, Result: `"plain string"`},
		{Index: 3, Item: "d", OK: true, Result: `not json`},
		{Index: 4, Item: "e", OK: true},
	}
	tests := []struct {
		name   string
		failed bool
		page   int
		want   []string
	}{
		{"all, pages of 2", false, 2, []string{
			`{"index":0,"item":"a","ok":true,"result":{"words":3},"millis":5,"process":"17.1","attempts":1}`,
			`{"index":1,"item":"b","ok":false,"error":"exit status 3: boom","attempts":2}`,
			`{"index":2,"item":"c <&>","ok":true,"result":"plain string"}`,
			`{"index":3,"item":"d","ok":true,"result":"not json"}`,
			`{"index":4,"item":"e","ok":true}`,
		}},
		{"failed only, one page", true, 100, []string{
			`{"index":1,"item":"b","ok":false,"error":"exit status 3: boom","attempts":2}`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fa := newFakeAgent(t)
			calls := 0
			fa.handle(wire.MethodResults, func(b []byte) (any, error) {
				var r wire.ResultsRequest
				if err := json.Unmarshal(b, &r); err != nil {
					return nil, err
				}
				calls++
				var sel []wire.ItemResult
				for _, x := range all {
					if x.Index >= r.Offset && (!r.Failed || !x.OK) {
						sel = append(sel, x)
					}
				}
				rep := wire.ResultsReply{Next: -1, Total: len(all)}
				if len(sel) > tc.page {
					sel = sel[:tc.page]
					rep.Next = sel[len(sel)-1].Index + 1
				}
				rep.Results = sel
				return rep, nil
			})
			var out bytes.Buffer
			if err := printResults(context.Background(), fa.client(), 17, tc.failed, &out); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSpace(out.String()), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.page == 2 && calls != 3 {
				t.Errorf("%d calls, want 3 pages", calls)
			}
		})
	}
}

func TestResultsErrors(t *testing.T) {
	fa := newFakeAgent(t)
	fa.handle(wire.MethodResults, func([]byte) (any, error) {
		return nil, &apiErr{2, "no work with id 99"}
	})
	err := printResults(context.Background(), fa.client(), 99, false, &bytes.Buffer{})
	if ee, ok := err.(*exitError); !ok || ee.code != exitUsage || !strings.Contains(ee.msg, "no work with id 99") {
		t.Fatalf("got %#v", err)
	}
	// A server that never advances must not loop forever.
	fa.handle(wire.MethodResults, func([]byte) (any, error) {
		return wire.ResultsReply{Next: 0}, nil
	})
	if err := printResults(context.Background(), fa.client(), 1, false, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "again") {
		t.Fatalf("got %v", err)
	}
}
