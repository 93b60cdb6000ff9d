package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Settings is one parsed settings file: srt's schema plus moat's "moat" object.
// Every value that came from the file keeps its position, so Compile can report
// errors and origins against it. Parse has already validated everything that does
// not depend on the current or home directory.
type Settings struct {
	File string // the name given to Parse, used in errors and rule origins

	Filesystem  FilesystemSettings
	Network     NetworkSettings
	Credentials CredentialSettings

	// IgnoreViolations maps a command pattern ("*" for all) to paths whose
	// violations are not reported. Reporting only: it never allows anything.
	IgnoreViolations map[string][]string

	// MandatoryDenySearchDepth is how deep below each writable root protected
	// names are looked for (srt: 1-10, default 3); 0 when absent.
	MandatoryDenySearchDepth int

	Moat MoatSettings

	// SHA256 is the hex SHA-256 of the bytes given to Parse. A project file is
	// trusted by this hash (see moat.trustedProjects).
	SHA256 string

	// keys maps each key path written in the file to where the key is written.
	keys map[string]Pos
}

// Pos is where a value was written.
type Pos struct {
	Line, Col int
	Key       string // key path, e.g. filesystem.denyRead[2]
}

// Item is one string from the settings file, with its position.
type Item struct {
	Value string
	Pos
}

// FilesystemSettings is srt's "filesystem" object: paths as written (not expanded).
type FilesystemSettings struct {
	DenyRead, AllowRead, AllowWrite, DenyWrite []Item
}

// NetworkSettings is srt's "network" object, validated.
type NetworkSettings struct {
	AllowedDomains, DeniedDomains []DomainRule
	DeniedDomainReasons           map[string]string // deniedDomains entry -> reason shown on denial
	AllowUnixSockets              []Item            // paths as written
	AllowAllUnixSockets           bool
	AllowLocalBinding             bool
	StrictAllowlist               bool
}

// CredentialSettings is srt's "credentials" object.
type CredentialSettings struct {
	EnvVars              []EnvVarSetting
	Files                []Item // credentials.files[].path with mode "deny": denied for reading
	AllowPlaintextInject bool
}

// EnvVarSetting is one credentials.envVars entry.
type EnvVarSetting struct {
	Name        string
	Mode        string       // ModeDeny or ModeMask
	InjectHosts []DomainRule // mask only; nil when absent (then: every allowed domain)
	Pos
}

// MoatSettings is the "moat" object: moat's own extensions.
type MoatSettings struct {
	// Unprotect names protected table entries to drop: ".vscode" for a workspace
	// entry, "~/.bashrc" for a home entry.
	Unprotect []Item
	// AllowSecrets names entries of the built-in credential deny table to drop:
	// "~/.npmrc", ".env".
	AllowSecrets []Item
	// PassEnv are environment variable names or patterns ("GH_TOKEN", "MY_*")
	// that the built-in scrubbing table leaves in place.
	PassEnv []Item
	// IgnoreFiles are the names of ignore files read besides .moatignore, such
	// as ".cursorignore".
	IgnoreFiles []Item
	// CreateDirs are directories in the home directory that moat makes (empty,
	// mode 0700) when they are missing, before the sandbox starts: for an agent
	// that creates one at start where the policy keeps it read-only.
	CreateDirs []Item
	// DefaultProfiles are the profiles applied without --profile.
	DefaultProfiles []Item
	// Profiles are the profiles this file defines (user config only).
	Profiles []*Profile
	// TrustedProjects are the project files allowed to widen the policy, each
	// by path and content hash (user config only).
	TrustedProjects []TrustedProject
	// RequireNamespaces forbids the direct mode: where user namespaces can't be
	// created, moat fails instead of running the command without them.
	RequireNamespaces bool
	// AllowUnscopedSignals lets the direct mode run where Landlock can't confine
	// signals to the sandbox (ABI < 6): the command can then signal every process
	// of the user.
	AllowUnscopedSignals bool
}

// Profile is a named, reusable set of rules: built in (profiles/*.jsonc) or
// defined under "moat": {"profiles": {...}} in the user config.
type Profile struct {
	Name        string
	Description string
	Extends     []Item // names of the profiles this one builds on, applied first
	// Commands are the programs the profile is for ("go", "cargo"): when one of
	// them fails without the profile, moat suggests it.
	Commands []Item
	// Settings holds the profile's rules, in the settings file schema.
	Settings *Settings
	Builtin  bool
	Pos
}

// TrustedProject is one moat.trustedProjects entry.
type TrustedProject struct {
	Path   string // absolute and clean
	SHA256 string // lower-case hex
	Pos
}

// Credential modes.
const (
	ModeDeny = "deny" // the variable is removed from the sandbox's environment
	ModeMask = "mask" // the variable's value is replaced with a placeholder
)

// maxSettingsSize bounds a settings file; a larger one is certainly a mistake.
const maxSettingsSize = 1 << 20

// LoadFile reads and parses the settings file at path.
func LoadFile(path string) (*Settings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in Error.File
		}
		return nil, &Error{File: path, Err: fmt.Errorf("read settings: %w", err),
			HintText: "check the path given with --config, or remove the flag to use the built-in default"}
	}
	return Parse(path, data)
}

// DefaultUserConfigPath is where moat looks for the user's settings:
// $XDG_CONFIG_HOME/moat/config.jsonc when XDG_CONFIG_HOME is set to an absolute
// path, else ~/.config/moat/config.jsonc. env is usually os.Getenv.
func DefaultUserConfigPath(env func(string) string, home string) string {
	if x := env("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "moat", "config.jsonc")
	}
	return filepath.Join(home, ".config", "moat", "config.jsonc")
}
