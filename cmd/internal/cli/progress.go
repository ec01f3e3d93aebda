package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// waitJob follows a job until it ends: a live progress bar when out is a
// terminal, a plain line every few seconds otherwise, nothing but the final
// WorkInfo with json. It returns nil only when the job completed with
// EndOfJob. With cancelOnInterrupt the first Ctrl-C cancels the job and
// keeps waiting for it to end (a second one stops waiting); without it,
// Ctrl-C stops waiting and leaves the job running.
func waitJob(ctx context.Context, c *client, id uint64, out, errOut io.Writer, cancelOnInterrupt, json bool) error {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	o := waitOpts{
		cancelOnInterrupt: cancelOnInterrupt,
		json:              json,
		interrupt:         sig,
		poll:              500 * time.Millisecond,
		lineEvery:         5 * time.Second,
		quietEvery:        time.Minute,
		now:               time.Now,
	}
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		o.tty, o.width = true, termWidth(f)
	}
	return waitJobWith(ctx, c, id, out, errOut, o)
}

// waitOpts are waitJob's knobs, set by tests.
type waitOpts struct {
	cancelOnInterrupt bool
	json              bool
	tty               bool
	width             int
	interrupt         <-chan os.Signal
	poll              time.Duration // how long one wait call may block
	lineEvery         time.Duration // plain lines: at most one per this
	quietEvery        time.Duration // plain lines: at least one per this
	now               func() time.Time
	retryFor          time.Duration // how long to ride out an unreachable agent
}

type pollResult struct {
	info wire.WorkInfo
	err  error
}

func waitJobWith(ctx context.Context, c *client, id uint64, out, errOut io.Writer, o waitOpts) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.retryFor == 0 {
		o.retryFor = 30 * time.Second
	}
	var view progressView = nopView{}
	switch {
	case o.json:
	case o.tty:
		view = &barView{w: out, width: o.width, id: id}
	default:
		view = &lineView{w: out, id: id, every: o.lineEvery, quiet: o.quietEvery}
	}
	results := make(chan pollResult, 1)
	poll := func() {
		pctx, cancel := context.WithTimeout(ctx, o.poll+30*time.Second)
		defer cancel()
		var info wire.WorkInfo
		err := c.call(pctx, wire.MethodWait, wire.WaitRequest{ID: id, TimeoutMS: o.poll.Milliseconds()}, &info)
		results <- pollResult{info, err}
	}
	go poll()
	rate := &rateMeter{}
	var (
		canceling   bool
		unreachable time.Time
		last        wire.WorkInfo
	)
	for {
		select {
		case <-ctx.Done():
			view.clear()
			return &exitError{code: exitFailed, msg: fmt.Sprintf("stopped waiting for job %d (%v); it keeps running: 'ducc wait %d' or 'ducc cancel %d'", id, ctx.Err(), id, id)}
		case <-o.interrupt:
			view.clear()
			if !o.cancelOnInterrupt || canceling {
				what := "it keeps running"
				if canceling {
					what = "it is being canceled"
				}
				return &exitError{code: exitFailed, msg: fmt.Sprintf("stopped waiting for job %d; %s: 'ducc wait %d' to follow it, 'ducc cancel %d' to stop it", id, what, id, id)}
			}
			canceling = true
			fmt.Fprintf(errOut, "ducc: canceling job %d (Ctrl-C again to stop waiting)\n", id)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			var info wire.WorkInfo
			err := c.call(cctx, wire.MethodCancel, wire.CancelRequest{ID: id, Reason: "interrupted (cancel_on_interrupt)"}, &info)
			cancel()
			if err != nil {
				fmt.Fprintf(errOut, "ducc: could not cancel job %d: %v; try 'ducc cancel %d'\n", id, errMsg(err), id)
			}
		case r := <-results:
			now := o.now()
			if r.err != nil {
				var ee *exitError
				if errors.As(r.err, &ee) && ee.code == exitUnreachable && ctx.Err() == nil {
					if unreachable.IsZero() {
						unreachable = now
						view.clear()
						fmt.Fprintf(errOut, "ducc: lost the agent (%s); retrying for %s\n", ee.msg, o.retryFor)
					}
					if now.Sub(unreachable) < o.retryFor {
						go func() {
							time.Sleep(o.poll)
							poll()
						}()
						continue
					}
				}
				if ctx.Err() != nil {
					continue // reported by the ctx.Done case
				}
				view.clear()
				return r.err
			}
			unreachable = time.Time{}
			last = r.info
			if last.Job != nil {
				rate.add(now, last.Job.Done+last.Job.Failed)
			}
			if last.Ended {
				view.finish(&last, rate, now)
				return jobEnd(out, &last, o.json)
			}
			view.update(&last, rate, now)
			go poll()
		}
	}
}

// jobEnd prints the outcome and turns it into an exit code.
func jobEnd(out io.Writer, info *wire.WorkInfo, json bool) error {
	if json {
		if err := printJSON(out, info); err != nil {
			return err
		}
	}
	if info.Completion == string(wire.CompletionEndOfJob) {
		return nil
	}
	msg := fmt.Sprintf("job %d ended %s", info.ID, info.Completion)
	if info.Reason != "" {
		msg += ": " + info.Reason
	}
	if s := info.Job; s != nil && s.Failed > 0 {
		if info.Reason == "" {
			msg += fmt.Sprintf(": %d of %d items failed", s.Failed, s.Total)
		}
		msg += fmt.Sprintf("; see 'ducc results %d --failed'", info.ID)
	}
	return &exitError{code: exitFailed, msg: msg}
}

func errMsg(err error) string {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.msg
	}
	return err.Error()
}

// rateMeter measures items per second over the last few seconds.
type rateMeter struct {
	t []time.Time
	n []int
}

const rateWindow = 10 * time.Second

func (r *rateMeter) add(t time.Time, n int) {
	r.t = append(r.t, t)
	r.n = append(r.n, n)
	i := 0
	for i < len(r.t)-2 && t.Sub(r.t[i+1]) >= rateWindow {
		i++
	}
	r.t, r.n = r.t[i:], r.n[i:]
}

// rate is the measured rate; the server's figure when it gives one.
func (r *rateMeter) rate(s *wire.JobStats) float64 {
	if s != nil && s.Rate > 0 {
		return s.Rate
	}
	if len(r.t) < 2 {
		return 0
	}
	dt := r.t[len(r.t)-1].Sub(r.t[0]).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(r.n[len(r.n)-1]-r.n[0]) / dt
}

// progressView shows a job's progress.
type progressView interface {
	update(info *wire.WorkInfo, r *rateMeter, now time.Time)
	finish(info *wire.WorkInfo, r *rateMeter, now time.Time)
	clear() // before something else is printed
}

type nopView struct{}

func (nopView) update(*wire.WorkInfo, *rateMeter, time.Time) {}
func (nopView) finish(*wire.WorkInfo, *rateMeter, time.Time) {}
func (nopView) clear()                                       {}

// summary is the plain-text line for a job: its counters when it has
// items, else its state and why.
func summary(info *wire.WorkInfo, rate float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %d: ", info.ID)
	s := info.Job
	if s == nil || (s.Total == 0 && !info.Ended) {
		b.WriteString(stateText(info))
		return b.String()
	}
	fmt.Fprintf(&b, "%d/%d done, %s, %s", s.Done, s.Total, units.Plural(s.Failed, "error"), units.Plural(s.Processes, "process"))
	if !info.Ended {
		fmt.Fprintf(&b, ", %s items/s", humanRate(rate))
		if info.State != "Running" {
			fmt.Fprintf(&b, " (%s)", stateText(info))
		}
	}
	return b.String()
}

func stateText(info *wire.WorkInfo) string {
	st := info.State
	if info.Ended && info.Completion != "" {
		st = info.Completion
	}
	if info.Reason != "" {
		st += ": " + info.Reason
	}
	return st
}

// finalLine is what both views print when the job ends.
func finalLine(info *wire.WorkInfo) string {
	line := fmt.Sprintf("job %d %s", info.ID, info.Completion)
	if s := info.Job; s != nil {
		line += fmt.Sprintf(": %d/%d done, %s", s.Done, s.Total, units.Plural(s.Failed, "error"))
		if info.StartedAt > 0 && info.EndedAt > info.StartedAt {
			d := time.Duration(info.EndedAt-info.StartedAt) * time.Millisecond
			r := 100 * time.Millisecond
			if d < time.Second {
				r = time.Millisecond
			}
			line += fmt.Sprintf(" in %s", d.Round(r))
			if d > 0 && s.Done > 0 {
				line += fmt.Sprintf(" (%s items/s)", humanRate(float64(s.Done)/d.Seconds()))
			}
		}
	}
	return line
}

// lineView prints a plain line when the state changes, at most every
// `every` while the counters move, and at least every `quiet`.
type lineView struct {
	w            io.Writer
	id           uint64
	every, quiet time.Duration
	lastAt       time.Time
	lastState    string
	lastCount    int
}

func (v *lineView) update(info *wire.WorkInfo, r *rateMeter, now time.Time) {
	count := -1
	if info.Job != nil {
		count = info.Job.Done + info.Job.Failed + info.Job.Processes<<32
	}
	st := info.State + "\x00" + info.Reason
	due := v.lastAt.IsZero() || st != v.lastState ||
		(count != v.lastCount && now.Sub(v.lastAt) >= v.every) ||
		now.Sub(v.lastAt) >= v.quiet
	if !due {
		return
	}
	v.lastAt, v.lastState, v.lastCount = now, st, count
	fmt.Fprintln(v.w, summary(info, r.rate(info.Job)))
}

func (v *lineView) finish(info *wire.WorkInfo, _ *rateMeter, _ time.Time) {
	fmt.Fprintln(v.w, finalLine(info))
}

func (v *lineView) clear() {}

// barView redraws one line on a terminal:
//
//	job 17 [██████████░░░░░░░░░░]  5000/10000  50%  3 errors  4 procs  812/s  ETA 6s
type barView struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	id    uint64
	drawn bool
}

func (v *barView) update(info *wire.WorkInfo, r *rateMeter, _ time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprint(v.w, "\r"+barLine(info, r.rate(info.Job), v.width)+"\x1b[K")
	v.drawn = true
}

func (v *barView) finish(info *wire.WorkInfo, _ *rateMeter, _ time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.drawn {
		fmt.Fprint(v.w, "\r\x1b[K")
	}
	v.drawn = false
	fmt.Fprintln(v.w, finalLine(info))
}

func (v *barView) clear() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.drawn {
		fmt.Fprint(v.w, "\r\x1b[K")
		v.drawn = false
	}
}

// barLine renders the bar for a terminal width.
func barLine(info *wire.WorkInfo, rate float64, width int) string {
	if width <= 0 {
		width = 80
	}
	width-- // never write the last column: some terminals wrap there
	s := info.Job
	if s == nil || s.Total == 0 {
		return clip(fmt.Sprintf("job %d %s", info.ID, stateText(info)), width)
	}
	finished := s.Done + s.Failed
	pct := 100 * finished / s.Total
	tail := fmt.Sprintf(" %d/%d %3d%%", finished, s.Total, pct)
	if s.Failed > 0 {
		tail += fmt.Sprintf("  %s", units.Plural(s.Failed, "error"))
	}
	tail += fmt.Sprintf("  %s", units.Plural(s.Processes, "proc"))
	if info.State == "Running" || rate > 0 {
		tail += fmt.Sprintf("  %s/s", humanRate(rate))
		if rate > 0 && finished < s.Total {
			eta := time.Duration(float64(s.Total-finished) / rate * float64(time.Second))
			tail += "  ETA " + units.FormatDuration(eta)
		}
	}
	if info.State != "Running" {
		tail += "  " + info.State
	}
	head := fmt.Sprintf("job %d ", info.ID)
	barW := width - len(head) - utf8.RuneCountInString(tail) - 2
	if barW > 40 {
		barW = 40
	}
	if barW < 5 {
		return clip(head+strings.TrimSpace(tail), width)
	}
	full := barW * finished / s.Total
	return head + "[" + strings.Repeat("█", full) + strings.Repeat("░", barW-full) + "]" + tail
}

func clip(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	if width < 2 {
		return string(r[:max(width, 0)])
	}
	return string(r[:width-1]) + "…"
}

func humanRate(r float64) string {
	switch {
	case r >= 10_000:
		return fmt.Sprintf("%.0fk", r/1000)
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	default:
		return fmt.Sprintf("%.1f", r)
	}
}

// termWidth is the terminal's width, 80 when it cannot be told.
func termWidth(f *os.File) int {
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil || w <= 0 {
		return 80
	}
	return w
}

// outWidth is the width to fit output to: the terminal's when w is one,
// 0 (no limit) when it is a pipe or a file.
func outWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return termWidth(f)
	}
	return 0
}
