// Command ducc is the one binary of ducc: the node agent (`ducc agent`),
// the process shim (`ducc shim`) and the user and admin commands. Its man
// pages (hidden `ducc gen-man DIR`, genman.go) and shell completion
// (cobra's `ducc completion`, with work ids, classes, nodes and services
// asked from the local agent: complete.go) come from the commands
// themselves.
package main
