package server

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
)

// compactMinBytes: a raft.db smaller than this is never rewritten.
const compactMinBytes = 32 << 20

// compactRaftDB rewrites the Raft log's bbolt file when it is at least
// compactMinBytes and more than half of it is free pages, before the
// store opens it. bbolt reuses the pages of deleted log entries but never
// gives them back, so without this a file that once grew (an older ducc
// that kept the whole log, a burst of large entries) keeps its size
// forever. The rewrite copies only the live entries into raft.db.compact
// and renames it over raft.db; on any failure the original stays as it
// was and is used.
func compactRaftDB(path string, log *slog.Logger) (err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("raft log %s: %w", path, err)
	}
	if fi.Size() < compactMinBytes {
		return nil
	}
	tmp := path + ".compact"
	defer func() {
		// bbolt panics on some damaged pages: leave the file to the
		// store's open, which reports what is wrong with it.
		if p := recover(); p != nil {
			log.Warn("cannot compact the raft log; using it as it is", "path", path, "err", fmt.Sprint(p))
			os.Remove(tmp)
			err = nil
		}
	}()
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		log.Warn("cannot compact the raft log; using it as it is", "path", path, "err", err)
		return nil
	}
	defer src.Close()
	st := src.Stats()
	free := int64(st.FreePageN+st.PendingPageN) * int64(src.Info().PageSize)
	if free*2 < fi.Size() {
		return nil
	}
	start := time.Now()
	if err := copyBolt(tmp, src); err != nil {
		os.Remove(tmp)
		log.Warn("cannot compact the raft log; using it as it is", "path", path, "err", err)
		return nil
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		log.Warn("cannot compact the raft log; using it as it is", "path", path, "err", err)
		return nil
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	after := int64(0)
	if fi, err := os.Stat(path); err == nil {
		after = fi.Size()
	}
	log.Info("compacted the raft log", "path", path, "bytes_before", fi.Size(), "bytes_after", after,
		"duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// copyBolt writes the live contents of src into a new bbolt file at path.
func copyBolt(path string, src *bbolt.DB) error {
	os.Remove(path)
	dst, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	if err := bbolt.Compact(dst, src, 64<<20); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
