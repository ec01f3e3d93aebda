// Package stream declares the lines a job's processes and the agent
// exchange over the processes' stdin and stdout (docs/jobs.md, "Worker
// protocols" and "Driver process protocol"), once for every side that
// reads or writes them: the agent's feed (package feed) and the exec
// worker (package proc).
//
// It is part of wire, which owns every byte that crosses a process
// boundary, but a package of its own that imports only encoding/json: the
// exec worker is linked into the small ducc-shim, which must not link
// wire's CBOR codec (ARCHITECTURE.md, "Starting a process").
//
// Each line is one JSON object ending with "\n". The agent writes its own
// lines without encoding/json and reads the common answers without it too
// (package feed; its tests hold both to these types).
package stream

import "encoding/json"

// ReadyLine is the line a job process or a driver process prints once it has
// initialized.
const ReadyLine = `{"ready": true}`

// ItemLine is the line the agent writes to a job process's stdin to hand it a
// work item: {"id": "42", "item": "some text"}. The agent's id is the
// item's index as a JSON string; a worker echoes it back as it came.
type ItemLine struct {
	ID   json.RawMessage `json:"id"`
	Item *string         `json:"item"`
}

// WorkerLine is a line a job process prints on its stdout: ReadyLine once, then
// one answer per item, {"id": "42", "ok": true, "result": ...} or
// {"id": "42", "error": "..."}. The agent takes a line for protocol when it
// is a JSON object with "ready" or a string "id" (null is no id); other
// lines go to the process's log.
type WorkerLine struct {
	Ready  *bool           `json:"ready,omitempty"`
	ID     json.RawMessage `json:"id,omitempty"`
	OK     bool            `json:"ok,omitempty"`
	Result json.RawMessage `json:"result,omitempty"` // any JSON value
	Error  *string         `json:"error,omitempty"`
}

// MoreLine is the line the agent writes to a driver process's stdin to ask it
// for N more items: {"more": 1000}.
type MoreLine struct {
	More int `json:"more"`
}

// DriverLine is a line a driver process prints on its stdout: ReadyLine once,
// {"total": N} at any time, the items it was asked for, {"item": "..."},
// and {"end": true} when its collection is exhausted. A JSON object with
// none of these keys is not protocol and goes to the driver's log.
type DriverLine struct {
	Ready *bool   `json:"ready,omitempty"`
	Item  *string `json:"item,omitempty"`
	End   *bool   `json:"end,omitempty"`
	Total *int    `json:"total,omitempty"`
}
