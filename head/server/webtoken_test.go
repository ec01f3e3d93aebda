package server

import (
	"log/slog"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

func TestWebToken(t *testing.T) {
	key := wire.WebTokenKey([]byte("k"))
	now := time.Unix(1_800_000_000, 0)
	alice := wire.Caller{User: "alice", UID: 1001, GID: 1001, Node: "n2"}
	tests := []struct {
		name    string
		key     []byte
		c       wire.Caller
		validMS int64
		want    time.Duration // 0: refused
	}{
		{"default validity", key, alice, 0, 12 * time.Hour},
		{"shorter", key, alice, int64(time.Hour / time.Millisecond), time.Hour},
		{"longer than allowed", key, alice, int64(13 * time.Hour / time.Millisecond), 0},
		{"negative", key, alice, -1, 0},
		{"no user name", key, wire.Caller{Node: "n2"}, 0, 0},
		{"no key", nil, alice, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{cfg: Config{WebTokenKey: tt.key, WebTokenValidity: DefaultWebTokenValidity, Now: func() time.Time { return now }},
				log: slog.New(slog.DiscardHandler)}
			rep, err := s.webToken(tt.c, wire.WebTokenRequest{ValidMS: tt.validMS})
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("minted %+v", rep)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c, exp, err := wire.VerifyWebToken(key, rep.Token, now)
			if err != nil {
				t.Fatal(err)
			}
			if c.User != "alice" || c.UID != 1001 || rep.User != "alice" || !exp.Equal(now.Add(tt.want)) || rep.ExpiresMS != exp.UnixMilli() {
				t.Fatalf("caller %+v, expires %v (reply %+v), want %v", c, exp, rep, now.Add(tt.want))
			}
			if _, _, err := wire.VerifyWebToken(key, rep.Token, now.Add(tt.want)); err == nil {
				t.Fatal("token valid past its expiry")
			}
		})
	}
}
