// Command moat runs a command in a sandbox that allows only what its policy allows.
package main

import (
	"os"

	"github.com/moat-sandbox/moat/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
