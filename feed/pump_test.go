package feed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/stream"
)

// fakeJD is the job driver's side of the driver protocol: it keeps the
// items numbered (a chunk sent again adds nothing), hands every queued
// item to a job process as a call comes in, and has room for hw queued.
type fakeJD struct {
	mu        sync.Mutex
	hw        int
	items     []string
	taken     int
	maxQueued int
	calls     int
	loseEvery int // the answer of every n-th call with items is lost after it applied
	ended     bool
}

func (j *fakeJD) call(_ context.Context, req wire.DriverRequest, rep *wire.DriverReply) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if req.Base > len(j.items) {
		return wire.Errorf(wire.CodeUsage, "gap: base %d, have %d", req.Base, len(j.items))
	}
	if skip := len(j.items) - req.Base; skip < len(req.Items) {
		j.items = append(j.items, req.Items[skip:]...)
	}
	j.ended = j.ended || req.End
	j.maxQueued = max(j.maxQueued, len(j.items)-j.taken)
	j.taken = len(j.items) // job processes take what is queued
	*rep = wire.DriverReply{Have: len(j.items), Room: j.hw, Stop: j.ended}
	if len(req.Items) > 0 {
		j.calls++
		if j.loseEvery > 0 && j.calls%j.loseEvery == 0 {
			return errors.New("connection reset: the head changed")
		}
	}
	return nil
}

// fakeHost is the agent for a pump: its calls to the job driver go to
// driver; it stops no process.
type fakeHost struct {
	Host
	driver func(ctx context.Context, req wire.DriverRequest, rep *wire.DriverReply) error
}

func (h fakeHost) Driver(ctx context.Context, req wire.DriverRequest, rep *wire.DriverReply) error {
	return h.driver(ctx, req, rep)
}

func (fakeHost) Stop(context.Context, string, time.Duration, string) {}

// fakeDriver plays a driver process of n items: it reads {"more": N} from
// the pump and answers with N items (fewer and the end at the end of its
// collection), as events; it asserts it is never asked for more than it
// was allowed to hold.
func fakeDriver(t *testing.T, n int, in io.Reader, events chan<- driverEvent) {
	defer close(events)
	// Once done, go on reading what the pump writes, as a real driver's
	// stdin (a pipe with a buffer, or closed: EPIPE) would take it: an
	// io.Pipe nobody reads blocks the pump's last {"more": N} for good.
	defer io.Copy(io.Discard, in)
	events <- driverEvent{ready: true}
	events <- driverEvent{total: n}
	sc := bufio.NewScanner(in)
	i := 0
	for sc.Scan() {
		var m stream.MoreLine
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.More <= 0 {
			t.Errorf("driver read %q", sc.Text())
			return
		}
		for k := 0; k < m.More && i < n; k++ {
			it := fmt.Sprint("item-", i)
			events <- driverEvent{item: &it}
			i++
		}
		if i == n {
			events <- driverEvent{end: true}
			return
		}
	}
}

func TestPumpSendsEveryItemOnceWithBackPressure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, hw     int
		loseEvery int
	}{
		{"small", 5, 1000, 0},
		{"many, small high-water mark", 20_000, 300, 0},
		{"answers lost", 5_000, 400, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			jd := &fakeJD{hw: tc.hw, loseEvery: tc.loseEvery}
			pr, pw := io.Pipe()
			events := make(chan driverEvent, 4096)
			go fakeDriver(t, tc.n, pr, events)
			p := &driverPump{ctx: ctx, log: slog.New(slog.DiscardHandler), node: "n1", spec: wire.ProcSpec{ID: "1.1", WorkID: 1},
				started: time.Now(), in: pw, host: fakeHost{driver: jd.call}}
			p.run(events)
			pr.Close()
			jd.mu.Lock()
			defer jd.mu.Unlock()
			if !jd.ended || len(jd.items) != tc.n {
				t.Fatalf("ended %v with %d items, want %d", jd.ended, len(jd.items), tc.n)
			}
			for i, it := range jd.items {
				if it != fmt.Sprint("item-", i) {
					t.Fatalf("item %d is %q", i, it)
				}
			}
			// Never more queued than the room the head gave (it takes
			// everything at each call, so one ask's worth).
			if jd.maxQueued > tc.hw {
				t.Errorf("the head queued %d items at once, over its high-water mark %d", jd.maxQueued, tc.hw)
			}
		})
	}
}

// A driver that dies before its end: the pump returns without telling
// the head anything (the exit report ends the job).
func TestPumpDriverGone(t *testing.T) {
	jd := &fakeJD{hw: 100}
	events := make(chan driverEvent, 10)
	events <- driverEvent{ready: true}
	close(events)
	pr, pw := io.Pipe()
	go io.Copy(io.Discard, pr)
	p := &driverPump{ctx: context.Background(), log: slog.New(slog.DiscardHandler), node: "n1", spec: wire.ProcSpec{ID: "1.1", WorkID: 1},
		started: time.Now(), in: pw, host: fakeHost{driver: jd.call}}
	p.run(events)
	if jd.ended || len(jd.items) != 0 {
		t.Errorf("after a driver died: ended %v, items %v", jd.ended, jd.items)
	}
}

// Protocol errors end the job through the head with a reason.
func TestPumpProtocolErrors(t *testing.T) {
	it := "x"
	for _, tc := range []struct {
		name   string
		events []driverEvent
	}{
		{"item before ready", []driverEvent{{item: &it}}},
		{"item not asked for", []driverEvent{{ready: true}, {item: &it}}},
		{"over-long line", []driverEvent{{ready: true}, {overlong: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failed string
			call := func(_ context.Context, req wire.DriverRequest, rep *wire.DriverReply) error {
				if req.Failed != "" {
					failed = req.Failed
				}
				*rep = wire.DriverReply{Have: req.Base} // no room: the pump asks for nothing
				return nil
			}
			events := make(chan driverEvent, 10)
			for _, ev := range tc.events {
				events <- ev
			}
			close(events)
			pr, pw := io.Pipe()
			go io.Copy(io.Discard, pr)
			p := &driverPump{ctx: context.Background(), log: slog.New(slog.DiscardHandler), node: "n1", spec: wire.ProcSpec{ID: "1.1", WorkID: 1},
				started: time.Now(), in: pw, host: fakeHost{driver: call}}
			p.run(events)
			if failed == "" {
				t.Errorf("no failure reported")
			}
		})
	}
}
