// Package archtest holds one test, and no code: that ARCHITECTURE.md's
// package table ("| package | owns | may import |") and the code agree.
//
// TestPackageTable reads the table, asks `go list -deps` what each of the
// module's packages imports, and fails, naming the row to edit and how,
// when
//
//   - a package imports a project package its row's "may import" cell does
//     not list, or the cell lists one the package does not import (the
//     direct imports of its non-test files: what the table describes);
//   - a row whose cell enumerates libraries ("standard library", cbor,
//     libp2p, Raft, cobra, x/sys, yaml, "—") disagrees with the package's
//     direct third-party imports, either way;
//   - a package links, even indirectly, what its cell says it never does
//     ("never libp2p, net/http or a daemon package", "without net/http");
//   - a package has no row, a row names a package that does not exist, or a
//     row marked "(not Go)" has Go packages;
//   - an import goes up the table ("Imports go down this table, never up"),
//     test helpers and tests-only packages aside.
//
// The grammar of the cells is in parse_test.go (parseCell), with its own
// table-driven test.
package archtest
