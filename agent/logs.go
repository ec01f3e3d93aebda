package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// eventWriter sends AttachEvents as NDJSON, or, with raw set, only the
// log output as plain bytes (the dashboard's log view).
type eventWriter struct {
	w   http.ResponseWriter
	enc *json.Encoder
	raw io.Writer
	// attached marks the output of an attached `ducc run`, which the CLI
	// prints as the process's own stdout: the line the shim appends to the
	// log when the memory cap struck ("ducc: process 5.1 ...") is left out
	// (ducc run says it on stderr). held is the output's last line while
	// it may be that line.
	attached bool
	held     []byte
}

// oomLinePrefix begins the line the shim appends to a log when the memory
// cap killed a process of its tree (proc's oomLogLine).
const oomLinePrefix = "ducc: process "

// holdBack returns what of the output b may be sent now, keeping back a
// last line that is, or may become, the shim's line about the memory cap.
func (e *eventWriter) holdBack(b []byte) []byte {
	data := append(e.held, b...)
	start := 0
	if len(data) > 1 {
		start = bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	}
	last := data[start:]
	cut := len(data)
	if bytes.HasPrefix(last, []byte(oomLinePrefix)) || bytes.HasPrefix([]byte(oomLinePrefix), last) {
		cut = start
	}
	e.held = append([]byte(nil), data[cut:]...)
	return data[:cut]
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	return &eventWriter{w: w, enc: json.NewEncoder(w)}
}

func (e *eventWriter) send(ev wire.AttachEvent) error {
	if e.attached {
		if len(ev.Output) > 0 {
			if ev.Output = e.holdBack(ev.Output); len(ev.Output) == 0 {
				return nil
			}
		} else if held := e.held; len(held) > 0 {
			// The output stops here (an end, a notice): a whole last line
			// of the shim's is left out, anything else goes first.
			e.held = nil
			whole := bytes.HasPrefix(held, []byte(oomLinePrefix)) && bytes.IndexByte(held, '\n') == len(held)-1
			if !whole {
				if err := e.emit(wire.AttachEvent{Output: held}); err != nil {
					return err
				}
			}
		}
	}
	return e.emit(ev)
}

// emit writes one event.
func (e *eventWriter) emit(ev wire.AttachEvent) error {
	if e.raw != nil {
		if len(ev.Output) > 0 {
			_, err := e.raw.Write(ev.Output)
			return err
		}
		return nil
	}
	if err := e.enc.Encode(ev); err != nil {
		return err
	}
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// apiAttach submits a managed reservation and streams its output until it
// ends (`ducc run` without --detach).
func (a *Agent) apiAttach(w http.ResponseWriter, r *http.Request) {
	c, err := a.caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var req wire.RunRequest
	if err := decodeJSON(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	var rep wire.SubmitReply
	a.awaitNodeKnown(r.Context())
	if err := a.callHead(r.Context(), wire.MethodRun, c, req, &rep); err != nil {
		writeErr(w, err)
		return
	}
	ev := newEventWriter(w)
	ev.attached = true
	if ev.send(wire.AttachEvent{ID: rep.ID}) != nil {
		return
	}
	a.follow(r.Context(), ev, c, rep.ID, true)
}

// apiLogs streams the log of a piece of work's process (GET
// /v1/logs?id=17[&process=17.1][&follow=1]).
func (a *Agent) apiLogs(w http.ResponseWriter, r *http.Request) {
	c, err := a.caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	id, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		writeErr(w, wire.Errorf(wire.CodeUsage, "bad work id %q", r.URL.Query().Get("id")))
		return
	}
	// Refuse before the stream starts, so the refusal is the answer.
	var acc wire.LogAccess
	a.awaitNodeKnown(r.Context())
	if err := a.callHead(r.Context(), wire.MethodLogAccess, c, wire.IDRequest{ID: id}, &acc); err != nil {
		writeErr(w, err)
		return
	}
	ev := newEventWriter(w)
	a.followProc(r.Context(), ev, c, id, r.URL.Query().Get("process"), r.URL.Query().Get("follow") == "1")
}

// follow streams the output of a one-process work until it ends, then
// sends its final state.
func (a *Agent) follow(ctx context.Context, ev *eventWriter, c wire.Caller, id uint64, tail bool) {
	a.followProc(ctx, ev, c, id, "", tail)
}

// followProc waits for the process to have a log, streams it (following
// while the work runs if tail is set) and ends with the work's state.
// The head decides whether c may read the work's logs (MethodLogAccess)
// and names the uid that must own them (openLog).
func (a *Agent) followProc(ctx context.Context, ev *eventWriter, c wire.Caller, id uint64, procID string, tail bool) {
	var acc wire.LogAccess
	if err := a.callHead(ctx, wire.MethodLogAccess, c, wire.IDRequest{ID: id}, &acc); err != nil {
		_ = ev.send(wire.AttachEvent{Error: &wire.APIError{Error: err.Error(), Code: max(wire.ErrorCode(err), 1)}})
		return
	}
	info := acc.Work
	for {
		if p := pickProc(info, procID); (p != nil && p.LogPath != "") || info.Ended || !tail {
			break
		}
		if err := a.callHead(ctx, wire.MethodWait, c, wire.WaitRequest{ID: id, State: info.State, TimeoutMS: 60_000}, &info); err != nil {
			_ = ev.send(wire.AttachEvent{Error: &wire.APIError{Error: err.Error(), Code: max(wire.ErrorCode(err), 1)}})
			return
		}
	}
	// Nothing ran (launch failure, canceled while pending): no log.
	if p := pickProc(info, procID); p != nil && p.LogPath != "" {
		if n := othersNotice(info, p, procID); n != "" {
			_ = ev.send(wire.AttachEvent{Notice: n})
		}
		var err error
		if p.Node != a.cfg.Node {
			err = a.tailRemote(ctx, ev, c, p, tail && !info.Ended)
		} else {
			err = a.tailFile(ctx, ev, c, id, p.LogPath, acc, tail && !info.Ended)
		}
		if wire.ErrorCode(err) == wire.CodeUsage {
			// A refused log (a link, not the owner's file, not this
			// caller's to read) ends the answer with the refusal.
			_ = ev.send(wire.AttachEvent{Error: &wire.APIError{Error: err.Error(), Code: wire.CodeUsage}})
			return
		}
		if err != nil {
			_ = ev.send(wire.AttachEvent{Notice: "log: " + err.Error()})
		}
	}
	if tail && !info.Ended {
		if err := a.callHead(ctx, wire.MethodWait, c, wire.WaitRequest{ID: id}, &info); err != nil {
			_ = ev.send(wire.AttachEvent{Error: &wire.APIError{Error: err.Error(), Code: max(wire.ErrorCode(err), 1)}})
			return
		}
	} else if err := a.callHead(ctx, wire.MethodShow, c, wire.IDRequest{ID: id}, &info); err != nil {
		_ = ev.send(wire.AttachEvent{Error: &wire.APIError{Error: err.Error(), Code: max(wire.ErrorCode(err), 1)}})
		return
	}
	_ = ev.send(wire.AttachEvent{Work: &info})
}

// othersNotice says, when no process was asked for and the work has
// others, which process's log is shown and how to see the others
// ("" otherwise): the log of one process of a two-process job used to
// come with no word of the other.
func othersNotice(info wire.WorkInfo, shown *wire.ProcInfo, procID string) string {
	if procID != "" {
		return ""
	}
	var others []string
	for _, p := range info.Procs {
		if p.ID != shown.ID {
			others = append(others, p.ID)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return fmt.Sprintf("showing the log of process %s of work %d (on %s); its other processes: %s ('ducc logs %d --process ID' shows one)",
		shown.ID, info.ID, shown.Node, strings.Join(others, ", "), info.ID)
}

func pickProc(info wire.WorkInfo, procID string) *wire.ProcInfo {
	for i := range info.Procs {
		if procID == "" || info.Procs[i].ID == procID {
			return &info.Procs[i]
		}
	}
	return nil
}

// tailFile sends the file's content; with follow it keeps reading until
// the work ends, then drains what is left. The file must be the work's
// log, owned by the uid its processes run as (openLog, logOwner).
func (a *Agent) tailFile(ctx context.Context, ev *eventWriter, c wire.Caller, id uint64, path string, acc wire.LogAccess, follow bool) error {
	uid, err := logOwner(acc)
	if err != nil {
		return err
	}
	f, err := openLog(path, uid)
	if err != nil {
		return err
	}
	defer f.Close()
	done := make(chan struct{})
	if follow {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			defer close(done)
			var info wire.WorkInfo
			for wctx.Err() == nil {
				if err := a.callHead(wctx, wire.MethodWait, c, wire.WaitRequest{ID: id, TimeoutMS: 60_000}, &info); err != nil || info.Ended {
					return
				}
			}
		}()
	} else {
		close(done)
	}
	ended := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	return followFile(ctx, f, func(b []byte) error {
		return ev.send(wire.AttachEvent{Output: append([]byte(nil), b...)})
	}, ended, done)
}

// followFile sends f's content in chunks of up to wire.MaxLogChunk bytes,
// and keeps reading as the file grows until ended reports true; one more
// read then drains what was written last. Between reads of a file that
// does not grow it waits longer and longer (up to 100 ms), or until wake
// is closed (the end, when the caller learns of it as it happens; nil
// when it cannot), so that a process that ends is not waited for a
// whole pause. It returns nil once the content is sent, when ctx ends or
// when send fails (the reader went away), and the error of a failed
// read.
func followFile(ctx context.Context, f io.Reader, send func([]byte) error, ended func() bool, wake <-chan struct{}) error {
	buf := make([]byte, wire.MaxLogChunk)
	idle := time.Millisecond
	finished := false
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if send(buf[:n]) != nil {
				return nil
			}
			idle = time.Millisecond
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if finished {
			return nil
		}
		if ended() {
			finished = true
			continue
		}
		t := time.NewTimer(idle)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
			t.Stop()
			wake = nil // closed: ended() now says so
		case <-t.C:
			idle = min(idle*2, 100*time.Millisecond)
		}
	}
}
