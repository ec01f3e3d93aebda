package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ducc-project/ducc/units"
)

const (
	specFile   = "spec.json"
	childFile  = "child.json"
	statusFile = "status.json"
	shimLog    = "shim.log"
)

// writeJSON writes v to dir/name atomically (temp file + rename). With sync,
// the file and the directory are fsynced too.
func writeJSON(dir, name string, v any, sync bool) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	tmp := filepath.Join(dir, "."+name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	if sync {
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// procStat returns fields of /proc/<pid>/stat after the command name:
// index 0 is field 3 (state).
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

// startTime is field 22 of /proc/<pid>/stat (clock ticks since boot): with the
// pid, it identifies a process across pid reuse.
func startTime(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 20 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// procUsage reads RSS and CPU time of one process from /proc (used when
// cgroups are disabled).
func procUsage(pid int) (rss uint64, cpu time.Duration, err error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, 0, err
	}
	if len(f) < 22 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	pages, _ := strconv.ParseUint(f[21], 10, 64)
	const clkTck = 100 // USER_HZ is 100 on every Linux ABI Go supports
	return pages * uint64(os.Getpagesize()), time.Duration(utime+stime) * time.Second / clkTck, nil
}

// LookupUser resolves a user name (or numeric uid) to uid, primary gid and
// supplementary groups.
func LookupUser(name string) (uid, gid uint32, groups []uint32, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			if _, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
				u, err = user.LookupId(name)
			}
		}
		if err != nil {
			return 0, 0, nil, fmt.Errorf("unknown user %q", name)
		}
	}
	u64, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("user %q: bad uid %q", name, u.Uid)
	}
	g64, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("user %q: bad gid %q", name, u.Gid)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return 0, 0, nil, fmt.Errorf("user %q: groups: %w", name, err)
	}
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil {
			groups = append(groups, uint32(g))
		}
	}
	return uint32(u64), uint32(g64), groups, nil
}

// formatReason is the human reason of an ended process. OOM kills in its
// tree that it survived are added to how it ended: "exited normally; memory
// cap hit: 1 process killed by the OOM killer (cap 64 MiB)".
func formatReason(st *Status) string {
	switch {
	case st.OOMKilled && st.MemoryLimit > 0 && st.OOMKills > 1:
		return "exceeded its memory limit of " + units.FormatSize(st.MemoryLimit) + ": " + oomKillsText(st.OOMKills)
	case st.OOMKilled && st.MemoryLimit > 0:
		return "exceeded its memory limit of " + units.FormatSize(st.MemoryLimit)
	case st.OOMKilled:
		return "killed by the kernel OOM killer"
	}
	var how string
	switch {
	case st.Signal != "":
		how = "killed by " + st.Signal
	case st.ExitCode == 0:
		how = "exited normally"
	default:
		how = fmt.Sprintf("exited with code %d", st.ExitCode)
	}
	return how + survivedKills(st)
}

// oomLogLine is the line the shim appends to the log of a process the
// memory cap killed, or whose tree lost a process to it: "ducc: process
// 5.1 was killed by the OOM killer: it exceeded its memory limit of
// 256 MiB". It is "" when the OOM killer killed nothing.
func oomLogLine(st *Status) string {
	switch {
	case st.OOMKilled && st.MemoryLimit > 0:
		return "ducc: process " + st.ID + " was killed by the OOM killer: it " + st.Reason + "\n"
	case st.OOMKilled:
		return "ducc: process " + st.ID + " was " + st.Reason + "\n"
	case st.OOMKills > 0:
		return "ducc: process " + st.ID + " " + st.Reason + "\n"
	}
	return ""
}

// survivedKills is what formatReason adds for OOM kills in the tree of a
// process that did not end because of them: "" when there were none.
func survivedKills(st *Status) string {
	switch {
	case st.OOMKills > 0 && st.MemoryLimit > 0:
		return "; memory cap hit: " + oomKillsText(st.OOMKills) + " (cap " + units.FormatSize(st.MemoryLimit) + ")"
	case st.OOMKills > 0:
		return "; " + oomKillsText(st.OOMKills)
	}
	return ""
}

func oomKillsText(n uint64) string {
	if n == 1 {
		return "1 process killed by the OOM killer"
	}
	return fmt.Sprintf("%d processes killed by the OOM killer", n)
}
