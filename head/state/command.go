package state

import (
	"fmt"

	"github.com/ducc-project/ducc/wire"
)

// CommandType says what a Command does. It is stored as its number, a
// CBOR integer: a type's number never changes, and a removed one is never
// used again.
type CommandType int

// Command types, in numeric order. A new one goes at the end of
// commandTypes too (TestCommandTypesListed checks it), and into FSM.apply.
const (
	CmdSubmit      CommandType = 1
	CmdAssign      CommandType = 2
	CmdProc        CommandType = 3
	CmdCancel      CommandType = 4
	CmdFinish      CommandType = 5
	CmdStopProc    CommandType = 6
	CmdItems       CommandType = 7  // more items of a job (Items, Last)
	CmdOutcomes    CommandType = 8  // item outcomes of one job process (Outcomes)
	CmdReady       CommandType = 9  // a job process became ready (ProcID, InitMS)
	CmdRequeued    CommandType = 10 // items re-queued after their process went away (Requeued)
	CmdConfig      CommandType = 11 // the scheduler configuration (Config, YAML)
	CmdNodeAdmin   CommandType = 12 // an admin state of a node (Node, NodeState)
	CmdSvcRegister CommandType = 13 // register a service (Work with Service)
	CmdSvcChange   CommandType = 14 // change a service (WorkID, Service)
	CmdDepsMet     CommandType = 15 // the services a work waits for are available (WorkID)
	CmdPurge       CommandType = 16 // retention: purge finished work, held results, records (Purge)
	// CmdDriverItems: items from a job's driver process (ProcID, Items,
	// FirstItem = the driver's number of the first, Last, Total, Failure =
	// a failure the agent saw); a chunk applied again adds nothing.
	CmdDriverItems CommandType = 17
	// CmdIncarnation names the cluster's incarnation (Incarnation) unless
	// it has a name already; CmdIDFloor makes the next work id at least
	// IDFloor, so that ids continue above those of an earlier incarnation
	// still seen on the nodes (docs/decisions.md).
	CmdIncarnation CommandType = 30
	CmdIDFloor     CommandType = 31
)

// commandTypes lists every command type in numeric order, with its name.
var commandTypes = []struct {
	t    CommandType
	name string
}{
	{CmdSubmit, "Submit"}, {CmdAssign, "Assign"}, {CmdProc, "Proc"}, {CmdCancel, "Cancel"}, {CmdFinish, "Finish"},
	{CmdStopProc, "StopProc"}, {CmdItems, "Items"}, {CmdOutcomes, "Outcomes"}, {CmdReady, "Ready"},
	{CmdRequeued, "Requeued"}, {CmdConfig, "Config"}, {CmdNodeAdmin, "NodeAdmin"}, {CmdSvcRegister, "SvcRegister"},
	{CmdSvcChange, "SvcChange"}, {CmdDepsMet, "DepsMet"}, {CmdPurge, "Purge"}, {CmdDriverItems, "DriverItems"},
	{CmdIncarnation, "Incarnation"}, {CmdIDFloor, "IDFloor"},
}

// CommandTypes returns every command type, in numeric order.
func CommandTypes() []CommandType {
	out := make([]CommandType, len(commandTypes))
	for i, c := range commandTypes {
		out[i] = c.t
	}
	return out
}

// String returns the type's name without its Cmd prefix ("Submit"), or
// CommandType(n) for a number no command has.
func (t CommandType) String() string {
	for _, c := range commandTypes {
		if c.t == t {
			return c.name
		}
	}
	return fmt.Sprintf("CommandType(%d)", int(t))
}

// Command is one durable change. Exactly the fields its Type needs are
// set, and no field means one thing for one type and another for
// another: a value some types share with others in the log (below) has a
// field of its own here. Time is stamped by the leader so that every
// replica applies the same state.
//
// On disk (the Raft log) a command is a commandRecord, whose CBOR keys
// and values are those of the Command of ducc before issue 24: there the
// type-specific values below took the slot of a shared field. Encode,
// FSM.Apply and Command's MarshalCBOR and UnmarshalCBOR map between the
// two.
type Command struct {
	Type   CommandType
	Time   int64 // unix ms
	Work   *Work
	WorkID uint64
	// Assign is CmdAssign's process. On a CmdSubmit of work that is
	// neither a job nor a service it assigns the work's first process in
	// the same command, provided the work gets id WorkID (placed at
	// submission; orch.Orchestrator.Submit); otherwise it is ignored.
	Assign *Assignment
	Proc   *wire.ProcStatus
	// Cancel / finish / stop
	By         string
	Completion Completion
	Reason     string // why: a refused submission, a finish, a stop
	ProcID     string
	// Jobs
	Items    []string
	Last     bool
	Outcomes []wire.ItemOutcome
	Counts   bool // CmdStopProc: the stop counts as a failure
	Config   []byte
	Node     string
	Service  *ServiceChange
	Purge    *Purge
	// CmdDriverItems: the driver's {"total": N}, 0 if not said.
	Total int

	// CmdReady: the process's initialization time (ms). Stored as Count.
	InitMS int64
	// CmdRequeued: how many items were re-queued. Stored as Count.
	Requeued int64
	// CmdDriverItems: the driver's number of the chunk's first item
	// (stored as Count), and a failure the agent saw, which ends the job
	// (stored as Reason).
	FirstItem int64
	Failure   string
	// CmdNodeAdmin: the node's new admin state. Stored as Reason.
	NodeState NodeAdminState
	// CmdIncarnation: the cluster's incarnation id. Stored as Reason.
	Incarnation string
	// CmdIDFloor: the least id the next work gets. Stored as WorkID.
	IDFloor uint64
}

// commandRecord is a Command as the Raft log holds it: the keys and
// values of ducc's Command before the type-specific fields (issue 24),
// which must never change (testdata/raft-fixture of head/server holds a
// log written then). Count and, for some types, Reason and WorkID carry a
// value whose meaning depends on Type (Command's fields say which).
type commandRecord struct {
	Type       CommandType        `cbor:"1,keyasint"`
	Time       int64              `cbor:"2,keyasint"`
	Work       *Work              `cbor:"3,keyasint,omitempty"`
	WorkID     uint64             `cbor:"4,keyasint,omitempty"`
	Assign     *Assignment        `cbor:"5,keyasint,omitempty"`
	Proc       *wire.ProcStatus   `cbor:"6,keyasint,omitempty"`
	By         string             `cbor:"7,keyasint,omitempty"`
	Completion Completion         `cbor:"8,keyasint,omitempty"`
	Reason     string             `cbor:"9,keyasint,omitempty"`
	ProcID     string             `cbor:"10,keyasint,omitempty"`
	Items      []string           `cbor:"11,keyasint,omitempty"`
	Last       bool               `cbor:"12,keyasint,omitempty"`
	Outcomes   []wire.ItemOutcome `cbor:"13,keyasint,omitempty"`
	Count      int64              `cbor:"14,keyasint,omitempty"`
	Counts     bool               `cbor:"15,keyasint,omitempty"`
	Config     []byte             `cbor:"16,keyasint,omitempty"`
	Node       string             `cbor:"17,keyasint,omitempty"`
	Service    *ServiceChange     `cbor:"18,keyasint,omitempty"`
	Purge      *Purge             `cbor:"19,keyasint,omitempty"`
	Total      int                `cbor:"20,keyasint,omitempty"`
}

// record returns c as the log holds it. A type-specific field set on a
// command of another type, or a shared field set where the type stores
// its own value in that field's place, is an error: it would be lost.
func (c *Command) record() (commandRecord, error) {
	r := commandRecord{Type: c.Type, Time: c.Time, Work: c.Work, WorkID: c.WorkID, Assign: c.Assign, Proc: c.Proc,
		By: c.By, Completion: c.Completion, Reason: c.Reason, ProcID: c.ProcID, Items: c.Items, Last: c.Last,
		Outcomes: c.Outcomes, Counts: c.Counts, Config: c.Config, Node: c.Node, Service: c.Service, Purge: c.Purge,
		Total: c.Total}
	misplaced := func(field string) (commandRecord, error) {
		return commandRecord{}, fmt.Errorf("a %s command with %s set: it has no such field", c.Type, field)
	}
	for _, f := range []struct {
		name string
		set  bool
		of   CommandType
	}{
		{"InitMS", c.InitMS != 0, CmdReady},
		{"Requeued", c.Requeued != 0, CmdRequeued},
		{"FirstItem", c.FirstItem != 0, CmdDriverItems},
		{"Failure", c.Failure != "", CmdDriverItems},
		{"NodeState", c.NodeState != NodeNormal, CmdNodeAdmin},
		{"Incarnation", c.Incarnation != "", CmdIncarnation},
		{"IDFloor", c.IDFloor != 0, CmdIDFloor},
	} {
		if f.set && c.Type != f.of {
			return misplaced(f.name)
		}
	}
	switch c.Type {
	case CmdReady:
		r.Count = c.InitMS
	case CmdRequeued:
		r.Count = c.Requeued
	case CmdDriverItems:
		if c.Reason != "" {
			return misplaced("Reason (Failure?)")
		}
		r.Count, r.Reason = c.FirstItem, c.Failure
	case CmdNodeAdmin:
		if c.Reason != "" {
			return misplaced("Reason (NodeState?)")
		}
		r.Reason = string(c.NodeState)
	case CmdIncarnation:
		if c.Reason != "" {
			return misplaced("Reason (Incarnation?)")
		}
		r.Reason = c.Incarnation
	case CmdIDFloor:
		if c.WorkID != 0 {
			return misplaced("WorkID (IDFloor?)")
		}
		r.WorkID = c.IDFloor
	}
	return r, nil
}

// command returns the Command that r records.
func (r *commandRecord) command() Command {
	c := Command{Type: r.Type, Time: r.Time, Work: r.Work, WorkID: r.WorkID, Assign: r.Assign, Proc: r.Proc,
		By: r.By, Completion: r.Completion, Reason: r.Reason, ProcID: r.ProcID, Items: r.Items, Last: r.Last,
		Outcomes: r.Outcomes, Counts: r.Counts, Config: r.Config, Node: r.Node, Service: r.Service, Purge: r.Purge,
		Total: r.Total}
	switch r.Type {
	case CmdReady:
		c.InitMS = r.Count
	case CmdRequeued:
		c.Requeued = r.Count
	case CmdDriverItems:
		c.FirstItem, c.Failure, c.Reason = r.Count, r.Reason, ""
	case CmdNodeAdmin:
		c.NodeState, c.Reason = NodeAdminState(r.Reason), ""
	case CmdIncarnation:
		c.Incarnation, c.Reason = r.Reason, ""
	case CmdIDFloor:
		c.IDFloor, c.WorkID = r.WorkID, 0
	}
	return c
}

// MarshalCBOR encodes c as the Raft log holds it (commandRecord).
func (c Command) MarshalCBOR() ([]byte, error) {
	r, err := c.record()
	if err != nil {
		return nil, err
	}
	return wire.Marshal(r)
}

// UnmarshalCBOR decodes a command as the Raft log holds it.
func (c *Command) UnmarshalCBOR(data []byte) error {
	var r commandRecord
	if err := wire.UnmarshalLimit(data, &r, len(data)); err != nil {
		return err
	}
	*c = r.command()
	return nil
}

// Batch is the payload of one Raft log entry: many commands applied in
// order, atomically.
type Batch struct {
	Commands []Command `cbor:"1,keyasint"`
}

// batchRecord is a Batch as the log holds it; Encode and FSM.Apply use it
// so that the commands are encoded in one pass.
type batchRecord struct {
	Commands []commandRecord `cbor:"1,keyasint"`
}

// Encode encodes a batch of commands as one log entry.
func Encode(cmds ...Command) ([]byte, error) {
	b := batchRecord{Commands: make([]commandRecord, len(cmds))}
	for i := range cmds {
		r, err := cmds[i].record()
		if err != nil {
			return nil, err
		}
		b.Commands[i] = r
	}
	return wire.Marshal(b)
}

// decodeBatch decodes a log entry.
func decodeBatch(data []byte) ([]Command, error) {
	var b batchRecord
	if err := wire.UnmarshalLimit(data, &b, wire.MaxMessageSize*4); err != nil {
		return nil, err
	}
	cmds := make([]Command, len(b.Commands))
	for i := range b.Commands {
		cmds[i] = b.Commands[i].command()
	}
	return cmds, nil
}
