package policy

import (
	"fmt"
	"strings"
)

// Secret is one entry of the built-in credential deny table: a path that no
// sandboxed command may read unless the user drops the entry by name with
// "moat": {"allowSecrets": [NAME]}.
type Secret struct {
	// Name is the entry as written in moat.allowSecrets: "~/.ssh" for a path in
	// the home directory, ".env" or ".env.*" for the workspace's files.
	Name   string
	Kind   string // what sort of secret: "credential store", "private data", "workspace secrets"
	Reason string // what it holds, in a few words
}

// Kinds of secrets, as they appear in rule origins.
const (
	kindCredentials = "credential store"
	kindPrivate     = "private data"
	kindWorkspace   = "workspace secrets"
)

// secretTable is the base layer of every policy: it applies with and without a
// settings file. A user's settings only add to it; an allowRead deeper than an
// entry re-opens a path inside it (deepest rule wins; on the same path deny wins),
// and moat.allowSecrets drops an entry by name.
var secretTable = []Secret{
	// Keys and tokens of the tools that reach other machines and accounts.
	{"~/.ssh", kindCredentials, "SSH private keys"},
	{"~/.gnupg", kindCredentials, "GPG private keys"},
	{"~/.aws", kindCredentials, "AWS access keys and SSO tokens"},
	{"~/.azure", kindCredentials, "Azure CLI tokens"},
	{"~/.config/gcloud", kindCredentials, "Google Cloud credentials and tokens"},
	{"~/.kube", kindCredentials, "Kubernetes cluster credentials"},
	{"~/.docker/config.json", kindCredentials, "container registry logins"},
	{"~/.netrc", kindCredentials, "logins for curl, git, ftp"},
	{"~/.git-credentials", kindCredentials, "git's plain-text credential store"},
	{"~/.config/gh", kindCredentials, "GitHub CLI token"},
	{"~/.config/glab-cli", kindCredentials, "GitLab CLI token"},
	{"~/.config/hub", kindCredentials, "hub's GitHub token"},
	{"~/.npmrc", kindCredentials, "npm registry tokens"},
	{"~/.yarnrc.yml", kindCredentials, "yarn registry tokens"},
	{"~/.pypirc", kindCredentials, "PyPI upload tokens"},
	{"~/.cargo/credentials.toml", kindCredentials, "crates.io token"},
	{"~/.cargo/credentials", kindCredentials, "crates.io token (older cargo)"},
	{"~/.gem/credentials", kindCredentials, "RubyGems API key"},
	{"~/.m2/settings.xml", kindCredentials, "Maven server passwords"},
	{"~/.m2/settings-security.xml", kindCredentials, "Maven master password"},
	{"~/.gradle/gradle.properties", kindCredentials, "Gradle publishing and signing secrets"},
	{"~/.password-store", kindCredentials, "pass password store"},
	{"~/.local/share/keyrings", kindCredentials, "GNOME keyring"},
	{"~/.local/share/kwalletd", kindCredentials, "KDE wallet"},
	{"~/.config/op", kindCredentials, "1Password CLI configuration and sessions"},
	{"~/.vault-token", kindCredentials, "HashiCorp Vault token"},
	{"~/.terraform.d/credentials.tfrc.json", kindCredentials, "Terraform Cloud token"},
	{"~/.config/rclone", kindCredentials, "rclone cloud storage credentials"},
	{"~/.s3cfg", kindCredentials, "s3cmd credentials"},
	{"~/.boto", kindCredentials, "gsutil and boto credentials"},
	{"~/.config/sops", kindCredentials, "sops age keys"},
	{"~/.Xauthority", kindCredentials, "X11 cookie: lets a client read and inject input on the display"},
	// Coding agents' own logins: each agent's profile re-opens its own.
	{"~/.claude/.credentials.json", kindCredentials, "Claude Code login token"},
	{"~/.codex/auth.json", kindCredentials, "Codex login token and API key"},
	{"~/.gemini/oauth_creds.json", kindCredentials, "Gemini CLI login token"},
	{"~/.local/share/opencode/auth.json", kindCredentials, "opencode provider keys and tokens"},
	{"~/.cursor/cli-config.json", kindCredentials, "Cursor CLI settings with its login token"},
	{"~/.config/cursor/auth.json", kindCredentials, "Cursor CLI login token (older versions)"},

	// Browser profiles: cookies, saved passwords, session tokens.
	{"~/.mozilla", kindPrivate, "Firefox profiles: cookies and saved passwords"},
	{"~/.thunderbird", kindPrivate, "Thunderbird mail and saved passwords"},
	{"~/.config/google-chrome", kindPrivate, "Chrome profiles: cookies and saved passwords"},
	{"~/.config/chromium", kindPrivate, "Chromium profiles: cookies and saved passwords"},
	{"~/.config/BraveSoftware", kindPrivate, "Brave profiles: cookies and saved passwords"},
	{"~/.config/microsoft-edge", kindPrivate, "Edge profiles: cookies and saved passwords"},
	{"~/.config/vivaldi", kindPrivate, "Vivaldi profiles: cookies and saved passwords"},
	{"~/.config/opera", kindPrivate, "Opera profiles: cookies and saved passwords"},

	// Shell and REPL histories: typed passwords, tokens on command lines.
	{"~/.bash_history", kindPrivate, "bash history"},
	{"~/.zsh_history", kindPrivate, "zsh history"},
	{"~/.zhistory", kindPrivate, "zsh history (alternative name)"},
	{"~/.histfile", kindPrivate, "zsh history (alternative name)"},
	{"~/.local/share/fish/fish_history", kindPrivate, "fish history"},
	{"~/.local/share/atuin", kindPrivate, "atuin shell history database"},
	{"~/.python_history", kindPrivate, "Python REPL history"},
	{"~/.node_repl_history", kindPrivate, "Node.js REPL history"},
	{"~/.irb_history", kindPrivate, "Ruby REPL history"},
	{"~/.psql_history", kindPrivate, "psql history: queries and passwords"},
	{"~/.mysql_history", kindPrivate, "mysql history: queries and passwords"},
	{"~/.sqlite_history", kindPrivate, "sqlite3 history"},
	{"~/.rediscli_history", kindPrivate, "redis-cli history: AUTH passwords"},

	// System files only root can read: they matter when moat runs as root (in CI,
	// in a container), where the command would read them like any other file.
	{"/etc/shadow", kindCredentials, "password hashes (readable by root)"},
	{"/etc/shadow-", kindCredentials, "the previous /etc/shadow"},
	{"/etc/gshadow", kindCredentials, "group password hashes (readable by root)"},
	{"/etc/gshadow-", kindCredentials, "the previous /etc/gshadow"},
	{"/etc/ssh/ssh_host_*_key", kindCredentials, "the host's SSH private keys (readable by root)"},

	// The workspace's environment files; see envFileDepth.
	{".env", kindWorkspace, "environment files hold API keys and passwords"},
	{".env.*", kindWorkspace, "environment files hold API keys and passwords (.env.local, .env.production, ...)"},
}

// envFileDepth is how many directory levels below the current directory the
// workspace's .env and .env.* files are denied: the current directory and three
// levels below it (as srt's default mandatoryDenySearchDepth), written as
// "*/.env", "*/*/.env", ... so that the sandbox need not walk the whole tree.
const envFileDepth = 3

// SecretTable returns a copy of the built-in credential deny table.
func SecretTable() []Secret { return append([]Secret(nil), secretTable...) }

// secretOrigin is the origin of a rule from the secret table, e.g.
// "default: credential store (~/.ssh: SSH private keys)".
func secretOrigin(s Secret) string {
	return fmt.Sprintf("%s: %s (%s: %s)", OriginDefault, s.Kind, s.Name, s.Reason)
}

// SecretName returns the secret table entry behind a rule origin, if the rule
// came from the table: the name to put in moat.allowSecrets.
func SecretName(origin string) (string, bool) {
	for _, s := range secretTable {
		if origin == secretOrigin(s) {
			return s.Name, true
		}
	}
	return "", false
}

// secretPaths are the paths, as written in a settings file, that one table
// entry denies.
func secretPaths(s Secret) []string {
	if strings.HasPrefix(s.Name, "~/") || strings.HasPrefix(s.Name, "/") {
		return []string{s.Name}
	}
	out := []string{s.Name}
	for d := 1; d <= envFileDepth; d++ {
		out = append(out, strings.Repeat("*/", d)+s.Name)
	}
	return out
}

func checkSecretName(name string) *problem {
	var names []string
	for _, s := range secretTable {
		if s.Name == name {
			return nil
		}
		names = append(names, s.Name)
	}
	if s := suggest(name, names); s != "" {
		return bad(errf(ErrValue, "%q is not an entry of the built-in credential deny table", name),
			fmt.Sprintf("did you mean %q?", s))
	}
	return bad(errf(ErrValue, "%q is not an entry of the built-in credential deny table", name),
		"write a name from the table exactly (home entries as \"~/.npmrc\", workspace entries as \".env\"):\n"+strings.Join(names, " "))
}
