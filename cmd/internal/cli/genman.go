package cli

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// newGenManCmd is the hidden `ducc gen-man DIR`: one man page per command
// (ducc.1.gz, ducc-submit.1.gz, ducc-services-start.1.gz, ...) generated
// from the commands' help by cobra's doc generator, gzipped as Debian
// wants them (maximum compression, no name or time in the header), and a
// page for each of DUCC's program names (ducc_submit.1.gz) that points
// to its command's page, and duccd's, which points to ducc's. make package
// puts them in /usr/share/man/man1.
// SOURCE_DATE_EPOCH, when set, dates the pages (reproducible builds).
// The pages are rendered by the Daemon (package manpage): the small ducc
// runs duccd for it, so as not to link the renderer.
func newGenManCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-man DIR",
		Short:  "write the man pages of every command into DIR (packaging)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := g.needDaemon("ducc gen-man")
			if err != nil {
				return err
			}
			n, err := genMan(cmd.Root(), args[0], d.ManPage)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d man pages in %s\n", n, args[0])
			return nil
		},
	}
}

// genMan writes the pages and returns how many it wrote.
func genMan(root *cobra.Command, dir string, render func(*cobra.Command, io.Writer) error) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("man pages: %w", err)
	}
	root.DisableAutoGenTag = true
	n := 0
	var gen func(c *cobra.Command) error
	gen = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			return nil
		}
		for _, sub := range c.Commands() {
			if err := gen(sub); err != nil {
				return err
			}
		}
		var page bytes.Buffer
		if err := render(c, &page); err != nil {
			return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
		}
		n++
		return writeGzip(filepath.Join(dir, manName(c)+".1.gz"), page.Bytes())
	}
	if err := gen(root); err != nil {
		return n, err
	}
	// DUCC's program names: a page that includes the command's page.
	names := make([]string, 0, len(duccPrograms))
	for name := range duccPrograms {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		target := root.Name() + "-" + strings.Join(duccPrograms[name], "-")
		so := fmt.Sprintf(".so man1/%s.1\n", target)
		if err := writeGzip(filepath.Join(dir, name+".1.gz"), []byte(so)); err != nil {
			return n, err
		}
		n++
	}
	// duccd runs the same commands (and the agent): ducc's page.
	if err := writeGzip(filepath.Join(dir, DaemonName+".1.gz"), []byte(".so man1/"+root.Name()+".1\n")); err != nil {
		return n, err
	}
	return n + 1, nil
}

// manName is a command's page name: its path joined by dashes.
func manName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// writeGzip writes data gzipped at maximum compression with an empty
// header (as gzip -9n).
func writeGzip(path string, data []byte) error {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
