package policy

import (
	"fmt"
	"strings"
	"sync"
)

// EnvScrub is one entry of the built-in environment scrubbing table: variables
// whose names match Pattern are removed from the sandbox's environment unless a
// profile or the settings pass them (moat.passEnv, --pass-env).
type EnvScrub struct {
	// Pattern is a variable name in which each * stands for any run of
	// characters; matched without regard to case, because secrets hide in
	// lower-case names too (npm_config__authToken).
	Pattern string
	Reason  string
}

// envScrubTable is the base layer of the environment, with and without a settings
// file. False positives cost one moat.passEnv entry; a missed token costs the
// token, so the patterns are broad.
var envScrubTable = []EnvScrub{
	// Names that say "secret".
	{"*_TOKEN", "names ending in _TOKEN hold access tokens (GITHUB_TOKEN, NPM_TOKEN, HF_TOKEN)"},
	{"*_TOKEN_*", "token variants (SLACK_TOKEN_BOT, ...)"},
	{"TOKEN", "a bare TOKEN is an access token"},
	{"*AUTHTOKEN*", "auth tokens without an underscore (NGROK_AUTHTOKEN)"},
	{"*_AUTH", "registry and API auth strings (NPM_CONFIG__AUTH)"},
	{"*SECRET*", "client secrets and secret keys (AWS_SECRET_ACCESS_KEY, JWT_SECRET)"},
	{"*_KEY", "API and signing keys (OPENAI_API_KEY, STRIPE_KEY)"},
	{"*_KEYS", "key lists"},
	{"*API_KEY*", "API keys with a suffix (GOOGLE_API_KEY_PROD)"},
	{"*APIKEY*", "API keys written without an underscore"},
	{"*PRIVATE_KEY*", "private keys pasted into the environment"},
	{"*ACCESS_KEY*", "cloud access key pairs"},
	{"*PASSWORD*", "passwords (PGPASSWORD, TWINE_PASSWORD)"},
	{"*PASSWD*", "passwords"},
	{"*_PASS", "passwords (SMTP_PASS)"},
	{"*_PWD", "passwords (MYSQL_PWD); PWD and OLDPWD have no underscore and stay"},
	{"*CREDENTIAL*", "credentials and paths to credential files (GOOGLE_APPLICATION_CREDENTIALS)"},
	{"*WEBHOOK*", "webhook URLs carry their own secret"},
	{"*_DSN", "DSNs carry a key or password (SENTRY_DSN, DATABASE_DSN)"},
	{"DATABASE_URL", "database URLs carry the password"},
	{"*_DATABASE_URL", "database URLs carry the password"},
	{"*COOKIE*", "session cookies"},

	// Providers whose variables are all credentials or point at them.
	{"AWS_*", "AWS credentials, profiles and role settings"},
	{"AZURE_*", "Azure service principal secrets and settings"},
	{"GH_*", "GitHub CLI tokens and hosts (GH_TOKEN, GH_ENTERPRISE_TOKEN)"},
	{"GITHUB_TOKEN", "GitHub token"},
	{"GITHUB_PAT", "GitHub personal access token"},
	{"GCLOUD_*", "Google Cloud SDK settings and credentials"},
	{"CLOUDSDK_*", "Google Cloud SDK settings and credentials"},
	{"VAULT_*", "HashiCorp Vault address and token"},
	{"KUBECONFIG", "names a Kubernetes config with cluster credentials"},
	{"ACTIONS_ID_TOKEN_REQUEST_URL", "GitHub Actions OIDC: mints cloud credentials"},

	// Access to the user's session and host services: the sockets are hidden in the
	// sandbox, so these would only mislead tools, and passing one is a choice.
	{"SSH_AUTH_SOCK", "ssh agent: signs with the user's keys"},
	{"SSH_AGENT_PID", "ssh agent process"},
	{"GPG_AGENT_INFO", "gpg agent: decrypts and signs with the user's keys"},
	{"DBUS_SESSION_BUS_ADDRESS", "D-Bus session bus: 'systemd-run --user' runs commands outside the sandbox"},
	{"DBUS_SYSTEM_BUS_ADDRESS", "D-Bus system bus"},
	{"DOCKER_HOST", "container engine: a container can mount the host"},
	{"CONTAINER_HOST", "podman engine: a container can mount the host"},
	{"DOCKER_AUTH_CONFIG", "container registry logins"},
	{"KRB5CCNAME", "Kerberos ticket cache"},
	{"DISPLAY", "X11 display: a client can read keystrokes and inject input into other windows"},
	{"WAYLAND_DISPLAY", "Wayland display: access to the user's desktop session"},
	{"WAYLAND_SOCKET", "Wayland display: access to the user's desktop session"},
	{"XAUTHORITY", "names the X11 cookie file"},
	{"SSH_ASKPASS", "program run to ask for ssh passphrases"},
	{"GIT_ASKPASS", "program run to ask for git credentials, often an editor's IPC helper"},
	{"SUDO_ASKPASS", "program run to ask for the sudo password"},
	{"VSCODE_GIT_IPC_HANDLE", "VS Code's git credential socket"},
	{"VSCODE_IPC_HOOK_CLI", "VS Code's command socket: opens files and runs commands in the editor"},
	{"TMUX", "tmux server socket: 'tmux send-keys' types into the user's other panes"},
	{"STY", "screen session: 'screen -X stuff' types into the user's other windows"},
	// XDG_RUNTIME_DIR stays: the sandbox gives it a private, empty directory.
}

// EnvScrubTable returns a copy of the built-in environment scrubbing table.
func EnvScrubTable() []EnvScrub { return append([]EnvScrub(nil), envScrubTable...) }

// EnvPass is one pattern of variables passed despite the scrubbing table.
type EnvPass struct {
	Pattern string // a name, or a pattern with * (case-sensitive)
	Origin  string
}

// EnvRemoval says what happened to one variable and why. It never holds the value.
type EnvRemoval struct {
	Name   string
	Masked bool   // replaced with a placeholder rather than removed
	Rule   string // the pattern or credentials.envVars name that matched
	Reason string
	Origin string // where the rule came from
}

// originEnvScrub is the origin of the scrubbing table's rules.
const originEnvScrub = OriginDefault + ": secret-looking environment variable"

// maskValue is the placeholder a masked variable gets; the network layer swaps
// it back for the real value on the way to an allowed host.
func maskValue(name string) string { return "moat-masked-" + name }

// FilterEnv applies the policy to an environment (NAME=value entries): first
// credentials.envVars ("deny" removes, "mask" replaces the value with
// "moat-masked-NAME"), then passEnv, then the scrubbing table. Entries without
// "=" are kept as they are. removed lists every variable removed or masked, in
// order, without values.
func (p *Policy) FilterEnv(env []string) (kept []string, removed []EnvRemoval) {
	rules := map[string]EnvRule{}
	for _, r := range p.EnvVars {
		if _, dup := rules[r.Name]; !dup {
			rules[r.Name] = r
		}
	}
	kept = make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			kept = append(kept, kv)
			continue
		}
		if r, ok := rules[name]; ok {
			rm := EnvRemoval{Name: name, Rule: r.Name, Origin: r.Origin}
			if r.Mode == ModeMask {
				rm.Masked, rm.Reason = true, "credentials.envVars mask: the value is a placeholder"
				kept = append(kept, name+"="+maskValue(name))
			} else {
				rm.Reason = "credentials.envVars deny"
			}
			removed = append(removed, rm)
			continue
		}
		if p.passes(name) {
			kept = append(kept, kv)
			continue
		}
		if s, ok := scrubbed(name); ok {
			removed = append(removed, EnvRemoval{Name: name, Rule: s.Pattern, Reason: s.Reason, Origin: originEnvScrub})
			continue
		}
		kept = append(kept, kv)
	}
	return kept, removed
}

// passes reports whether a passEnv pattern lets name through the scrubbing table.
func (p *Policy) passes(name string) bool {
	for _, e := range p.PassEnv {
		if wildMatch(e.Pattern, name, false) {
			return true
		}
	}
	return false
}

// scrubbed returns the first scrubbing table entry that matches name.
func scrubbed(name string) (EnvScrub, bool) {
	// Folding the name once makes each match a case-sensitive one: scrubGlobs
	// holds the patterns folded too.
	name = strings.ToUpper(name)
	gs := scrubGlobs()
	for i := range gs {
		if gs[i].match(name) {
			return envScrubTable[i], true
		}
	}
	return EnvScrub{}, false
}

// scrubGlobs is the scrubbing table's patterns, in upper case and split at their
// stars, once per process.
var scrubGlobs = sync.OnceValue(func() []envGlob {
	gs := make([]envGlob, len(envScrubTable))
	for i, s := range envScrubTable {
		gs[i] = compileEnvGlob(strings.ToUpper(s.Pattern))
	}
	return gs
})

// wildMatch matches name against a pattern in which * is any run of characters;
// fold makes it ignore case (ASCII case, or Unicode's when either string is not
// ASCII, as strings.ToUpper does).
func wildMatch(pattern, name string, fold bool) bool {
	if fold {
		pattern, name = strings.ToUpper(pattern), strings.ToUpper(name)
	}
	g := compileEnvGlob(pattern)
	return g.match(name)
}

// envGlob is a pattern in which * is any run of bytes, split at its first and last *.
type envGlob struct {
	star   bool   // the pattern has a *; if not, it is all in prefix
	prefix string // before the first *
	mid    string // between the first and the last *; it may hold more of them
	suffix string // after the last *
	midAny bool   // mid holds a *
}

func compileEnvGlob(pattern string) envGlob {
	first := strings.IndexByte(pattern, '*')
	if first < 0 {
		return envGlob{prefix: pattern}
	}
	last := strings.LastIndexByte(pattern, '*')
	mid := ""
	if first < last {
		mid = pattern[first+1 : last]
	}
	return envGlob{star: true, prefix: pattern[:first], mid: mid, suffix: pattern[last+1:], midAny: strings.IndexByte(mid, '*') >= 0}
}

// match reports whether name matches: prefix must begin it and suffix end it,
// without overlapping, and the pieces of mid between its stars must appear in
// order in what is left, where the leftmost occurrence of each is the best choice.
// It allocates nothing: FilterEnv runs it for every variable against every
// scrubbing entry on each start.
func (g *envGlob) match(name string) bool {
	if !g.star {
		return name == g.prefix
	}
	if len(name) < len(g.prefix)+len(g.suffix) || !strings.HasPrefix(name, g.prefix) || !strings.HasSuffix(name, g.suffix) {
		return false
	}
	name = name[len(g.prefix) : len(name)-len(g.suffix)]
	if !g.midAny {
		return strings.Contains(name, g.mid)
	}
	for rest := g.mid; ; {
		piece, more, found := strings.Cut(rest, "*")
		i := strings.Index(name, piece)
		if i < 0 {
			return false
		}
		name = name[i+len(piece):]
		if !found {
			return true
		}
		rest = more
	}
}

// checkPassEnv validates a moat.passEnv entry: a variable name in which * may
// stand for any run of characters, with at least one other character.
func checkPassEnv(pat string) *problem {
	if strings.Trim(pat, "*") == "" {
		return bad(errf(ErrValue, "passEnv pattern %q passes every variable", pat),
			"list the variables (or prefixes such as \"MYAPP_*\") the sandbox needs; passing everything would undo the scrubbing of secrets")
	}
	if !envNameOK(strings.ReplaceAll(pat, "*", "_")) {
		return bad(errf(ErrValue, "%q is not an environment variable name or pattern", pat),
			"names contain only letters, digits and '_', do not start with a digit, and may use * for any run of characters")
	}
	return nil
}

// EnvVerdict says what the sandbox does with one environment variable.
type EnvVerdict struct {
	Name   string
	Kept   bool // the variable is set inside the sandbox (masked or not)
	Masked bool // its value is a placeholder
	// Rule, Reason and Origin name the deciding rule: a credentials.envVars entry,
	// a passEnv pattern, or a scrubbing table entry; empty when none applies.
	Rule, Reason, Origin string
	Hint                 string // how to change the verdict
}

// ExplainEnv says what FilterEnv does with the variable name, and why.
func (p *Policy) ExplainEnv(name string) EnvVerdict {
	v := EnvVerdict{Name: name, Kept: true, Reason: "no rule removes it"}
	cfg := p.UserConfig
	if cfg == "" {
		cfg = "your user config"
	}
	_, removed := p.FilterEnv([]string{name + "=x"})
	if len(removed) > 0 {
		r := removed[0]
		v.Kept, v.Masked, v.Rule, v.Reason, v.Origin = r.Masked, r.Masked, r.Rule, r.Reason, r.Origin
		switch {
		case r.Masked:
			v.Hint = "the command sees a placeholder; the network layer puts the value back on the way to the hosts it is for"
		case r.Origin == originEnvScrub:
			v.Hint = fmt.Sprintf("pass it with --pass-env %s, or add %q to \"moat\": {\"passEnv\": [...]} in %s", name, name, cfg)
			if names := profilesPassing(name); len(names) > 0 {
				v.Hint += "; the profile " + strings.Join(names, ", ") + " passes it (--profile NAME)"
			}
		default:
			v.Hint = "remove the credentials.envVars entry at " + r.Origin
		}
		return v
	}
	if s, ok := scrubbed(name); ok {
		for _, e := range p.PassEnv {
			if wildMatch(e.Pattern, name, false) {
				v.Rule, v.Origin = e.Pattern, e.Origin
				v.Reason = fmt.Sprintf("without it, %s would remove it (%s)", s.Pattern, s.Reason)
				break
			}
		}
	}
	return v
}

// profilesPassing lists the built-in profiles whose own passEnv keeps name.
func profilesPassing(name string) []string {
	return builtinsWhere(func(p *Profile) bool {
		for _, it := range p.Settings.Moat.PassEnv {
			if wildMatch(it.Value, name, false) {
				return true
			}
		}
		return false
	})
}
