// Package policy is moat's configuration model. It parses settings files, checks
// them, merges the command-line flags in and compiles the result into a [Policy]
// of absolute paths that the sandbox enforces. It is data and validation only:
// it reads the settings file and touches nothing else on the system.
//
// # Settings files
//
// A settings file is a superset of the file Anthropic's sandbox-runtime (srt)
// reads from ~/.srt-settings.json: an existing srt file parses unchanged, with
// srt's meanings, or fails with an error that names the key it cannot honour.
// Nothing is silently ignored, and unknown keys are errors. The syntax is JSON
// with // and /* */ comments and trailing commas (JWCC, parsed with
// github.com/tailscale/hujson). moat's own settings live under "moat".
//
// moat looks for the file given with --settings, else [DefaultUserConfigPath]
// ($XDG_CONFIG_HOME/moat/config.jsonc, default ~/.config/moat/config.jsonc).
// Without a file, the built-in default applies (see Defaults).
//
//	{
//	  // Hide keys; the project stays readable and writable.
//	  "filesystem": {
//	    "denyRead": ["~/.ssh", "~/.aws", "**/.env"],
//	    "allowWrite": [".", "~/.cache/go-build"],
//	    "denyWrite": ["**/*.pem"],
//	  },
//	  "network": {
//	    "allowedDomains": ["github.com", "*.github.com", "proxy.golang.org:443"],
//	    "deniedDomains": ["gist.github.com"],
//	  },
//	  "credentials": {
//	    "envVars": [
//	      {"name": "AWS_SECRET_ACCESS_KEY", "mode": "deny"},
//	      {"name": "GITHUB_TOKEN", "mode": "mask", "injectHosts": ["api.github.com"]},
//	    ],
//	  },
//	  "moat": {"unprotect": [".vscode"]},
//	}
//
// # Use
//
//	s, err := policy.LoadFile(path) // or policy.Parse(name, data)
//	if err != nil {
//		return err // an *policy.Error: "file:line:col: key: message", plus Hint()
//	}
//	pol, err := policy.Compile(s, policy.Flags{DenyRead: []string{"~/.kube"}},
//		policy.Env{Cwd: cwd, Home: home})
//
// Compile(nil, flags, env) compiles the built-in default instead of a file.
//
// # filesystem
//
// Reads are allowed everywhere except under denyRead; writes are denied
// everywhere except under allowWrite.
//
//   - denyRead []path: paths that cannot be read (or listed). Globs allowed.
//     Example: ["~/.ssh", "/home", "**/.env"].
//   - allowRead []path: re-opens reading inside a denied area; it wins over a
//     denyRead of a shallower path, and a denyRead deeper than it stays denied.
//     For the very same path in both lists, denyRead wins (srt lets allowRead
//     win; moat fails closed): with denyRead ["/home", "./secrets"] and allowRead ["."],
//     the project is readable but ./secrets is not. No globs.
//   - allowWrite []path: the only writable paths. An empty or missing list means
//     nothing is writable; the current directory is writable only if listed
//     (e.g. "."). No globs.
//   - denyWrite []path: never writable, even inside allowWrite. Globs allowed.
//     Example: [".env", "**/*.pem"].
//   - disabled: only false is accepted (true would turn every rule off).
//   - allowGitConfig: only false is accepted; write "moat": {"unprotect":
//     [".git/config"]} instead.
//
// srt requires denyRead, allowWrite and denyWrite to be present; moat treats a
// missing list as empty.
//
// # Paths
//
// A path is absolute ("/etc/shadow"), "~" or "~/..." (the home directory), or
// relative to the current directory ("." "src/" "../shared"). Paths are cleaned
// lexically (a trailing "/" and "a/../" go away); symlinks are resolved by the
// sandbox, not here. A trailing "/**" is dropped, as srt does: "dir/**" means dir
// and everything below it, which "dir" already says. Rejected: the empty path, a
// NUL byte, "~user/..." forms, a ".." that climbs above "/" (for relative paths
// this depends on the current directory, so Compile reports it, still with the
// file position), and invalid UTF-8.
//
// # Globs
//
// A path with * ? or [ is a glob, accepted in denyRead, denyWrite and
// credentials.files only. * and ? match within one path element, ** matches any
// number of elements, [abc] and [a-z] match one character, \ escapes the next
// one; { and } are literal (srt has no {a,b}). A relative glob is anchored at
// the current directory: "**/.env" is every .env below it. The compiled Rule
// holds an absolute doublestar pattern whose current or home directory prefix is
// backslash-escaped, so a '[' in a directory name stays literal. A ".." after
// the first wildcard and malformed patterns ("[abc", a trailing "\") are errors.
// Globs are refused in allowRead and allowWrite: access is granted to the paths
// that exist when the sandbox starts, so a glob would silently miss files created
// later and may match more than intended.
//
// # network
//
// The network rules are validated and kept in [Network] for moat's network layer.
// Until that layer is in place the sandbox has no network at all, which is
// stricter than any of these settings.
//
//   - allowedDomains []pattern: the hosts the sandbox may reach. A pattern is a
//     host name ("github.com"; "localhost" is the only single-label name), a
//     wildcard for strict subdomains ("*.github.com" matches api.github.com but
//     not github.com; at least two labels after "*."), an IPv4 literal, or a
//     bracketed IPv6 literal ("[::1]"), each optionally with ":port" (1-65535, no
//     leading zeros) to allow only that port. Case-insensitive. Rejected: URLs
//     ("https://..."), paths, bare "*", "*.com", "*" anywhere but a leading "*.",
//     empty labels and leading or trailing dots, unbracketed IPv6, IPv6 zones,
//     spaces, control and non-ASCII bytes (write punycode), labels other than
//     letters, digits, '-' and '_', and names or labels over 253 or 63 bytes.
//   - deniedDomains []pattern: checked before allowedDomains. Same syntax, and a
//     bare "*" or "*:port" (e.g. "*:22") denies every host.
//   - deniedDomainReasons {entry: reason}: the message shown when that exact
//     deniedDomains entry denies a connection. A key that is not a deniedDomains
//     entry, and an empty reason, are errors.
//   - allowUnixSockets []path: Unix socket paths the sandbox may connect to
//     (literal, expanded like filesystem paths).
//   - allowAllUnixSockets bool: allow every Unix socket.
//   - allowLocalBinding bool: allow listening on local ports.
//   - strictAllowlist bool: srt's "never ask"; moat never asks, so it is kept
//     for the record only.
//   - httpProxyPort, socksProxyPort: rejected (an external proxy moat cannot
//     check); an out-of-range port is reported as such first.
//   - mitmProxy, parentProxy, tlsTerminate, filterRequest: rejected.
//   - allowMachLookup: only [] is accepted (macOS only).
//
// # credentials
//
//   - envVars [{name, mode, injectHosts?}]: name is an environment variable name
//     (letters, digits, '_', not starting with a digit). mode "deny" removes the
//     variable from the sandbox's environment; mode "mask" replaces its value
//     with a placeholder, which the network layer may swap back for the real
//     value on the way to injectHosts (default: every allowed domain). injectHosts
//     takes domain patterns without ports, only with mode "mask", not empty, and
//     each covered by allowedDomains. The same name twice is accepted only with
//     identical settings. extract, onExtractNoMatch, decode and maskClaims
//     (structured and JWT masking) are rejected.
//   - files [{path, mode}]: mode "deny" adds path to denyRead (globs allowed).
//     mode "mask", and extract, onExtractNoMatch, decode, maskClaims,
//     maskDuplicates and injectHosts, are rejected: moat cannot mask file
//     contents.
//   - allowPlaintextInject bool: let the network layer inject masked values over
//     plain HTTP. Kept in Network.AllowPlaintextInject.
//   - awsPairs: only [] is accepted. sigv4: rejected.
//
// # Other srt keys
//
//   - ignoreViolations {command pattern: [path]}: violations to leave out of
//     reports ("*" for every command). Reporting only; kept as written.
//   - mandatoryDenySearchDepth 1-10: how many directory levels below each
//     writable root the sandbox also looks for workspace protected names
//     (default 3). Policy.ProtectedDepth.
//   - enableWeakerNestedSandbox, enableWeakerNetworkIsolation, allowAppleEvents,
//     allowPty: only false is accepted.
//   - git: {"safeDirectories": []} only (moat injects no git configuration).
//   - ripgrep, seccomp, bwrapPath, socatPath, javaAgentJarPath, windows:
//     rejected; they configure machinery moat does not have.
//
// # moat
//
//   - unprotect []name: protected table entries to drop, the only way to make a
//     protected path writable. Workspace entries are written as in the table
//     (".vscode", ".git/config"), home entries with "~/" ("~/.bashrc"); anything
//     else is an error that lists the names.
//
// # Protected paths
//
// Some paths stay read-only even where the rules make their parent writable,
// because writing them would run code outside the sandbox later: in the user's
// shell, git, editor or agent. [Policy.Protected] is the table in protected.go
// (each entry with its reason) minus moat.unprotect. Workspace entries (.git/hooks,
// .git/config, .gitmodules, .vscode, .idea, .devcontainer, .envrc, .husky,
// .mcp.json, .claude, .codex, .cursor, .gemini, .agents) apply below every
// writable root; home entries (.bashrc, .profile, .zshrc, .gitconfig, .ssh,
// .config/git, .config/fish, .local/bin, ... ) apply when they would be writable.
//
// # Defaults and flags
//
// Without a settings file ([Default], or Compile with nil settings): the current
// directory is writable, everything else readable and nothing else writable,
// every protected path is in force, no environment variable is touched and there
// is no network. With a settings file, srt's semantics apply exactly and nothing
// is implied. The flags --allow-read, --deny-read, --allow-write and --deny-write
// (repeatable) add rules on top of either, with the same path rules as the file;
// their errors name the flag. A path listed twice in one list keeps its first
// origin. A path in both allowWrite and denyWrite is fine: denyWrite wins.
//
// # Checks
//
// Parse reports the first problem as an [*Error] with the file, line, column and
// key path: JSONC syntax; an empty or over-1-MiB file; unknown keys (listing the
// valid ones, with a did-you-mean hint); duplicate keys; wrong types (null
// included); invalid UTF-8 or unpaired surrogates in strings; integers out of
// range or fractional; every path and domain rule above; environment variable
// names and modes; missing name/mode/path in credential entries; the same
// variable twice with different settings; injectHosts with mode "deny", empty, or
// not covered by allowedDomains; deniedDomainReasons keys that match no
// deniedDomains entry; unprotect names not in the table; and every srt key moat
// cannot honour set to anything but its harmless default. Compile adds the checks
// that depend on the directories: ".." climbing above "/", and that Cwd and Home
// are absolute.
//
// Errors read "settings.json:12:5: filesystem.denyRead[2]: path "a\x00b" contains
// a NUL byte"; Hint says what to do. errors.Is tells the class: [ErrSyntax],
// [ErrUnknownKey], [ErrDuplicate], [ErrType], [ErrValue], [ErrPath], [ErrDomain],
// [ErrUnsupported], [ErrConflict], [ErrEnv].
//
// # Limitations
//
//   - Globs in allowRead and allowWrite, which srt accepts on macOS, are
//     rejected; "dir/**" is the exception, as it means dir.
//   - Masking file contents, structured (extract, decode) masking, external or
//     upstream proxies and TLS termination are not supported.
//   - Columns count bytes, not characters.
//   - Until moat's network layer lands, the network settings are checked but the
//     sandbox has no network at all.
package policy
