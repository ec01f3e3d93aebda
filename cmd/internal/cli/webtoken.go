package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/wire"
)

func newWebTokenCmd(g *globals) *cobra.Command {
	var valid time.Duration
	cmd := &cobra.Command{
		Use:   "web-token",
		Short: "print a token that signs you in to a private dashboard",
		Long: `Ask the head for a dashboard token that names you, and print it.

A dashboard with web.private set shows nobody anything private unless they say who
they are: paste the token into its "sign in" page (the browser keeps it in a cookie
for this dashboard only), or send it to the JSON API as a header:

  curl -H "Authorization: Bearer $(ducc web-token)" http://127.0.0.1:42133/api/v1/jobs

Signed in, you see what ducc shows you on the command line: the command lines, logs
and results of your own work and of work shared with a group you belong to, and the
environment of your services. The token works on every node's dashboard until it
expires (web.token_validity on the head, 12h by default, is the default and the
longest); anyone who has it is you to the dashboard, so keep it like a password.
See docs/security.md.`,
		Example: "  ducc web-token\n  ducc web-token --valid 1h\n  curl -H \"Authorization: Bearer $(ducc web-token)\" http://127.0.0.1:42133/api/v1/jobs",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if valid < 0 {
				return usageErr("--valid %v: must be positive", valid)
			}
			var rep wire.WebTokenReply
			if err := newClient(g).call(cmd.Context(), wire.MethodWebToken, wire.WebTokenRequest{ValidMS: valid.Milliseconds()}, &rep); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintln(cmd.OutOrStdout(), rep.Token)
			fmt.Fprintf(cmd.ErrOrStderr(), "token for %s, valid until %s\n", rep.User,
				time.UnixMilli(rep.ExpiresMS).Format("2006-01-02 15:04 MST"))
			return nil
		},
	}
	cmd.Flags().DurationVar(&valid, "valid", 0, "how long the token is valid (default and longest: the head's web.token_validity, 12h unless configured)")
	return cmd
}
