package archtest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseCell(t *testing.T) {
	tests := []struct {
		cell string
		want rule
		err  string // a substring of the error; "" for none
	}{
		{cell: "`cmd/internal/cli`", want: rule{projects: []string{"cmd/internal/cli"}}},
		{cell: "`head/server`, `head/rm` (its config section), `web`",
			want: rule{projects: []string{"head/server", "head/rm", "web"}}},
		{cell: "`head`, `web` (metrics), `wire`",
			want: rule{projects: []string{"head", "web", "wire"}}},
		{cell: "`cmd/internal/sockhttp`, `units`, `wire`; never libp2p, net/http or a daemon package",
			want: rule{projects: []string{"cmd/internal/sockhttp", "units", "wire"},
				never: []string{"libp2p", "net/http", daemonPackage}}},
		{cell: "standard library, without net/http",
			want: rule{libsListed: true, never: []string{"net/http"}}},
		{cell: "cobra", want: rule{libsListed: true, libs: []string{"cobra"}}},
		{cell: "x/sys", want: rule{libsListed: true, libs: []string{"x/sys"}}},
		{cell: "`units`; cbor; never libp2p (the CLI links it)",
			want: rule{projects: []string{"units"}, libsListed: true, libs: []string{"cbor"}, never: []string{"libp2p"}}},
		{cell: "`wire`, `tick`; libp2p, Raft, cbor",
			want: rule{projects: []string{"wire", "tick"}, libsListed: true, libs: []string{"libp2p", "Raft", "cbor"}}},
		{cell: "standard library; yaml (sizes and durations read from YAML)",
			want: rule{libsListed: true, libs: []string{"yaml"}}},
		{cell: "standard library", want: rule{libsListed: true}},
		{cell: "—", want: rule{libsListed: true}},
		{cell: "— (tests only)", want: rule{libsListed: true, testsOnly: true}},
		{cell: "everything (tests only)", want: rule{everything: true, testsOnly: true}},
		{cell: "their parent (`wire/wiretest`: `wire/p2p` too; `head/state/statetest`: `wire`, `spec` too)",
			want: rule{parent: true, extra: map[string][]string{
				"wire/wiretest":        {"wire/p2p"},
				"head/state/statetest": {"wire", "spec"}}}},
		{cell: "UIMA", want: rule{libsListed: true, libs: []string{"UIMA"}}},
		{cell: "`a`; never `b` and `c`", want: rule{projects: []string{"a"}, never: []string{"`b`", "`c`"}}},

		{cell: "`wire`, grpc", err: `unknown item "grpc"`},
		{cell: "`wire` and `units`", err: "want `pkg` alone"},
		{cell: "`wire`; never the network", err: `unknown item "the network" after never`},
		{cell: "their parent (see `wire`)", err: "a parenthesis with backticks holds clauses"},
		{cell: "standard library, without HTTP", err: "want without <standard package>"},
	}
	for _, tc := range tests {
		t.Run(tc.cell, func(t *testing.T) {
			got, err := parseCell(tc.cell)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseCell(%q) = %+v, %v; want an error with %q", tc.cell, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseCell(%q): %v", tc.cell, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseCell(%q)\n got %+v\nwant %+v", tc.cell, got, tc.want)
			}
		})
	}
}

func TestParseTable(t *testing.T) {
	const md = "# x\n\ntext\n\n" +
		"| package | owns | may import |\n" +
		"|---|---|---|\n" +
		"| `cmd/ducc` | the CLI | `cmd/internal/cli` |\n" +
		"| `wire/wiretest`, `head/state/statetest` | helpers | their parent (`wire/wiretest`: `wire/p2p` too) |\n" +
		"| `java/` (not Go) | Java | UIMA |\n" +
		"\n| `after` | the table ended | `x` |\n"
	rows, err := parseTable(md)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s notGo=%v line %d", strings.Join(r.pkgs, "+"), r.notGo, r.line))
	}
	if want := []string{"cmd/ducc notGo=false line 7", "wire/wiretest+head/state/statetest notGo=false line 8", "java notGo=true line 9"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if r := rows[1].rule; !r.parent || !reflect.DeepEqual(r.extra, map[string][]string{"wire/wiretest": {"wire/p2p"}}) {
		t.Errorf("combined row's rule %+v", r)
	}

	for _, tc := range []struct{ name, md, err string }{
		{"no table", "# nothing here\n", "no package table"},
		{"no rows", "| package | owns | may import |\n|---|---|---|\n\n", "no rows"},
		{"two cells", "| package | owns | may import |\n|---|---|---|\n| `a` | b |\n", "ARCHITECTURE.md:3: 2 cells"},
		{"package cell", "| package | owns | may import |\n|---|---|---|\n| a | b | `c` |\n", "package cell"},
		{"bad cell", "| package | owns | may import |\n|---|---|---|\n| `a` | b | `c`, grpc |\n", `ARCHITECTURE.md:3: row a: "` + "`c`" + `, grpc": unknown item "grpc"`},
		{"too for a stranger", "| package | owns | may import |\n|---|---|---|\n| `a`, `b` | c | their parent (`d`: `e` too) |\n", "not a package of the row"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseTable(tc.md); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("parseTable: %v; want an error with %q", err, tc.err)
			}
		})
	}
}
