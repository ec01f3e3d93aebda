package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MethodWebToken mints a dashboard token for the calling user:
// WebTokenRequest → WebTokenReply (`ducc web-token`). The token names the
// caller (user, uid, gid, groups) and an expiry, signed with the cluster's
// web token key (WebTokenKey); every agent checks it with the same key, so
// a token works on every node's dashboard until it expires.
const MethodWebToken = "web.token"

// WebTokenRequest asks for a dashboard token valid for Valid
// (milliseconds; 0: the head's web.token_validity, which is also the
// longest it grants).
type WebTokenRequest struct {
	ValidMS int64 `cbor:"1,keyasint,omitempty" json:"valid_ms,omitempty"`
}

// WebTokenReply is a minted token, whom it names and when it expires
// (Unix milliseconds).
type WebTokenReply struct {
	Token     string `cbor:"1,keyasint" json:"token"`
	User      string `cbor:"2,keyasint" json:"user"`
	ExpiresMS int64  `cbor:"3,keyasint" json:"expires_ms"`
}

// webTokenPrefix starts every token; the number is the format's version.
const webTokenPrefix = "ducc1."

// maxWebToken bounds a token a client presents (a caller with a few
// hundred groups fits).
const maxWebToken = 8 << 10

// webTokenClaims is the signed part of a token.
type webTokenClaims struct {
	User   string   `cbor:"1,keyasint"`
	UID    uint32   `cbor:"2,keyasint"`
	GID    uint32   `cbor:"3,keyasint"`
	Groups []uint32 `cbor:"4,keyasint,omitempty"`
	Home   string   `cbor:"5,keyasint,omitempty"`
	Exp    int64    `cbor:"6,keyasint"` // Unix seconds
}

// WebTokenKey derives the key that signs and checks dashboard tokens from
// the cluster key, so that every agent can check a token the head minted
// without another round trip. Whoever holds the cluster key can already
// speak for any user to the head (docs/security.md), so the derived key
// gives nobody more than they had.
func WebTokenKey(clusterKey []byte) []byte {
	m := hmac.New(sha256.New, clusterKey)
	m.Write([]byte("ducc web token key v1"))
	return m.Sum(nil)
}

// MintWebToken signs a token naming c (its node is left out) that expires
// at exp.
func MintWebToken(key []byte, c Caller, exp time.Time) (string, error) {
	if len(key) == 0 {
		return "", errors.New("no web token key")
	}
	if c.User == "" {
		return "", Errorf(CodeUsage, "a dashboard token names a user: this caller has no user name")
	}
	body, err := Marshal(webTokenClaims{User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home, Exp: exp.Unix()})
	if err != nil {
		return "", fmt.Errorf("encode web token: %w", err)
	}
	enc := base64.RawURLEncoding
	return webTokenPrefix + enc.EncodeToString(body) + "." + enc.EncodeToString(webTokenMAC(key, body)), nil
}

func webTokenMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(webTokenPrefix))
	m.Write(body)
	return m.Sum(nil)
}

// ErrWebTokenExpired is the error of a well-signed token past its expiry.
var ErrWebTokenExpired = errors.New("the dashboard token expired: run `ducc web-token` for a new one")

// VerifyWebToken checks a token's signature and expiry and returns the
// caller it names and when it expires.
func VerifyWebToken(key []byte, token string, now time.Time) (Caller, time.Time, error) {
	bad := errors.New("not a valid dashboard token (from `ducc web-token` on this cluster)")
	if len(key) == 0 || len(token) > maxWebToken || !strings.HasPrefix(token, webTokenPrefix) {
		return Caller{}, time.Time{}, bad
	}
	b64body, b64mac, ok := strings.Cut(strings.TrimPrefix(token, webTokenPrefix), ".")
	if !ok {
		return Caller{}, time.Time{}, bad
	}
	enc := base64.RawURLEncoding
	body, err1 := enc.DecodeString(b64body)
	mac, err2 := enc.DecodeString(b64mac)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, webTokenMAC(key, body)) {
		return Caller{}, time.Time{}, bad
	}
	var cl webTokenClaims
	if err := UnmarshalLimit(body, &cl, maxWebToken); err != nil || cl.User == "" {
		return Caller{}, time.Time{}, bad
	}
	exp := time.Unix(cl.Exp, 0)
	if !now.Before(exp) {
		return Caller{}, exp, ErrWebTokenExpired
	}
	return Caller{User: cl.User, UID: cl.UID, GID: cl.GID, Groups: cl.Groups, Home: cl.Home}, exp, nil
}
