// Package e2e holds the end-to-end tests: they build the ducc binary once
// (TestMain), start real agents from it and drive the real CLI, the way a
// user does.
//
// One harness serves every test (harness_test.go): agentProc runs one
// `ducc agent` and talks to it through its socket with the CLI. The dev
// cluster (startCluster) is one agentProc with `--dev` in a temp dir; the
// multi-node cluster (startNetCluster, netns_test.go) is one agentProc per
// node, each in its own network namespace joined to a private bridge.
//
// The documentation is tested too: TestREADME types the README's marked
// quick-start blocks into a shell, line by line, against a fresh dev
// cluster; TestDemo runs make demo's script and checks it leaves nothing
// running; TestPackageDeb lints the .deb, installs it and reads its man
// pages and bash completion.
//
// Run them as root: they create cgroups, test users (useradd) and network
// namespaces, and the package test installs the .deb. Without root the
// tests that need it skip. The namespaces are shared machine-wide, so a
// namespace cluster takes a lock file (/tmp/ducc-netns.lock) for as
// long as it lives: two runs at once wait for each other instead of
// sweeping each other's namespaces. (Do not also wrap a run in
// `flock /tmp/ducc-netns.lock`: the test would wait for its own wrapper.)
//
// `make test` runs them all; `make e2e` the multi-node harness alone;
// `make bench` the end-to-end benchmarks (docs/performance.md).
package e2e
