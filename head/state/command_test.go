package state

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// TestCommandTypesListed: every CommandType constant declared in the
// package is in commandTypes, in numeric order, named after its constant
// (CmdSubmit is "Submit"). The other tests of command types iterate over
// that list, so a new type cannot escape them.
func TestCommandTypesListed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			typed := false // a block of CommandType constants
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "CommandType" {
					typed = true
					for _, n := range vs.Names {
						declared = append(declared, n.Name)
					}
				} else if typed && vs.Type == nil {
					t.Errorf("%s: %v in a block of CommandType constants without the type: give each its type and number",
						fset.Position(vs.Pos()), vs.Names)
				}
			}
		}
	}
	var listed []string
	for i, c := range commandTypes {
		listed = append(listed, "Cmd"+c.name)
		if c.t.String() != c.name {
			t.Errorf("%d.String() = %q, want %q", int(c.t), c.t.String(), c.name)
		}
		if i > 0 && c.t <= commandTypes[i-1].t {
			t.Errorf("commandTypes is not in numeric order at %s (%d after %d)", c.name, c.t, commandTypes[i-1].t)
		}
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Errorf("CommandType constants %v, but commandTypes lists %v", declared, listed)
	}
	if got := CommandType(99).String(); got != "CommandType(99)" {
		t.Errorf("an unknown type's String() = %q", got)
	}
}

// sampleCommands has a command of each type with every field its type
// uses set.
func sampleCommands() map[CommandType]Command {
	job := &Work{Kind: wire.WorkJob, User: "alice", Class: "normal", Memory: 1 << 30, Deps: []string{"UIMA-AS:q"},
		Job: &Job{Spec: wire.JobSpec{Executable: "/bin/true"}, Items: []Item{{Data: "a"}}}}
	svc := &Work{Kind: wire.WorkService, User: "alice", Class: "fixed",
		Service: &Service{Spec: wire.ServiceSpec{Endpoint: "UIMA-AS:q", Executable: "/bin/srv", Instances: 1}}}
	return map[CommandType]Command{
		CmdSubmit:      {Type: CmdSubmit, Time: 1, Work: job, Last: true, Completion: CompletionServicesUnavail, Reason: "no such service"},
		CmdAssign:      {Type: CmdAssign, Time: 2, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30, Instance: 1, Kind: wire.ProcDriver}},
		CmdProc:        {Type: CmdProc, Time: 3, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcExited, ExitCode: 2, Reason: "exit 2"}},
		CmdCancel:      {Type: CmdCancel, Time: 4, WorkID: 1, By: "root"},
		CmdFinish:      {Type: CmdFinish, Time: 5, WorkID: 1, Completion: CompletionCanceledBySystem, Reason: "why"},
		CmdStopProc:    {Type: CmdStopProc, Time: 6, WorkID: 1, ProcID: "1.1", Reason: "item timeout", Counts: true},
		CmdItems:       {Type: CmdItems, Time: 7, WorkID: 1, Items: []string{"b", "c"}, Last: true},
		CmdOutcomes:    {Type: CmdOutcomes, Time: 8, WorkID: 1, ProcID: "1.1", Outcomes: []wire.ItemOutcome{{Index: 0, OK: true, Millis: 3, Result: "r"}}},
		CmdReady:       {Type: CmdReady, Time: 9, WorkID: 1, ProcID: "1.1", InitMS: 250},
		CmdRequeued:    {Type: CmdRequeued, Time: 10, WorkID: 1, Requeued: 3},
		CmdConfig:      {Type: CmdConfig, Time: 11, Config: []byte("classes: []\n")},
		CmdNodeAdmin:   {Type: CmdNodeAdmin, Time: 12, Node: "n1", NodeState: NodeVariedOff},
		CmdSvcRegister: {Type: CmdSvcRegister, Time: 13, Work: svc},
		CmdSvcChange:   {Type: CmdSvcChange, Time: 14, WorkID: 2, ProcID: "2.1", Service: &ServiceChange{Op: SvcOpStop, N: 1, Reason: "r"}},
		CmdDepsMet:     {Type: CmdDepsMet, Time: 15, WorkID: 1},
		CmdPurge:       {Type: CmdPurge, Time: 16, Purge: &Purge{Work: 1, Results: 2, History: 3}},
		CmdDriverItems: {Type: CmdDriverItems, Time: 17, WorkID: 1, ProcID: "1.1", FirstItem: 4, Items: []string{"d"}, Last: true, Failure: "lost", Total: 9},
		CmdIncarnation: {Type: CmdIncarnation, Time: 30, Incarnation: "inc-1"},
		CmdIDFloor:     {Type: CmdIDFloor, Time: 31, IDFloor: 100},
	}
}

// TestEveryCommandType: the FSM applies every command type (none is an
// unknown command to it), and each encodes and decodes to itself.
func TestEveryCommandType(t *testing.T) {
	samples := sampleCommands()
	for _, typ := range CommandTypes() {
		c, ok := samples[typ]
		if !ok {
			t.Errorf("no sample command of type %s", typ)
			continue
		}
		if c.Type != typ {
			t.Errorf("the sample of %s has type %s", typ, c.Type)
		}
		f := New()
		res := apply(t, f, 1, c)
		if err := res[0].Err; err != nil && strings.Contains(err.Error(), "unknown command") {
			t.Errorf("%s: %v", typ, err)
		}
		data, err := Encode(c)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if direct, err := wire.Marshal(Batch{Commands: []Command{c}}); err != nil || !bytes.Equal(direct, data) {
			t.Errorf("%s: a Batch encodes to %x (%v), Encode to %x", typ, direct, err, data)
		}
		var b Batch
		if err := wire.Unmarshal(data, &b); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if len(b.Commands) != 1 || !reflect.DeepEqual(b.Commands[0], c) {
			t.Errorf("%s: encoded and decoded to %+v, want %+v", typ, b.Commands, c)
		}
	}
	if res := apply(t, New(), 1, Command{Type: 99}); res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "unknown command type") {
		t.Errorf("an unknown command type applied: %+v", res)
	}
}

// TestCommandRecordFields: every field of Command is stored: it is a
// field of commandRecord of the same name and type, or one of the
// type-specific fields that record maps to a shared one.
func TestCommandRecordFields(t *testing.T) {
	specific := map[string]bool{"InitMS": true, "Requeued": true, "FirstItem": true, "Failure": true,
		"NodeState": true, "Incarnation": true, "IDFloor": true}
	rt := reflect.TypeFor[commandRecord]()
	ct := reflect.TypeFor[Command]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if specific[f.Name] {
			continue
		}
		if rf, ok := rt.FieldByName(f.Name); !ok || rf.Type != f.Type {
			t.Errorf("Command.%s (%s) is not stored: commandRecord has no such field", f.Name, f.Type)
		}
	}
	for i := range rt.NumField() {
		if _, ok := ct.FieldByName(rt.Field(i).Name); !ok && rt.Field(i).Name != "Count" {
			t.Errorf("commandRecord.%s has no Command field", rt.Field(i).Name)
		}
	}
}

// TestCommandFieldMisplaced: a type-specific field on a command of
// another type, or the shared field a type's own one replaces, is refused
// rather than lost.
func TestCommandFieldMisplaced(t *testing.T) {
	for _, c := range []Command{
		{Type: CmdSubmit, InitMS: 3},
		{Type: CmdReady, Requeued: 1},
		{Type: CmdRequeued, FirstItem: 1},
		{Type: CmdItems, Failure: "x"},
		{Type: CmdFinish, NodeState: NodeVariedOff},
		{Type: CmdIDFloor, Incarnation: "x"},
		{Type: CmdIncarnation, IDFloor: 3},
		{Type: CmdNodeAdmin, Node: "n1", Reason: "VariedOff"},
		{Type: CmdIncarnation, Reason: "x"},
		{Type: CmdDriverItems, WorkID: 1, Reason: "x"},
		{Type: CmdIDFloor, WorkID: 3},
	} {
		if _, err := Encode(c); err == nil {
			t.Errorf("%+v encoded", c)
		}
		if _, err := wire.Marshal(Batch{Commands: []Command{c}}); err == nil {
			t.Errorf("%+v encoded through MarshalCBOR", c)
		}
	}
}

// TestCommandRecordLayout: the type-specific fields take the slots of the
// shared ones that ducc's Command had before them, with the same values.
func TestCommandRecordLayout(t *testing.T) {
	for _, tc := range []struct {
		c    Command
		want commandRecord
	}{
		{Command{Type: CmdReady, WorkID: 1, ProcID: "1.1", InitMS: 250}, commandRecord{Type: CmdReady, WorkID: 1, ProcID: "1.1", Count: 250}},
		{Command{Type: CmdRequeued, WorkID: 1, Requeued: 2}, commandRecord{Type: CmdRequeued, WorkID: 1, Count: 2}},
		{Command{Type: CmdDriverItems, WorkID: 1, FirstItem: 5, Failure: "gone"}, commandRecord{Type: CmdDriverItems, WorkID: 1, Count: 5, Reason: "gone"}},
		{Command{Type: CmdNodeAdmin, Node: "n1", NodeState: NodeQuiescing}, commandRecord{Type: CmdNodeAdmin, Node: "n1", Reason: "Quiescing"}},
		{Command{Type: CmdNodeAdmin, Node: "n1"}, commandRecord{Type: CmdNodeAdmin, Node: "n1"}},
		{Command{Type: CmdIncarnation, Incarnation: "abc"}, commandRecord{Type: CmdIncarnation, Reason: "abc"}},
		{Command{Type: CmdIDFloor, IDFloor: 42}, commandRecord{Type: CmdIDFloor, WorkID: 42}},
	} {
		got, err := tc.c.record()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v is stored as %+v (%v), want %+v", tc.c, got, err, tc.want)
		}
		want, _ := wire.Marshal(batchRecord{Commands: []commandRecord{tc.want}})
		if data, err := Encode(tc.c); err != nil || !bytes.Equal(data, want) {
			t.Errorf("%+v encodes to %x (%v), want %x", tc.c, data, err, want)
		}
		if back := got.command(); !reflect.DeepEqual(back, tc.c) {
			t.Errorf("%+v decodes to %+v", tc.want, back)
		}
	}
}
