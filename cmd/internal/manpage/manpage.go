// Package manpage renders a command's man page with cobra's generator,
// apart from package cli because that generator (go-md2man, blackfriday)
// costs half a millisecond of initialization on every start of the
// program that links it: only duccd does (`ducc gen-man` runs it).
package manpage

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Render writes c's man page (section 1, "ducc manual", the root's
// version as its source) to w.
func Render(c *cobra.Command, w io.Writer) error {
	header := &doc.GenManHeader{Section: "1", Source: "ducc " + c.Root().Version, Manual: "ducc manual"}
	return doc.GenMan(c, header, w)
}
