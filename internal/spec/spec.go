// Package spec is the wire format between the supervisor, which plans a sandbox on the
// host, and the re-executed init stage, which builds it. It holds data, and the two
// facts about the mount steps that both init and the FUSE server derive from them
// (Enclosing, Mount.WantsDir).
package spec

import (
	"encoding/json"
	"io"
	"strings"
	"syscall"
)

// Op is one step of building the sandbox's mount view. Steps run in order, each on a
// path of the new root; a later step on a deeper path overrides an earlier one.
type Op string

const (
	// OpBindRW binds host Source at Path, writable.
	OpBindRW Op = "bind-rw"
	// OpBindRO binds host Source at Path, read-only.
	OpBindRO Op = "bind-ro"
	// OpMaskDir covers the directory at Path with an empty read-only directory.
	OpMaskDir Op = "mask-dir"
	// OpMaskFile covers the non-directory at Path with an empty read-only file.
	OpMaskFile Op = "mask-file"
	// OpTmpfs mounts a private, empty, writable tmpfs at Path (a private /tmp).
	OpTmpfs Op = "tmpfs"
	// OpPlaceholder covers Path, which the supervisor created as an empty directory so
	// that it can be mounted over, with an empty read-only directory.
	OpPlaceholder Op = "placeholder"
	// OpFile covers the file at Path (creating it inside a tmpfs step if needed) with
	// a read-only file holding Content: the sandbox's own /etc/resolv.conf.
	OpFile Op = "file"
)

// Mount is one step of the mount plan.
type Mount struct {
	Op     Op     `json:"op"`
	Path   string `json:"path"`             // absolute, symlink-free, as seen inside
	Source string `json:"source,omitempty"` // absolute host path, for binds
	Reason string `json:"reason"`           // why, for --debug and error messages
	Dir    bool   `json:"dir,omitempty"`    // Path is a directory (else a file, socket or link)
	// Content is the file's content, for OpFile.
	Content string `json:"content,omitempty"`
	// Optional steps are skipped when Path no longer exists: a host socket that
	// went away between planning and building is nothing to cover.
	Optional bool `json:"optional,omitempty"`
	// Socket marks an OpMaskFile step that covers a host socket. Covered by the
	// FUSE masks, it shows as a socket no one may write, and each attempt to reach
	// it is reported; a plain mask covers it as any file. It may lie inside a
	// private dir's tmpfs, where the host's socket is absent already: there it is
	// bait that only reports.
	Socket bool `json:"socket,omitempty"`
}

// Net asks init to open, inside the sandbox's network namespace, the sockets the
// supervisor serves, and to pass them over the network descriptor in this order:
// the proxy's TCP listener, the DNS stub's UDP and TCP sockets, then one TCP
// listener per host port.
type Net struct {
	ProxyPort int   `json:"proxyPort"` // on 127.0.0.1
	HostPorts []int `json:"hostPorts,omitempty"`
}

// NetMessage is the data part of the one message that carries the sockets.
const NetMessage = "moat-net-v1"

// FUSEMessage is the data part of the message that carries the FUSE device (Spec.FUSE);
// NoFUSEMessage starts the one that says, after it, why init uses plain masks instead.
const (
	FUSEMessage   = "moat-fuse-v1"
	NoFUSEMessage = "moat-fuse-none: "
)

// Spec is everything the init stage needs. Paths are absolute and already resolved.
type Spec struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`

	Mounts []Mount `json:"mounts"`

	// Writable lists the paths Landlock lets the command write beneath; everything
	// else is read and execute only.
	Writable []string `json:"writable"`

	// Net, when set, gives the sandbox moat's proxy and DNS stub.
	Net *Net `json:"net,omitempty"`

	// FUSE, when set, is the FUSE device init opens to cover the mask steps
	// (OpMaskDir, OpMaskFile) with the nodes of one FUSE filesystem the supervisor
	// serves (internal/linux/fusemask), which reports each access to a hidden path.
	// The filesystem's root holds one entry per mask step, named by the step's index
	// in decimal. Init sends the device and the filesystem's detached mount in the
	// first message on the network descriptor (FUSEMessage) before it builds the
	// view; when it can't open or mount it, it sends NoFUSEMessage and why, and
	// covers the masks as it does without FUSE: the paths are hidden the same
	// either way.
	FUSE string `json:"fuse,omitempty"`

	// Debug makes init describe each step on stderr.
	Debug bool `json:"debug,omitempty"`
}

// Result is what init reports back to the supervisor before it exits: the final
// report once, written only after init has killed and reaped every other process
// of the sandbox, and before it, interim reports of the command's stops (Stopped).
type Result struct {
	// Stage names the step that failed ("mount", "landlock", "seccomp", "exec", ...);
	// empty when the command ran.
	Stage string `json:"stage,omitempty"`
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
	// Errno is the errno of a failed exec, so the supervisor can exit 126 or 127.
	Errno int `json:"errno,omitempty"`

	ExitCode int `json:"exitCode"`
	Signal   int `json:"signal,omitempty"` // the signal that killed the command, if any

	// Stopped, when not 0, makes this an interim report, not the end: the command
	// was stopped by this signal (Ctrl-Z, or reading a terminal it doesn't own),
	// so the supervisor can give the terminal back to its caller. Init writes
	// these before the final report, each on its own line.
	Stopped int `json:"stopped,omitempty"`
}

// Interim reports whether r is an interim report, not init's last.
func (r Result) Interim() bool { return r.Stopped != 0 }

// ReadResult reads a stage's reports from r and returns its final one. Each
// interim one (the command stopped) is passed to stopped, when not nil, off the
// reading loop and one at a time: it may stop this process until its shell
// continues it, and the final report is read meanwhile.
func ReadResult(r io.Reader, stopped func(syscall.Signal)) (Result, error) {
	var stops chan syscall.Signal
	if stopped != nil {
		stops = make(chan syscall.Signal, 16)
		defer close(stops)
		go func() {
			for sig := range stops {
				stopped(sig)
			}
		}()
	}
	dec := json.NewDecoder(r)
	for {
		var res Result
		if err := dec.Decode(&res); err != nil || !res.Interim() {
			return res, err
		}
		if stops != nil {
			select {
			case stops <- syscall.Signal(res.Stopped):
			default: // a backlog of stops: the handler follows the first ones
			}
		}
	}
}

// Enclosing returns the index of the last step before step j whose path contains
// step j's, or -1: the mount that step j's mount point lies in.
func Enclosing(all []Mount, j int) int {
	for i := j - 1; i >= 0; i-- {
		if strings.HasPrefix(all[j].Path, strings.TrimSuffix(all[i].Path, "/")+"/") {
			return i
		}
	}
	return -1
}

// WantsDir says whether the step's mount point is a directory.
func (m Mount) WantsDir() bool {
	switch m.Op {
	case OpTmpfs, OpMaskDir, OpPlaceholder:
		return true
	case OpMaskFile, OpFile:
		return false
	}
	return m.Dir
}
