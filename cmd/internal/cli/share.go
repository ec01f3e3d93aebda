package cli

import (
	"os/user"
	"strconv"
)

// shareGID looks up the group of share_with_group on this node: the head
// checks a reader's gids against it (the cluster's nodes share one user
// and group database, as they share users). An empty name shares with
// nobody.
func shareGID(name string) (uint32, error) {
	if name == "" {
		return 0, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, usageErr("share_with_group %q: no such group on this node", name)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, usageErr("share_with_group %q: gid %q is not a number", name, g.Gid)
	}
	return uint32(gid), nil
}
