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
// github.com/tailscale/hujson). moat's own settings live under "moat":
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
//	  "moat": {
//	    "requireNamespaces": true, // no direct mode: fail where user namespaces are unavailable
//	    "unprotect": [".vscode"],
//	    "allowSecrets": ["~/.npmrc"], // drop a built-in secret deny, by name
//	    "passEnv": ["GH_TOKEN", "MYAPP_*"], // keep variables moat would scrub
//	    "ignoreFiles": [".cursorignore"], // read these besides .moatignore
//	    "defaultProfiles": ["mywork"],
//	    "profiles": {
//	      "mywork": {"extends": ["claude", "go", "registries"], "network": {"allowedDomains": ["*.mycorp.example"]}},
//	    },
//	    "trustedProjects": [{"path": "/home/me/proj/.moat.jsonc", "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}],
//	  },
//	}
//
// # Layers
//
// A policy is compiled from layers, weakest first ([CompileLayers]):
//
//  1. the built-in default: the secret table, the environment scrubbing table
//     and the protected paths, always; the current directory writable only
//     when there is no user config (srt's semantics with one);
//  2. the user config: the file given with --config, else
//     [DefaultUserConfigPath] ($XDG_CONFIG_HOME/moat/config.jsonc, default
//     ~/.config/moat/config.jsonc) if it exists;
//  3. profiles: the user config's moat.defaultProfiles, then --profile, then a
//     trusted project file's moat.defaultProfiles;
//  4. the project file, .moat.jsonc, the nearest from the current directory up
//     to the root of its git work tree (see Project files);
//  5. the flags.
//
// Every layer only adds rules. Allows are a union, denies are a union, and the
// rules decide as they always do: the deepest read rule wins (deny on a tie),
// denyWrite and protected paths beat allowWrite, deniedDomains beat
// allowedDomains. A stronger layer wins only where one value must be chosen: a
// credentials.envVars "mask" of a stronger layer replaces a weaker one's (but
// "deny" beats "mask" from any layer), and mandatoryDenySearchDepth. A path
// listed twice in one list keeps the origin of its weakest layer. Every rule keeps
// an Origin: "default: credential store (~/.ssh: SSH private keys)",
// "config.jsonc:12 filesystem.denyRead[2]", "profile claude
// (profiles/claude.jsonc:9 filesystem.allowWrite[0])", "flag --deny-read".
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
// Compile(nil, flags, env) compiles the built-in default instead of a file;
// Compile(s, f, env) is CompileLayers(Layers{User: s, Flags: f}, env). With every
// layer:
//
//	pol, err := policy.CompileLayers(policy.Layers{
//		User: user, UserPath: userPath, // nil when there is no user config
//		Profiles: []string{"claude"},   // --profile
//		Project: proj, ProjectPath: "/home/me/proj/.moat.jsonc",
//		Flags: policy.Flags{AllowNet: []string{"api.github.com"}},
//	}, policy.Env{Cwd: cwd, Home: home, RuntimeDir: os.Getenv("XDG_RUNTIME_DIR")})
//	env, removed := pol.FilterEnv(os.Environ()) // removed: names and rules, never values
//	v := pol.ExplainPath("/home/me/.ssh/id_rsa")   // v.Read false, v.ReadRule, v.ReadHint
//	h := pol.ExplainHost("api.github.com", 443)    // h.Allowed, h.Rule, h.Reason, h.Hint
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
//   - allowSecrets []name: secret table entries to drop, by name as in the table
//     ("~/.ssh", "~/.npmrc", ".env", ".env.*"); anything else is an error with a
//     did-you-mean hint. The only way to re-open a table entry's own path.
//   - passEnv []pattern: environment variables the scrubbing table leaves in
//     place: a name, or a pattern in which * is any run of characters ("MYAPP_*").
//     Case-sensitive. "*" alone is refused.
//   - ignoreFiles []name: ignore files to read besides .moatignore (a plain file
//     name: ".cursorignore", ".geminiignore", ".aiexclude").
//   - createDirs []path: "~/..." directories the sandbox makes (empty, mode 0700)
//     when they are missing, before it starts: for an agent that creates one at
//     start where the policy keeps it read-only (opencode's ~/.config/opencode).
//     The directories a profile makes writable are made the same way, when their
//     name has no extension. A project file needs trust to use it.
//   - defaultProfiles []name: profiles applied without --profile.
//   - profiles {name: profile}: the user's profiles (user config only); see
//     Profiles.
//   - trustedProjects [{path, sha256}]: project files allowed to widen the policy
//     (user config only); see Project files. path is absolute; sha256 is 64 hex
//     digits.
//   - requireNamespaces bool: forbid the direct mode. Where user namespaces can't
//     be created, moat run then fails (exit 125, with a hint) instead of running
//     the command without namespaces. It only tightens: any layer may set it, an
//     untrusted project file included, and false changes nothing.
//     Policy.RequireNamespaces; the flag --no-fallback does the same.
//   - allowUnscopedSignals bool: let the direct mode run on a kernel whose
//     Landlock can't confine signals to the sandbox (ABI < 6, before Linux 6.12):
//     the command can then signal every process of the user, moat's own included.
//     A widening (see Project files). Policy.AllowUnscopedSignals.
//
// Neither is accepted in a profile: what a host can do is not a profile's business.
// Both are [Switch] values: on, with the origin of the weakest layer that turned
// them on, or off.
//
// # Secret table
//
// The base layer of every policy, with or without a settings file: denyRead
// rules for the credential stores and private data in [SecretTable], each with a
// reason (secrets.go): SSH and GPG keys; AWS, Azure, Google Cloud and Kubernetes
// credentials; ~/.docker/config.json, ~/.netrc, ~/.git-credentials; the GitHub and
// GitLab CLIs' tokens; npm, yarn, PyPI, cargo, gem, Maven and Gradle tokens; pass,
// GNOME keyring, KWallet, 1Password CLI, Vault, Terraform, rclone, s3cmd, boto and
// sops; the X11 cookie; the coding agents' own logins (each agent's profile
// re-opens its own); browser and mail profiles; shell and REPL histories. In the
// workspace: ".env" and ".env.*" in the current directory and up to three levels
// below it ("*/.env", "*/*/.env", "*/*/*/.env"), a depth that keeps the sandbox
// from walking the whole tree at start; a deeper .env is not covered. ".env.*"
// also hides templates such as .env.example.
//
// A user's settings only add to the table. An allowRead deeper than an entry
// re-opens that path ("~/.ssh/known_hosts"); on the entry's own path the deny
// wins, as every tie does, so the whole entry is dropped only by name with
// moat.allowSecrets. Origins read "default: credential store (~/.ssh: SSH
// private keys)"; [SecretName] maps one back to its name.
//
// # Environment
//
// [Policy.FilterEnv] applies, in order: credentials.envVars ("deny" removes the
// variable, "mask" replaces its value with "moat-masked-NAME"); then passEnv
// (moat.passEnv of any layer, --pass-env); then the scrubbing table
// ([EnvScrubTable], envscrub.go), which removes variables by name pattern,
// without regard to case: names that say secret (*_TOKEN, *SECRET*, *_KEY,
// *_KEYS, *API_KEY*, *PASSWORD*, *_PASS, *_PWD, *CREDENTIAL*, *WEBHOOK*, *_DSN,
// DATABASE_URL, ...), providers' prefixes (AWS_*, AZURE_*, GH_*, GCLOUD_*,
// CLOUDSDK_*, VAULT_*, GITHUB_TOKEN, KUBECONFIG), and handles on the user's
// session: SSH_AUTH_SOCK, GPG_AGENT_INFO, DBUS_SESSION_BUS_ADDRESS, DOCKER_HOST,
// KRB5CCNAME, DISPLAY, WAYLAND_DISPLAY, XAUTHORITY, the askpass programs, VS
// Code's sockets, TMUX and STY. XDG_RUNTIME_DIR stays: the sandbox gives it a
// private, empty directory. The removals name the variable and the rule, never
// the value. [Policy.ExplainEnv] explains one name.
//
// # Profiles
//
// A profile is a named set of rules in the settings schema, plus "description",
// "extends" (profiles applied before it) and "commands" (the programs it is for:
// moat run names the profile when one of them fails without it; [ProfileFor]).
// Built in (profiles/*.jsonc, every
// entry with a comment giving its reason; [BuiltinProfiles]):
//
//   - claude, codex, gemini, opencode, cursor (Cursor's CLI agent): the agent's
//     state directories writable (moat.unprotect of its home entry where the
//     protected table has one) with the files that run code kept read-only
//     (denyWrite: settings with hooks and MCP servers, commands, skills, plugins),
//     its login re-opened (moat.allowSecrets), its API hosts allowed, its API key
//     variables passed. Auto-update directories are never writable.
//   - node, python, go, rust: the toolchain's caches writable; no network.
//   - node-registry, python-registry, go-registry, rust-registry: the public
//     registry hosts; registries extends all four. An opt-in, apart from the
//     toolchain groups.
//
// User profiles live under "moat": {"profiles": {NAME: {...}}} in the user
// config, with the same keys (filesystem, network, credentials, and moat's
// unprotect, allowSecrets, passEnv, ignoreFiles, createDirs). Names are lower-case letters,
// digits, '-' and '_'; a user profile may not take a built-in name (extend it
// instead). An unknown name in extends, defaultProfiles or --profile, and a cycle
// of extends, are [ErrProfile] errors with the file, line and key, and a hint
// listing the profiles. Profiles combine: each applies once, its extends first,
// and their rules add up; denies of any layer still win. Rules of a profile have
// origins "profile NAME (FILE:LINE KEY)".
//
// # Project files
//
// The project's .moat.jsonc comes with the repository, which may be hostile.
// Relative paths in it are relative to its own directory. Untrusted, it may only
// tighten: denyRead, denyWrite, deniedDomains (and their reasons),
// credentials.envVars with mode "deny", credentials.files, ignoreFiles,
// strictAllowlist, and a mandatoryDenySearchDepth at least the current one. A
// widening key (filesystem.allowRead, allowWrite, network.allowedDomains,
// allowUnixSockets, allowAllUnixSockets, allowLocalBinding, credentials.envVars
// with mode "mask", allowPlaintextInject, ignoreViolations, a smaller
// mandatoryDenySearchDepth, moat.unprotect, allowSecrets, passEnv,
// defaultProfiles, allowUnscopedSignals) is an [ErrUntrusted] error naming the
// file, line and key, whose hint gives the exact entry that trusts the file:
//
//	"moat": {"trustedProjects": [{"path": "/home/me/proj/.moat.jsonc", "sha256": "<hex of the file>"}]}
//
// in the user config. Trust is by absolute path and the SHA-256 of the file's
// bytes ([Settings.SHA256]); any change to the file revokes it, and the error then
// says the file changed. moat.trustedProjects and moat.profiles are refused in a
// project file even when it is trusted.
//
// # Ignore files
//
// Policy.IgnoreFiles names the ignore files to read: .moatignore always, and
// those enabled by moat.ignoreFiles. They use gitignore syntax, are looked for in
// the workspace and every directory below it, and the existing paths they match
// are to be made unreadable and unwritable (moat's internal/ignorefile finds
// them). Files created after the sandbox starts are not covered: the matching
// is done once, at start.
//
// # Protected paths
//
// Some paths stay read-only even where the rules make their parent writable,
// because writing them would run code outside the sandbox later: in the user's
// shell, git, editor or agent. [Policy.Protected] is the table in protected.go
// (each entry with its reason) minus moat.unprotect. Workspace entries (.git/hooks,
// .git/config, .gitmodules, .vscode, .idea, .devcontainer, .envrc, .husky,
// .mcp.json, .claude, .codex, .cursor, .gemini, .agents, and moat's own
// .moatignore and .moat.jsonc) apply below every writable root; home entries
// (.bashrc, .profile, .zshrc, .gitconfig, .ssh, .config/git, .config/fish,
// .local/bin, ... ) apply when they would be writable.
//
// # Defaults and flags
//
// Without a user config ([Default], or Compile with nil settings): the current
// directory is writable, everything else readable except the secret table, and
// nothing else writable; every protected path is in force; secret-looking
// variables are scrubbed; no host is allowed. With a user config, srt's semantics
// apply to what it lists and nothing is implied (the current directory is
// writable only if listed), while the secret table, the scrubbing table and the
// protected paths still apply.
//
// The flags (each repeatable, the strongest layer): --allow-read, --deny-read,
// --allow-write and --deny-write take paths as the file does; --allow-net and
// --deny-net take domain patterns as allowedDomains and deniedDomains do
// ("HOST", "*.HOST", "HOST:PORT"; --deny-net also "*" and "*:PORT");
// --pass-env takes passEnv patterns; Flags.RequireNamespaces (moat run
// --no-fallback) is moat.requireNamespaces. Their errors name the flag. A path in
// both allowWrite and denyWrite is fine: denyWrite wins.
//
// # Explanations
//
// [Policy.ExplainPath] says whether a path could be read and written and which
// rule decides, following the sandbox's planner: the deepest of denyRead,
// allowRead and allowWrite decides readability (deny wins a tie; allowWrite makes
// readable), an allowWrite at or above a readable path makes it writable unless a
// denyWrite or a protected entry is at or above it, and the private directories
// (/tmp, /var/tmp, /run, /var/run and Env.RuntimeDir; [Policy.PrivateDirs]) hide
// the host's content. A glob counts at the shallowest ancestor it matches. It
// works on the path as given; [Policy.Resolve] resolves rule paths as the
// sandbox does. Hints say how to change each verdict: --allow-read for a path
// deeper than its deny, moat.allowSecrets for a secret table entry,
// moat.unprotect for a protected path, --allow-write.
//
// [Policy.ExplainHost] decides a connection: deniedDomains first (the first
// match denies, with its deniedDomainReasons), then allowedDomains; nothing else
// is allowed. A denial's hint names --allow-net HOST:PORT, the allowedDomains
// entry for the user config, and the built-in profiles that allow the host. The
// network layer uses it as its single source of truth; it judges names as
// written, and the network layer still refuses a name that resolves to an
// address it must not reach.
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
// cannot honour set to anything but its harmless default; moat's keys (names in
// allowSecrets, unprotect and ignoreFiles, passEnv patterns, profile names, extends
// and its cycles, trustedProjects entries). Compile adds the checks that depend on
// the directories and the other layers: ".." climbing above "/", that Cwd and
// Home are absolute, the names of defaultProfiles and --profile, and the project
// file's trust.
//
// Errors read "settings.json:12:5: filesystem.denyRead[2]: path "a\x00b" contains
// a NUL byte"; Hint says what to do. errors.Is tells the class: [ErrSyntax],
// [ErrUnknownKey], [ErrDuplicate], [ErrType], [ErrValue], [ErrPath], [ErrDomain],
// [ErrUnsupported], [ErrConflict], [ErrEnv], [ErrProfile], [ErrUntrusted].
//
// # Limitations
//
//   - Globs in allowRead and allowWrite, which srt accepts on macOS, are
//     rejected; "dir/**" is the exception, as it means dir.
//   - Masking file contents, structured (extract, decode) masking, external or
//     upstream proxies and TLS termination are not supported.
//   - Columns count bytes, not characters.
//   - Glob rules, ignore files and the workspace's .env files cover the paths that
//     exist when the sandbox starts; files created later are not covered. .env
//     files more than three levels below the current directory are not denied.
//   - A denyWrite (in a profile too) of a path that does not exist at start is
//     enforced with a placeholder the sandbox package creates on the host (on the
//     first missing directory when the path's parent is missing too); a denyWrite
//     glob covers only what exists at start.
//   - Agent profiles make the agent's state writable; some state files also hold
//     settings a later run outside moat obeys (~/.claude.json's user MCP servers,
//     ~/.cursor/cli-config.json's permissions). Toolchain groups make shared
//     caches writable, which later builds outside moat read.
//   - ExplainPath is lexical: it does not follow a workspace's .git file to a
//     worktree's real git directory, nor see which rule paths exist.
package policy
