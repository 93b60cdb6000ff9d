// Command moat runs a command in a sandbox that allows only what its policy allows.
package main

import (
	"os"

	"github.com/moat-sandbox/moat/internal/cli"
	"github.com/moat-sandbox/moat/internal/starttrace"
)

func main() {
	starttrace.Mark("main", "start") // in each stage: the Go runtime has started
	code := cli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr)
	starttrace.Mark("main", "exit")
	os.Exit(code)
}
