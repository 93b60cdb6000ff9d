// Package seccomp generates moat's seccomp-BPF filter for the sandboxed command from a
// declarative deny table (every rule with a reason) and installs it on all threads of the
// calling process: default allow, listed calls fail with an errno, and calls made through a
// foreign architecture's entry point (i386, x32, AArch32) never run.
package seccomp
