package server

import (
	"time"

	"github.com/ducc-project/ducc/wire"
)

// DefaultWebTokenValidity is web.token_validity when the config does not
// set it.
const DefaultWebTokenValidity = 12 * time.Hour

// webToken mints a dashboard token naming the caller, as the agent that
// forwarded the call identified it (the kernel told it who is on its
// socket). Anyone with a user name may have one for themselves; the token
// gives the dashboard no more than that user's own `ducc` command has.
func (s *Server) webToken(c wire.Caller, r wire.WebTokenRequest) (wire.WebTokenReply, error) {
	if len(s.cfg.WebTokenKey) == 0 {
		return wire.WebTokenReply{}, wire.Errorf(wire.CodeError, "this head cannot mint dashboard tokens (it has no web token key)")
	}
	if c.User == "" {
		return wire.WebTokenReply{}, wire.Errorf(wire.CodeUsage, "a dashboard token is for a user: run `ducc web-token` as that user")
	}
	valid := s.cfg.WebTokenValidity
	if r.ValidMS < 0 {
		return wire.WebTokenReply{}, wire.Errorf(wire.CodeUsage, "a token's validity must be positive")
	}
	if r.ValidMS > 0 {
		want := time.Duration(r.ValidMS) * time.Millisecond
		if want > valid {
			return wire.WebTokenReply{}, wire.Errorf(wire.CodeUsage,
				"a dashboard token is valid at most %s on this cluster (web.token_validity); ask for less", valid)
		}
		valid = want
	}
	exp := s.cfg.Now().Add(valid).Truncate(time.Second)
	tok, err := wire.MintWebToken(s.cfg.WebTokenKey, c, exp)
	if err != nil {
		return wire.WebTokenReply{}, err
	}
	s.log.Info("dashboard token minted", "user", c.User, "node", c.Node, "expires", exp.UTC().Format(time.RFC3339))
	return wire.WebTokenReply{Token: tok, User: c.User, ExpiresMS: exp.UnixMilli()}, nil
}
