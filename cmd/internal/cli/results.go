package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/wire"
)

func newResultsCmd(g *globals) *cobra.Command {
	var failed bool
	cmd := &cobra.Command{
		Use:   "results ID",
		Short: "print a job's work-item results as JSON lines",
		Long: `Print the outcome of every work item of a job, one JSON object per line, in item
order:

  {"index":0,"item":"...","ok":true,"result":<what the worker answered>}
  {"index":7,"item":"...","ok":false,"error":"exit status 3: ..."}

"result" is the worker's JSON value as it sent it (exec workers send their output
as a string). With --failed only the items that failed are printed. Items not
finished yet are not printed. The output is JSON lines with or without --json.

The head keeps a job's items and results for head.retention.results (24h by
default) after the job ended; after that 'ducc results' says when they were
purged, and 'ducc history' keeps the job's accounting record.`,
		Example: "  ducc results 17 > results.jsonl\n  ducc results 17 --failed",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			return printResults(cmd.Context(), newClient(g), id, failed, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&failed, "failed", false, "only the items that failed")
	return cmd
}

// resultLine is one line of 'ducc results' (docs/jobs.md).
type resultLine struct {
	Index    int             `json:"index"`
	Item     string          `json:"item"`
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Millis   int64           `json:"millis,omitempty"`
	Process  string          `json:"process,omitempty"`
	Attempts int             `json:"attempts,omitempty"`
}

func toResultLine(r wire.ItemResult) resultLine {
	l := resultLine{Index: r.Index, Item: r.Item, OK: r.OK, Error: r.Error, Millis: r.Millis, Process: r.Proc, Attempts: r.Attempts}
	if r.Result != "" {
		if json.Valid([]byte(r.Result)) {
			l.Result = json.RawMessage(r.Result)
		} else {
			// Not JSON (should not happen): keep it as a string.
			b, _ := json.Marshal(r.Result)
			l.Result = b
		}
	}
	return l
}

// printResults pages through a job's results until the server says the
// end (Next == -1).
func printResults(ctx context.Context, c *client, id uint64, failed bool, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	w := bufio.NewWriterSize(out, 64<<10)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	offset := 0
	for {
		var rep wire.ResultsReply
		if err := c.call(ctx, wire.MethodResults, wire.ResultsRequest{ID: id, Failed: failed, Offset: offset}, &rep); err != nil {
			w.Flush()
			return err
		}
		for _, r := range rep.Results {
			if err := enc.Encode(toResultLine(r)); err != nil {
				return err
			}
		}
		if rep.Next < 0 {
			break
		}
		if rep.Next <= offset {
			w.Flush()
			return &exitError{code: exitFailed, msg: fmt.Sprintf("the head returned page %d again instead of the next one; try again", offset)}
		}
		offset = rep.Next
		// Let a pipe reader see results while paging on.
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return w.Flush()
}
