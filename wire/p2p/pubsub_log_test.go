package p2p

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestDemoteTagBumps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level slog.Level // the handler's level
		msg   string
		want  string // "" means nothing logged
	}{
		{"tag bump at warn level", slog.LevelWarn, "error bumping delivery tag", ""},
		{"tag bump at debug level", slog.LevelDebug, "error bumping delivery tag", "level=DEBUG"},
		{"other warnings stay", slog.LevelWarn, "something else", "level=WARN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(demoteTagBumps{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})}).With("sub", "pubsub")
			log.WarnContext(context.Background(), tc.msg, "err", "queue full")
			got := buf.String()
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}
