package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// Chunking of work items (ARCHITECTURE: submissions go through Raft in
// chunks). A chunk holds at most chunkItems items and about chunkBytes of
// JSON-encoded item text; one item may be at most maxItemBytes long.
const (
	chunkItems   = 50_000
	chunkBytes   = 4 << 20
	maxItemBytes = spec.MaxItemSize
)

func newSubmitCmd(g *globals) *cobra.Command {
	var specFlag string
	cmd := &cobra.Command{
		Use:   "submit [SPEC_FILE] [flags] [-- CMD [ARGS...]]",
		Short: "submit a job of work items",
		Long: `Submit a job: a worker command and a list of work items. The spec is a
YAML file (.yaml, .yml) or a DUCC-style properties file (key = value, ${VAR}
substitution); every key can also be given as a flag (process_memory_size =
--process-memory-size), and flags win over the file. The worker command may also
follow '--'.

Work items are lines of text: from --input-file FILE (or input_file in the spec),
else input_items (YAML), else standard input when it is not a terminal. Empty
lines are skipped. Or a driver process produces them: driver_executable
(docs/jobs.md, "Driver process protocol"). A job has one item source: when the
spec file gives the items (input_items, input_file, a driver process) and
standard input has data too, the job is refused (exit 2) rather than leave
either unread; give --input-file - to use standard input instead. A pipe with
nothing in it yet (after 0.1 s) is left unread, with a note on stderr.

The job runs in the current directory unless working_directory says otherwise,
with no environment beyond PATH, HOME and USER and what 'environment' lists.
See docs/jobs.md for the keys and the worker protocols.`,
		Example: `  ducc submit job.yaml
  ducc submit job.properties --process-memory-size 2G --wait
  seq 1 1000 | ducc submit --worker-protocol exec --wait -- factor {}
  ducc submit --input-file lines.txt --process-executable ./worker.py --cancel-on-interrupt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var command []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				command = args[dash:]
				args = args[:dash]
			}
			file, err := specFile(specFlag, args)
			if err != nil {
				return err
			}
			jr, err := loadSubmission(cmd, file, command)
			if err != nil {
				return err
			}
			if err := checkStdin(cmd, jr, file); err != nil {
				return err
			}
			c := newClient(g)
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			var id uint64
			if jr.Spec.DriverExecutable != "" {
				// The driver process produces the items (docs/jobs.md).
				var rep wire.SubmitReply
				if err := c.call(ctx, wire.MethodSubmit, wire.SubmitJobRequest{Spec: jr.Spec}, &rep); err != nil {
					return err
				}
				id = rep.ID
			} else {
				src, closeSrc, err := openItems(jr, cmd.InOrStdin())
				if err != nil {
					return err
				}
				if file != "" && jr.InputFile == "" && !jr.HaveItems {
					src = &notEmpty{src: src, file: file}
				}
				defer closeSrc()
				if id, _, err = submitJob(ctx, c, jr.Spec, src, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			if jr.AttachConsole {
				fmt.Fprintf(cmd.ErrOrStderr(), "ducc: attach_console is not supported; follow a job process with 'ducc logs %d -f'\n", id)
			}
			if !jr.Wait {
				if g.json {
					return printJSON(cmd.OutOrStdout(), wire.SubmitReply{ID: id})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Job %d submitted\n", id)
				return nil
			}
			if !g.json {
				fmt.Fprintf(cmd.OutOrStdout(), "Job %d submitted\n", id)
			}
			return waitJob(ctx, c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), jr.CancelOnInterrupt, g.json)
		},
	}
	addSpecificationFlag(cmd, &specFlag, "job spec")
	spec.AddFlags(cmd.Flags(), spec.KindJob, nil)
	return cmd
}

// notEmpty says, when a spec file's job gets no items from standard input,
// that the file may be a managed reservation (DUCC users have both kinds
// of spec files).
type notEmpty struct {
	src  itemSource
	file string
	seen bool
}

func (n *notEmpty) next() (string, bool, error) {
	it, ok, err := n.src.next()
	if err == nil && !ok && !n.seen {
		return "", false, usageErr("no work items: %s names no input_file or input_items and standard input is empty; "+
			"if it describes one process (a DUCC managed reservation), run it with 'ducc run --specification %s'", n.file, n.file)
	}
	n.seen = n.seen || ok
	return it, ok, err
}

// loadSubmission reads the spec file (if any), lays the flags and the
// command after '--' over it and interprets the result.
func loadSubmission(cmd *cobra.Command, file string, command []string) (*spec.Job, error) {
	raw := spec.Raw{}
	if file != "" {
		var err error
		var warn []string
		if raw, warn, err = spec.ParseFile(file, spec.KindJob); err != nil {
			return nil, usageErr("%v", err)
		}
		printWarnings(cmd, warn)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, &exitError{code: exitFailed, msg: fmt.Sprintf("cannot read the current directory: %v", err)}
	}
	// Relative paths given on the command line are relative to the current
	// directory.
	f := cmd.Flags()
	if err := spec.FlagValues(f, spec.KindJob, raw, cwd); err != nil {
		return nil, usageErr("%v", err)
	}
	if f.Changed("input-file") {
		delete(raw, "input_items") // the flag replaces the file's items
	}
	if len(command) > 0 {
		if f.Changed("process-executable") || f.Changed("process-executable-args") {
			return nil, usageErr("give the worker command either after '--' or with --process-executable/--process-executable-args, not both")
		}
		raw["process_executable"] = spec.Value{S: command[0], At: "command after --", Base: cwd}
		raw["process_executable_args"] = spec.Value{List: command[1:], IsList: true, At: "command after --", Base: cwd}
	}
	jr, err := spec.BuildJob(raw, cwd)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if jr.Spec.Umask == "" {
		jr.Spec.Umask = callerUmask()
	}
	jr.Spec.Environment = spec.ExpandEnv(jr.Spec.Environment, os.Environ())
	if jr.Spec.ShareGID, err = shareGID(jr.Spec.ShareGroup); err != nil {
		return nil, err
	}
	return jr, nil
}

// stdinWait is how long checkStdin waits for a pipe on standard input to
// bring data (a producer started with ducc, as in 'seq 1 9 | ducc submit').
const stdinWait = 100 * time.Millisecond

// checkStdin refuses a job whose spec file gives its items (input_items,
// input_file, a driver process) while standard input has data too: one of
// them would be silently ignored. Items from flags (--input-file,
// --driver-executable) are the caller's explicit choice, as a file named
// to grep is: standard input is not looked at then.
func checkStdin(cmd *cobra.Command, jr *spec.Job, file string) error {
	f := cmd.Flags()
	var from string
	switch {
	case file == "" || jr.InputFile == "-":
		return nil
	case jr.HaveItems:
		n := 0
		for _, it := range jr.Items {
			if it != "" {
				n++
			}
		}
		from = fmt.Sprintf("%s gives %s in input_items", file, units.Plural(n, "item"))
	case jr.InputFile != "" && !f.Changed("input-file"):
		from = fmt.Sprintf("%s reads the items from input_file %s", file, jr.InputFile)
	case jr.Spec.DriverExecutable != "" && !f.Changed("driver-executable") && !f.Changed("driver-descriptor-CR"):
		from = fmt.Sprintf("the driver process %s names makes the items", file)
	default:
		return nil
	}
	switch peekStdin(cmd.InOrStdin(), stdinWait) {
	case stdinData:
		if jr.Spec.DriverExecutable != "" {
			return usageErr("standard input has data, but %s: a job has one item source; don't pipe anything in (or add </dev/null)", from)
		}
		return usageErr("standard input has data, but %s: a job has one item source; to use standard input, give --input-file - "+
			"(it replaces the spec's items); to use the spec's, don't pipe anything in (or add </dev/null)", from)
	case stdinPending:
		printErr(cmd.ErrOrStderr(), fmt.Sprintf("standard input is not read: %s (nothing had come on standard input yet; to read the items from it, give --input-file -)", from))
	}
	return nil
}

// stdinState is what peekStdin learned of standard input.
type stdinState int

const (
	stdinNone    stdinState = iota // a terminal, empty or at its end
	stdinData                      // data to read
	stdinPending                   // an open pipe with nothing in it yet
)

// peekStdin tells whether r, standard input, has data, without blocking
// for more than wait: a terminal or an empty or ended input has none; a
// regular file has data when it has bytes past its offset; a pipe or
// socket, when bytes come within wait (FIONREAD: nothing is read, so a
// shared standard input is left as it was); an open pipe with nothing yet
// is pending. A reader that is not a file (tests) has data when it has a
// length.
func peekStdin(r io.Reader, wait time.Duration) stdinState {
	f, ok := r.(*os.File)
	if !ok {
		if l, ok := r.(interface{ Len() int }); ok && l.Len() > 0 {
			return stdinData
		}
		return stdinNone
	}
	if isTerminal(f) {
		return stdinNone
	}
	st, err := f.Stat()
	if err != nil {
		return stdinNone
	}
	if st.Mode().IsRegular() {
		off, err := f.Seek(0, io.SeekCurrent)
		if err == nil && st.Size() > off {
			return stdinData
		}
		return stdinNone
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(wait.Milliseconds()))
	for err == unix.EINTR {
		n, err = unix.Poll(fds, int(wait.Milliseconds()))
	}
	if err != nil {
		return stdinNone
	}
	if n == 0 {
		if st.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0 {
			return stdinPending
		}
		return stdinNone
	}
	if fds[0].Revents&(unix.POLLIN|unix.POLLHUP) == 0 {
		return stdinNone
	}
	// How much is there (FIONREAD), without reading it:
	// standard input may be shared (a script fed to a shell), and what
	// ducc does not use is not its to take.
	if k, err := unix.IoctlGetInt(int(f.Fd()), fionread); err == nil && k > 0 {
		return stdinData
	}
	return stdinNone
}

// itemSource yields work items one at a time.
type itemSource interface {
	// next returns the next item; ok is false at the end.
	next() (item string, ok bool, err error)
}

// openItems picks the item source: input file, input_items, standard input.
func openItems(jr *spec.Job, stdin io.Reader) (itemSource, func(), error) {
	nop := func() {}
	switch {
	case jr.InputFile == "-":
		return newLineSource(stdin, "standard input"), nop, nil
	case jr.InputFile != "":
		f, err := os.Open(jr.InputFile)
		if err != nil {
			return nil, nil, usageErr("cannot read the work items: %v", err)
		}
		return newLineSource(f, jr.InputFile), func() { f.Close() }, nil
	case jr.HaveItems:
		return &sliceSource{items: jr.Items}, nop, nil
	}
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		return nil, nil, usageErr("no work items: give --input-file FILE, input_items in a YAML spec, or pipe the items (one per line) on standard input")
	}
	if stdin == nil {
		return nil, nil, usageErr("no work items: give --input-file FILE or input_items in a YAML spec")
	}
	return newLineSource(stdin, "standard input"), nop, nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

type sliceSource struct {
	items []string
	i     int
}

func (s *sliceSource) next() (string, bool, error) {
	for s.i < len(s.items) {
		it := s.items[s.i]
		s.i++
		if it == "" {
			continue
		}
		if len(it) > maxItemBytes {
			return "", false, usageErr("input_items entry %d is longer than %d bytes; put large inputs in files and pass their names as items", s.i, maxItemBytes)
		}
		return it, true, nil
	}
	return "", false, nil
}

// lineSource reads items, one per line, without holding more than one line.
type lineSource struct {
	r    *bufio.Reader
	name string
	line int
}

func newLineSource(r io.Reader, name string) *lineSource {
	return &lineSource{r: bufio.NewReaderSize(r, 256<<10), name: name}
}

func (s *lineSource) next() (string, bool, error) {
	for {
		b, err := s.readLine()
		if err != nil {
			return "", false, err
		}
		if b == nil {
			return "", false, nil
		}
		s.line++
		if len(b) == 0 {
			continue
		}
		if !utf8.Valid(b) {
			return "", false, usageErr("%s line %d is not UTF-8 text; work items are lines of text", s.name, s.line)
		}
		return string(b), true, nil
	}
}

// readLine returns the next line without its end (nil at EOF).
func (s *lineSource) readLine() ([]byte, error) {
	var long []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// The limit is on the item, not its line end: a fragment may
			// end in the \r of a \r\n.
			if len(long)+len(frag) > maxItemBytes+1 {
				return nil, usageErr("%s line %d is longer than %d bytes; put large inputs in files and pass their names as items", s.name, s.line+1, maxItemBytes)
			}
			long = append(long, frag...)
			continue
		}
		if err != nil && err != io.EOF {
			return nil, &exitError{code: exitFailed, msg: fmt.Sprintf("reading the work items from %s: %v", s.name, err)}
		}
		if err == io.EOF && len(frag) == 0 && long == nil {
			return nil, nil
		}
		line := frag
		if long != nil {
			line = append(long, frag...)
		}
		line = trimEOL(line)
		if len(line) > maxItemBytes {
			return nil, usageErr("%s line %d is longer than %d bytes; put large inputs in files and pass their names as items", s.name, s.line+1, maxItemBytes)
		}
		if line == nil {
			line = []byte{}
		}
		return line, nil
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// jsonLen is the length of s encoded as a JSON string by encoding/json
// (which escapes <, > and & too).
func jsonLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9): // U+2028, U+2029
			n += 6
			i += 2
		default:
			n++
		}
	}
	return n
}

// chunker reads one chunk of items at a time, with one item of look-ahead
// so that it knows whether more follow.
type chunker struct {
	src      itemSource
	peek     string
	havePeek bool
	done     bool
	maxItems int
	maxBytes int
}

// nextChunk returns the next chunk and whether more items follow.
func (c *chunker) nextChunk() ([]string, bool, error) {
	var out []string
	size := 0
	for {
		if !c.havePeek {
			if c.done {
				return out, false, nil
			}
			it, ok, err := c.src.next()
			if err != nil {
				return nil, false, err
			}
			if !ok {
				c.done = true
				return out, false, nil
			}
			c.peek, c.havePeek = it, true
		}
		l := jsonLen(c.peek) + 1
		if len(out) > 0 && (len(out) >= c.maxItems || size+l > c.maxBytes) {
			return out, true, nil
		}
		out = append(out, c.peek)
		size += l
		c.havePeek = false
	}
}

// submitJob sends the spec and the items in chunks and returns the job id
// and the number of items. An interrupt or an error after the job exists
// cancels it, so that no half-submitted job is left behind.
func submitJob(ctx context.Context, c *client, spec wire.JobSpec, src itemSource, errOut io.Writer) (uint64, int, error) {
	return submitChunks(ctx, c, spec, &chunker{src: src, maxItems: chunkItems, maxBytes: chunkBytes}, errOut, true)
}

func submitChunks(ctx context.Context, c *client, spec wire.JobSpec, ch *chunker, errOut io.Writer, catchSignals bool) (uint64, int, error) {
	first, more, err := ch.nextChunk()
	if err != nil {
		return 0, 0, err
	}
	if len(first) == 0 {
		return 0, 0, usageErr("no work items: the input is empty (empty lines are skipped); a job needs at least one item")
	}
	if catchSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	var rep wire.SubmitReply
	if err := c.call(ctx, wire.MethodSubmit, wire.SubmitJobRequest{Spec: spec, Items: first, More: more}, &rep); err != nil {
		if ctx.Err() != nil {
			return 0, 0, &exitError{code: exitFailed, msg: "interrupted before the job was submitted"}
		}
		return 0, 0, err
	}
	id, n := rep.ID, len(first)
	start, lastNote := time.Now(), time.Now()
	for more {
		var items []string
		items, more, err = ch.nextChunk()
		if err == nil && ctx.Err() == nil {
			err = c.call(ctx, wire.MethodItems, wire.ItemsRequest{ID: id, Items: items, Last: !more}, &wire.Empty{})
		}
		if err == nil && ctx.Err() != nil {
			err = &exitError{code: exitFailed, msg: "interrupted"}
		}
		if err != nil {
			abandon(c, id, err, errOut)
			return 0, 0, err
		}
		n += len(items)
		if time.Since(lastNote) > 5*time.Second {
			lastNote = time.Now()
			fmt.Fprintf(errOut, "ducc: job %d: %d items sent (%.0f items/s)\n", id, n, float64(n)/time.Since(start).Seconds())
		}
	}
	return id, n, nil
}

// abandon cancels a job whose items could not all be sent.
func abandon(c *client, id uint64, cause error, errOut io.Writer) {
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var info wire.WorkInfo
	reason := fmt.Sprintf("submission incomplete: %v", cause)
	if err := c.call(cctx, wire.MethodCancel, wire.CancelRequest{ID: id, Reason: reason}, &info); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			err = errors.New(ee.msg)
		}
		fmt.Fprintf(errOut, "ducc: job %d is incomplete and could not be canceled (%v); cancel it with 'ducc cancel %d'\n", id, err, id)
		return
	}
	fmt.Fprintf(errOut, "ducc: job %d canceled: not all its items could be sent\n", id)
}
