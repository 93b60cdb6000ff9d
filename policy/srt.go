package policy

// How a key moat cannot honour is treated: the harmless value it still accepts, so
// that an srt file that spells out a default parses unchanged.
const (
	acceptNothing = iota // any value is an error
	acceptFalse          // false is accepted, true is an error
	acceptEmpty          // an empty array is accepted
	acceptPort           // never accepted, but a bad port is reported as such first
)

type unsupportedKey struct {
	accept int
	why    string // completes "not supported by moat: ..."
	hint   string
}

// unsupportedKeys are the srt settings that would ask moat for something it cannot
// do safely, or that configure machinery moat does not have. Array entries are
// written with "[]". Every other srt key is parsed and enforced (see doc.go).
var unsupportedKeys = map[string]unsupportedKey{
	"enableWeakerNestedSandbox": {acceptFalse,
		"it weakens isolation so that the sandbox can run nested inside a container",
		"remove it or set it to false; run 'moat doctor' to see what this host can enforce"},
	"enableWeakerNetworkIsolation": {acceptFalse,
		"it opens macOS's trustd service to the sandbox, an exfiltration path (macOS only)",
		"remove it or set it to false"},
	"allowAppleEvents": {acceptFalse,
		"it lets sandboxed commands launch applications outside the sandbox (macOS only)",
		"remove it or set it to false"},
	"allowPty": {acceptFalse,
		"it is a macOS sandbox switch; moat does not take terminal access from settings",
		"remove it or set it to false"},
	"ripgrep": {acceptNothing,
		"moat does not run ripgrep, so there is nothing to configure",
		`remove the "ripgrep" key`},
	"seccomp": {acceptNothing,
		"moat's seccomp filter is built in; it loads no helper binary",
		`remove the "seccomp" key`},
	"bwrapPath": {acceptNothing,
		"moat does not use bubblewrap",
		`remove the "bwrapPath" key`},
	"socatPath": {acceptNothing,
		"moat does not use socat",
		`remove the "socatPath" key`},
	"javaAgentJarPath": {acceptNothing,
		"moat does not inject a JVM agent",
		`remove the "javaAgentJarPath" key`},
	"windows": {acceptNothing,
		"moat does not run on Windows",
		`remove the "windows" key`},
	"git.safeDirectories": {acceptEmpty,
		"moat does not inject git configuration into the sandbox",
		"remove it, or run git config --global --add safe.directory outside the sandbox"},

	"network.httpProxyPort": {acceptPort,
		"it hands the sandbox's traffic to an external proxy that moat cannot check",
		"remove it; moat filters traffic itself with allowedDomains and deniedDomains"},
	"network.socksProxyPort": {acceptPort,
		"it hands the sandbox's traffic to an external proxy that moat cannot check",
		"remove it; moat filters traffic itself with allowedDomains and deniedDomains"},
	"network.mitmProxy": {acceptNothing,
		"routing domains through an external MITM proxy socket is not supported",
		`remove the "mitmProxy" key`},
	"network.parentProxy": {acceptNothing,
		"chaining through an upstream proxy is not supported",
		`remove the "parentProxy" key`},
	"network.tlsTerminate": {acceptNothing,
		"moat does not terminate TLS",
		`remove the "tlsTerminate" key`},
	"network.filterRequest": {acceptNothing,
		"it is a library callback and cannot be written in a settings file",
		`remove the "filterRequest" key`},
	"network.allowMachLookup": {acceptEmpty,
		"XPC/Mach services exist only on macOS",
		"remove it"},

	"filesystem.disabled": {acceptFalse,
		"it turns off every filesystem rule, protected paths included",
		"remove it; list paths in allowWrite to make them writable"},
	"filesystem.allowGitConfig": {acceptFalse,
		"protected paths are opted out of by name",
		`write "moat": {"unprotect": [".git/config"]} to make .git/config writable`},

	"credentials.awsPairs": {acceptEmpty,
		"AWS SigV4 re-signing is not supported",
		"remove it; use mode \"deny\" to keep AWS keys out of the sandbox"},
	"credentials.sigv4": {acceptNothing,
		"AWS SigV4 re-signing is not supported",
		`remove the "sigv4" key`},
	"credentials.envVars[].extract": {acceptNothing,
		"structured masking is not supported; moat masks whole values",
		`remove it: mode "mask" then replaces the whole value`},
	"credentials.envVars[].onExtractNoMatch": {acceptNothing,
		"structured masking is not supported; moat masks whole values",
		"remove it"},
	"credentials.envVars[].decode": {acceptNothing,
		"JWT-aware masking is not supported; moat masks whole values",
		`remove it: mode "mask" then replaces the whole value`},
	"credentials.envVars[].maskClaims": {acceptNothing,
		"JWT-aware masking is not supported; moat masks whole values",
		"remove it"},
	"credentials.files[].extract": {acceptNothing,
		"masking file contents is not supported",
		`remove it; mode "deny" hides the whole file`},
	"credentials.files[].onExtractNoMatch": {acceptNothing,
		"masking file contents is not supported",
		"remove it"},
	"credentials.files[].decode": {acceptNothing,
		"masking file contents is not supported",
		"remove it"},
	"credentials.files[].maskClaims": {acceptNothing,
		"masking file contents is not supported",
		"remove it"},
	"credentials.files[].maskDuplicates": {acceptNothing,
		"masking file contents is not supported",
		"remove it"},
	"credentials.files[].injectHosts": {acceptNothing,
		"masking file contents is not supported, so there is nothing to inject",
		"remove it"},
}

// unsupported returns the field handler for a key of unsupportedKeys.
func (p *parser) unsupported(name, key string) field {
	u, ok := unsupportedKeys[key]
	if !ok {
		panic("policy: bug: no unsupportedKeys entry for " + key)
	}
	return field{name, func(n node) error {
		switch u.accept {
		case acceptFalse:
			b, err := p.boolean(n)
			if err != nil || !b {
				return err
			}
		case acceptEmpty:
			if p.arrayLen(n) < 0 {
				return p.typeErr(n, "an array", "[]")
			}
			if p.arrayLen(n) == 0 {
				return nil
			}
		case acceptPort:
			if _, err := p.integer(n, 1, 65535); err != nil {
				return err
			}
		}
		return p.fail(n, errf(ErrUnsupported, "not supported by moat: %s", u.why), u.hint)
	}}
}
