package seccomp

import (
	"slices"

	"golang.org/x/net/bpf"
)

// open(2) flags the filesystem table tests (the same on amd64 and arm64).
const (
	oWronly = 0x1
	oRdwr   = 0x2
	oCreat  = 0x40
	oTrunc  = 0x200
)

// fsSysnums are the numbers of the path calls the filesystem table names; arm64 has only
// the *at forms.
var fsSysnums = map[string]map[string]int{
	"amd64": {
		"open": 2, "creat": 85, "openat": 257, "openat2": 437, "mkdir": 83, "mkdirat": 258, "mknod": 133, "mknodat": 259,
		"symlink": 88, "symlinkat": 266, "link": 86, "linkat": 265, "rename": 82, "renameat": 264, "renameat2": 316,
		"unlink": 87, "unlinkat": 263, "rmdir": 84, "truncate": 76,
	},
	"arm64": {
		"open": absent, "creat": absent, "openat": 56, "openat2": 437, "mkdir": absent, "mkdirat": 34, "mknod": absent, "mknodat": 33,
		"symlink": absent, "symlinkat": 36, "link": absent, "linkat": 37, "rename": absent, "renameat": absent, "renameat2": 276,
		"unlink": absent, "unlinkat": 35, "rmdir": absent, "truncate": 45,
	},
}

const whyEntries = "Landlock can't let a directory gain entries without letting its protected subdirectories gain them too; in such a directory the supervisor makes, removes and opens entries for the process, and lets the kernel run every other call, under Landlock"

// fsTable sends the calls that make, remove, rename or open for writing a directory entry
// to the supervisor; with reads, every open. openat2's flags are in memory seccomp can't
// read, so it is answered ENOSYS and callers fall back to openat.
func fsTable(reads bool) []Rule {
	writeOpen := []uint32{oWronly | oRdwr | oCreat | oTrunc}
	openRule := func(name string, flagsArg int) Rule {
		if reads {
			return Rule{Syscall: name, Errno: Notify, Reason: whyEntries + "; every open, as new files in a read-guarded directory are read through the supervisor"}
		}
		return Rule{Syscall: name, Args: []ArgMatch{{Index: flagsArg, Op: AnyBit, Values: writeOpen}}, Errno: Notify, Reason: whyEntries}
	}
	rules := []Rule{
		openRule("open", 1),
		openRule("openat", 2),
		{Syscall: "creat", Errno: Notify, Reason: whyEntries},
		{Syscall: "openat2", Errno: ENOSYS, Reason: "its flags sit in a struct seccomp can't read; ENOSYS makes callers fall back to openat, which is checked"},
	}
	for _, name := range []string{"mkdir", "mkdirat", "mknod", "mknodat", "symlink", "symlinkat", "link", "linkat",
		"rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "truncate"} {
		rules = append(rules, Rule{Syscall: name, Errno: Notify, Reason: whyEntries})
	}
	return rules
}

// FSRules returns the direct mode's filesystem table (see [BrokerProgram]).
func FSRules(reads bool) []Rule { return fsTable(reads) }

// BrokerProgram returns the direct mode's broker filter for GOARCH arch: the network table
// ([NetRules]) and, if fs is set, the filesystem table ([FSRules]), whose calls the entry
// broker decides; reads adds every open to it. A process can have only one filter with a
// listener, so both tables share one program.
func BrokerProgram(arch string, fs, reads bool) ([]bpf.RawInstruction, error) {
	rules := append(slices.Clone(netTable), directTable...)
	if fs {
		rules = append(rules, fsTable(reads)...)
	}
	return notifyProgram(arch, rules)
}
