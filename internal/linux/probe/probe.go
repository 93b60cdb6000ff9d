// Package probe reports which of the kernel features moat enforces its policy with are
// usable on this host, by trying each one without side effects, and what is lost and how
// to fix it when one is not.
package probe

import (
	"fmt"
	"strings"
)

// Status says whether a feature can be used. The zero value is Missing, so a Feature
// nobody filled in never reads as available.
type Status int

const (
	Missing   Status = iota // moat can't use it
	Partial                 // usable, but with less than moat's full policy needs
	Available               // usable as moat needs it
)

func (s Status) String() string {
	switch s {
	case Missing:
		return "missing"
	case Partial:
		return "partial"
	case Available:
		return "available"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MarshalText makes a Status a readable word in JSON.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText is MarshalText's inverse.
func (s *Status) UnmarshalText(b []byte) error {
	for _, v := range []Status{Missing, Partial, Available} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown feature status %q", b)
}

// Feature names, as they appear in Report.Features, in the order Detect reports them.
const (
	UserNS        = "user namespaces"
	MountNS       = "mount namespace"
	PIDNS         = "pid namespace"
	NetNS         = "network namespace"
	IPCNS         = "ipc namespace"
	UTSNS         = "uts namespace"
	Landlock      = "landlock"
	Seccomp       = "seccomp"
	SeccompNotify = "seccomp user notification"
	CgroupV2      = "cgroup v2"
	MountSetattr  = "mount_setattr"
	Pidfd         = "pidfd"
	PidfdGetfd    = "pidfd_getfd"
	TIOCSTI       = "TIOCSTI"
	MPTCP         = "MPTCP"
)

// Feature is one kernel feature and what Detect found out about it.
type Feature struct {
	Name   string
	Status Status
	// Detail is what was found, e.g. "ABI 7: ..." or "max_user_namespaces=0".
	Detail string
	// Meaning is what moat can't do without it (set when Status is not Available).
	Meaning string `json:",omitempty"`
	// Fix is how to make it available, as commands where there are any.
	Fix string `json:",omitempty"`
	// Required is true when moat's full policy loses a layer without this feature,
	// rather than falling back to a weaker mechanism.
	Required bool
	// DirectMode is true for a feature only the direct mode (moat run on a host
	// without user namespaces) needs; the namespace mode does without it.
	DirectMode bool `json:",omitempty"`
}

// Run modes: how moat run builds its sandbox.
const (
	ModeNamespaces = "namespaces" // user, mount, pid, network, ipc and uts namespaces
	ModeDirect     = "direct"     // no namespaces: Landlock, seccomp and a supervisor
	ModeNone       = "none"       // neither can be built: moat run fails
)

// RunMode is how moat run will build its sandbox on the host a Report describes.
type RunMode struct {
	Name   string // ModeNamespaces, ModeDirect or ModeNone
	Detail string // why, and what the direct mode needs from the config
}

// namespaceFeatures are the namespaces moat run creates in one clone: if any is
// missing, the clone fails and moat run uses the direct mode.
var namespaceFeatures = []string{UserNS, MountNS, PIDNS, NetNS, IPCNS, UTSNS}

// directFeatures are what the direct mode can't run without.
var directFeatures = []string{Landlock, Seccomp, SeccompNotify, Pidfd, PidfdGetfd}

// mode predicts moat run's mode from the features.
func (r Report) mode() RunMode {
	var lackNS []string
	for _, name := range namespaceFeatures {
		if f, ok := r.Feature(name); !ok || f.Status != Available {
			lackNS = append(lackNS, name)
		}
	}
	if len(lackNS) == 0 {
		return RunMode{ModeNamespaces, "user, mount, pid, network, ipc and uts namespaces, with Landlock and seccomp inside"}
	}
	why := "user namespaces are unavailable"
	if f, _ := r.Feature(UserNS); f.Status == Available {
		why = "the " + strings.Join(lackNS, ", ") + " can't be created"
	}
	var lack []string
	for _, name := range directFeatures {
		f, ok := r.Feature(name)
		if !ok || f.Status == Missing || f.Status == Partial && name != Landlock {
			lack = append(lack, name)
		}
	}
	switch {
	case len(lack) > 0:
		return RunMode{ModeNone, why + ", and the direct mode lacks " + strings.Join(lack, ", ") + ": moat run fails here"}
	case r.LandlockABI < LandlockFullABI:
		return RunMode{ModeDirect, fmt.Sprintf("%s; Landlock ABI %d can't confine signals to the sandbox, so moat run refuses to run "+
			"unless the user config accepts that with \"moat\": {\"allowUnscopedSignals\": true}", why, r.LandlockABI)}
	}
	return RunMode{ModeDirect, why + "; Landlock, seccomp and a supervising process enforce the policy, " +
		"except what README \"Hosts without user namespaces\" lists (\"moat\": {\"requireNamespaces\": true} forbids this mode)"}
}

// Report is what this host can enforce.
type Report struct {
	Kernel string // uname sysname and release, e.g. "Linux 6.18.44"
	Arch   string // GOARCH of this moat build
	User   string // e.g. "alice (uid 1000)"
	Root   bool   // effective uid is 0: unprivileged users may see less
	// Features in a fixed order: namespaces, landlock, seccomp, then the rest.
	Features []Feature
	// LandlockABI is the kernel's Landlock ABI version; 0 when Landlock is unusable.
	LandlockABI int
	// Mode is how moat run will build its sandbox here.
	Mode RunMode
}

// Feature returns the feature with the given name, one of the constants above.
func (r Report) Feature(name string) (Feature, bool) {
	for _, f := range r.Features {
		if f.Name == name {
			return f, true
		}
	}
	return Feature{}, false
}

// Lacking returns the features that are not Available, in report order.
func (r Report) Lacking() []Feature {
	var out []Feature
	for _, f := range r.Features {
		if f.Status != Available {
			out = append(out, f)
		}
	}
	return out
}

// landlockABIs is what each Landlock ABI version adds, oldest first; entry i is ABI i+1.
var landlockABIs = []struct {
	adds   string // short name for a summary line
	kernel string // first mainline release with it, "" if not yet known here
	lost   string // what moat's policy lacks without it
}{
	{"filesystem", "5.13", "no filesystem access rules"},
	{"refer", "5.19", "files can't be renamed or linked across directories"},
	{"truncate", "6.2", "truncate(2) isn't covered by the write rules"},
	{"TCP ports", "6.7", "no TCP bind/connect rules (the network namespace still isolates)"},
	{"device ioctl", "6.10", "ioctl on device files isn't restricted"},
	{"scoping", "6.12", "no signal and abstract unix socket scoping (the pid and network namespaces still isolate)"},
	{"audit", "6.15", "denials aren't logged to the audit log"},
	{"thread sync", "", "rules are applied thread by thread"},
	{"unix socket paths", "", "pathname unix sockets are governed by file rules only"},
	{"UDP", "", "no UDP rules (the network namespace still isolates)"},
}

// LandlockNewestABI is the newest Landlock ABI this package knows of.
const LandlockNewestABI = 10

// LandlockFullABI is the Landlock ABI moat's full policy uses: filesystem, TCP ports,
// device ioctl and scoping. Later ABIs add audit and finer rules moat can do without.
const LandlockFullABI = 6

// landlockDetail describes what ABI abi offers and, briefly, what newer ABIs would add.
func landlockDetail(abi int) string {
	if abi < 1 {
		return "not available"
	}
	var has, lacks []string
	for i, a := range landlockABIs {
		if i+1 <= abi {
			has = append(has, a.adds)
		} else {
			lacks = append(lacks, fmt.Sprintf("%s (%d)", a.adds, i+1))
		}
	}
	s := fmt.Sprintf("ABI %d: %s", abi, strings.Join(has, ", "))
	if len(lacks) > 0 {
		s += "; newer ABIs add " + strings.Join(lacks, ", ")
	}
	if abi > len(landlockABIs) {
		s += ", and more than this moat knows of"
	}
	return s
}

// landlockLost says what moat's full policy lacks at ABI abi (below LandlockFullABI).
func landlockLost(abi int) string {
	var lost []string
	for i := max(abi, 0); i < LandlockFullABI; i++ {
		lost = append(lost, landlockABIs[i].lost)
	}
	return strings.Join(lost, "; ")
}

// landlockKernel is the first kernel release with ABI abi, or "".
func landlockKernel(abi int) string {
	if abi < 1 || abi > len(landlockABIs) {
		return ""
	}
	return landlockABIs[abi-1].kernel
}
