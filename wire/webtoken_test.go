package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWebToken(t *testing.T) {
	key := WebTokenKey([]byte("cluster key one"))
	other := WebTokenKey([]byte("cluster key two"))
	now := time.Unix(1_800_000_000, 0)
	alice := Caller{User: "alice", UID: 1001, GID: 1001, Groups: []uint32{1001, 2000}, Home: "/home/alice", Node: "n1"}
	tok, err := MintWebToken(key, alice, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	body, mac, _ := strings.Cut(strings.TrimPrefix(tok, webTokenPrefix), ".")
	forged, err := MintWebToken(key, Caller{User: "root"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	forgedBody, _, _ := strings.Cut(strings.TrimPrefix(forged, webTokenPrefix), ".")

	tests := []struct {
		name    string
		key     []byte
		token   string
		now     time.Time
		want    string // user; "" = refused
		expired bool
	}{
		{"valid", key, tok, now, "alice", false},
		{"just before expiry", key, tok, now.Add(time.Hour - time.Second), "alice", false},
		{"expired", key, tok, now.Add(time.Hour), "", true},
		{"other cluster", other, tok, now, "", false},
		{"no key", nil, tok, now, "", false},
		{"empty", key, "", now, "", false},
		{"no prefix", key, strings.TrimPrefix(tok, webTokenPrefix), now, "", false},
		{"no mac", key, webTokenPrefix + body, now, "", false},
		{"swapped body", key, webTokenPrefix + forgedBody + "." + mac, now, "", false},
		{"bad base64", key, webTokenPrefix + "!!." + mac, now, "", false},
		{"too long", key, tok + strings.Repeat("A", maxWebToken), now, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := VerifyWebToken(tt.key, tt.token, tt.now)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted as %+v", c)
				}
				if got := errors.Is(err, ErrWebTokenExpired); got != tt.expired {
					t.Fatalf("err %v: expired %v, want %v", err, got, tt.expired)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.User != tt.want || c.UID != 1001 || c.GID != 1001 || len(c.Groups) != 2 || c.Home != "/home/alice" || c.Node != "" {
				t.Fatalf("caller %+v", c)
			}
		})
	}
	if _, err := MintWebToken(key, Caller{UID: 5}, now); err == nil {
		t.Fatal("minted a token without a user name")
	}
}
