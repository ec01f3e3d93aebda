package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// tokenCookie holds a dashboard token after the login form (HttpOnly,
// SameSite=Strict).
const tokenCookie = "ducc_token"

// viewer is who looks at a page or asks the API: the zero value is an
// anonymous visitor, who sees nothing private.
type viewer struct {
	c   wire.Caller
	via string    // viaToken, viaProxy or viaLocal
	exp time.Time // a token's expiry
	// unknown says why a loopback client of a LocalUsers dashboard
	// could not be identified (an anonymous viewer).
	unknown string
}

// How a viewer was identified.
const (
	viaToken = "token" // a dashboard token (header or cookie)
	viaProxy = "proxy" // a trusted proxy's user header
	viaLocal = "local" // the owner of a loopback connection (LocalUsers)
)

type viewerKey struct{}

// viewerOf returns the identified user of a request (guard put it there).
func viewerOf(r *http.Request) viewer {
	v, _ := r.Context().Value(viewerKey{}).(viewer)
	return v
}

// callerOf is the caller the head sees for a request: the identified user,
// or the zero Caller.
func callerOf(r *http.Request) wire.Caller { return viewerOf(r).c }

// guard enforces web.private and identifies the user. With web.private,
// pages and the API answer only loopback clients and the trusted proxies,
// and a request carries a user when it comes with a valid dashboard token
// (the Authorization: Bearer header or the login cookie) or, from a
// trusted proxy, the configured user header. With LocalUsers, a loopback
// client without those is the user who owns its connection. Otherwise
// nobody is identified and nothing private is shown.
func (s *server) guard(h http.HandlerFunc) http.Handler {
	if !s.cfg.Private && !s.cfg.LocalUsers {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy := s.trustedProxy(r.RemoteAddr)
		loopback := isLoopback(r.RemoteAddr)
		var v viewer
		if s.cfg.Private {
			if !loopback && !proxy {
				http.Error(w, "this dashboard is private (web.private): open it from the node itself, "+
					"e.g. through `ssh -L 42133:127.0.0.1:42133 NODE`, or through the proxy its operator set up", http.StatusForbidden)
				return
			}
			var err error
			v, err = s.identify(r, proxy)
			if err != nil {
				s.log.Info("dashboard request with bad credentials", "remote", r.RemoteAddr, "path", r.URL.Path, "err", err)
				if strings.HasPrefix(r.URL.Path, "/api/") || r.Header.Get("Authorization") != "" {
					w.Header().Set("WWW-Authenticate", `Bearer realm="ducc"`)
					writeJSON(w, http.StatusUnauthorized, apiError{Error: err.Error(), Code: wire.CodeUsage})
					return
				}
				// A stale login cookie: forget it and show the public view.
				s.clearTokenCookie(w, r)
				v = viewer{}
			}
		}
		// A trusted proxy's connection is the proxy's, not its users'.
		if v.c.User == "" && s.cfg.LocalUsers && loopback && !proxy {
			lv, err := s.localViewer(r)
			if err != nil {
				s.log.Debug("loopback client not identified", "remote", r.RemoteAddr, "err", err)
				lv = viewer{unknown: err.Error()}
			}
			v = lv
		}
		h(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	})
}

// identify finds who sends r: the trusted proxy's user header first, then
// a bearer token, then the login cookie. No credentials: the zero viewer.
func (s *server) identify(r *http.Request, proxy bool) (viewer, error) {
	if s.cfg.UserHeader != "" && proxy {
		if name := strings.TrimSpace(r.Header.Get(s.cfg.UserHeader)); name != "" {
			if s.cfg.LookupUser == nil {
				return viewer{}, errors.New("this dashboard cannot look users up")
			}
			c, err := s.cfg.LookupUser(name)
			if err != nil {
				return viewer{}, err
			}
			return viewer{c: c, via: viaProxy}, nil
		}
	}
	tok := ""
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, rest, _ := strings.Cut(a, " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(rest) == "" {
			return viewer{}, errors.New("the Authorization header must be `Bearer <token from ducc web-token>`")
		}
		tok = strings.TrimSpace(rest)
	} else if ck, err := r.Cookie(tokenCookie); err == nil && ck.Value != "" {
		tok = ck.Value
	}
	if tok == "" {
		return viewer{}, nil
	}
	return s.checkToken(tok)
}

func (s *server) checkToken(tok string) (viewer, error) {
	c, exp, err := wire.VerifyWebToken(s.cfg.TokenKey, tok, s.cfg.Now())
	if err != nil {
		return viewer{}, err
	}
	return viewer{c: c, via: viaToken, exp: exp}, nil
}

// trustedProxy reports whether remote is one of web.trusted_proxies.
func (s *server) trustedProxy(remote string) bool {
	if len(s.cfg.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// seeYours says how the viewer of a request gets to see their own
// private details (arguments, items, results, logs) on this dashboard,
// or "" when they are identified (the head's refusals then say who may
// read). The job page, the work-item table, the results API, the log
// endpoint and /login all say it with these words, so they agree.
func (s *server) seeYours(v viewer) string {
	switch {
	case v.c.User != "":
		return ""
	case v.unknown != "":
		msg := "this dashboard knows a browser on node " + s.cfg.Node + " by the user who owns its connection, " +
			"but could not tell who you are (" + v.unknown + ")"
		if s.cfg.Private {
			msg += "; sign in with a token from `ducc web-token` instead"
		}
		return msg
	case s.cfg.Private:
		return "sign in with a token from `ducc web-token` to see your own"
	case s.cfg.LocalUsers:
		return "this dashboard knows only a browser on node " + s.cfg.Node + ", by the user who owns its connection: " +
			"open it there (or through `ssh -L`) to see your own"
	default:
		return "this dashboard is public (web.private is off) and knows nobody: read your own with `ducc results` and `ducc logs`, " +
			"or run the dashboard privately (docs/security.md)"
	}
}

// loginBody is the login page.
type loginBody struct {
	Private    bool
	Local      bool // web.local_users
	User       string
	Via        string
	Expires    int64 // unix ms
	UserHeader string
	Failed     string
	Hint       string // seeYours
}

// fillLogin shows the login form, or who is signed in.
func fillLogin(s *server, r *http.Request, d *pageData) error {
	d.Title = "Sign in"
	v := viewerOf(r)
	if v.via == viaLocal || (!s.cfg.Private && v.c.User == "") {
		d.Title = "Who you are"
	}
	b := &loginBody{Private: s.cfg.Private, Local: s.cfg.LocalUsers, User: v.c.User, Via: v.via, UserHeader: s.cfg.UserHeader,
		Failed: r.URL.Query().Get("failed"), Hint: s.seeYours(v)}
	if !v.exp.IsZero() {
		b.Expires = v.exp.UnixMilli()
	}
	d.Body = b
	return nil
}

// login checks the pasted token and keeps it in a cookie the browser
// sends back only to this dashboard (HttpOnly, SameSite=Strict).
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Private {
		v := viewerOf(r)
		why := s.seeYours(v)
		if why == "" {
			why = "it knows you as " + v.c.User + " by the user who owns your connection"
		}
		http.Error(w, "this dashboard takes no tokens (web.private is off): "+why, http.StatusForbidden)
		return
	}
	if !sameOrigin(r) {
		http.Error(w, "sign in from this dashboard's own page", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	v, err := s.checkToken(tok)
	if err != nil {
		s.log.Info("dashboard sign-in refused", "remote", r.RemoteAddr, "err", err)
		http.Redirect(w, r, "/login?failed="+url.QueryEscape(err.Error()), http.StatusSeeOther)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: tokenCookie, Value: tok, Path: "/", Expires: v.exp, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.overTLS(r),
	})
	s.log.Info("dashboard sign-in", "user", v.c.User, "remote", r.RemoteAddr)
	http.Redirect(w, r, "/jobs", http.StatusSeeOther)
}

// logout forgets the login cookie.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "sign out from this dashboard's own page", http.StatusForbidden)
		return
	}
	s.clearTokenCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (s *server) clearTokenCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.overTLS(r)})
}

// overTLS reports whether the browser reached the dashboard over TLS:
// directly, or through a trusted proxy that says so (X-Forwarded-Proto).
// The cookie is then marked Secure.
func (s *server) overTLS(r *http.Request) bool {
	return r.TLS != nil || (s.trustedProxy(r.RemoteAddr) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"))
}

// sameOrigin refuses a form posted from another site (login CSRF): a
// browser sends Origin with a POST; a client that sends none is not a
// browser on another page.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
