package main

import (
	"os"

	"github.com/ducc-project/ducc/cmd/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(cli.Main(os.Args[0], os.Args[1:], version, nil)) }
