package policy

// Where a protected entry is relative to.
const (
	WhereWorkspace = "workspace" // each writable root (every AllowWrite path)
	WhereHome      = "home"      // the home directory, when it is writable
)

// protectedTable lists the paths that stay read-only inside the sandbox even where
// the policy makes their parent writable: writing them would let the sandboxed
// command run code outside the sandbox later (in the user's shell, editor, agent or
// git), or widen its own sandbox next time. The only opt-out is naming an entry in
// "moat": {"unprotect": [...]}.
var protectedTable = []Protected{
	// Workspace: read by tools the user runs in the project after the sandbox exits.
	{Name: ".git/hooks", Dir: true, Where: WhereWorkspace, Reason: "git runs these scripts on commit, checkout, merge and push"},
	{Name: ".git/config", Where: WhereWorkspace, Reason: "core.hooksPath, core.fsmonitor, core.sshCommand and aliases run commands"},
	{Name: ".gitmodules", Where: WhereWorkspace, Reason: "submodule URLs and update commands are fetched and run by git"},
	{Name: ".vscode", Dir: true, Where: WhereWorkspace, Reason: "tasks.json and settings.json run commands when the folder is opened"},
	{Name: ".idea", Dir: true, Where: WhereWorkspace, Reason: "JetBrains run configurations and startup tasks run commands"},
	{Name: ".devcontainer", Dir: true, Where: WhereWorkspace, Reason: "postCreateCommand and friends run when the folder is reopened in a container"},
	{Name: ".envrc", Where: WhereWorkspace, Reason: "direnv sources it in the user's shell on cd"},
	{Name: ".husky", Dir: true, Where: WhereWorkspace, Reason: "husky git hooks run on the user's next commit once core.hooksPath points here"},
	{Name: ".mcp.json", Where: WhereWorkspace, Reason: "agents start the MCP server commands listed here"},
	{Name: ".claude", Dir: true, Where: WhereWorkspace, Reason: "Claude Code hooks, commands and permission settings"},
	{Name: ".codex", Dir: true, Where: WhereWorkspace, Reason: "Codex configuration and sandbox settings"},
	{Name: ".cursor", Dir: true, Where: WhereWorkspace, Reason: "Cursor rules, MCP servers and hooks"},
	{Name: ".gemini", Dir: true, Where: WhereWorkspace, Reason: "Gemini CLI settings, MCP servers and sandbox settings"},
	{Name: ".agents", Dir: true, Where: WhereWorkspace, Reason: "agent skills and instructions that other agents load and run"},
	{Name: ".moatignore", Where: WhereWorkspace, Reason: "moat's ignore file: removing a line would expose the path on the next run"},
	{Name: ".moat.jsonc", Where: WhereWorkspace, Reason: "moat's project settings: the sandbox must not change its own next policy"},

	// Home: read by the user's shell, git, ssh, editors and session manager.
	{Name: ".bashrc", Where: WhereHome, Reason: "sourced by every interactive bash"},
	{Name: ".bash_profile", Where: WhereHome, Reason: "sourced by bash login shells"},
	{Name: ".bash_login", Where: WhereHome, Reason: "sourced by bash login shells without .bash_profile"},
	{Name: ".bash_aliases", Where: WhereHome, Reason: "sourced by the default .bashrc on Debian and Ubuntu"},
	{Name: ".profile", Where: WhereHome, Reason: "sourced by login shells and many display managers"},
	{Name: ".bash_logout", Where: WhereHome, Reason: "run by bash when a login shell exits"},
	{Name: ".zshrc", Where: WhereHome, Reason: "sourced by every interactive zsh"},
	{Name: ".zshenv", Where: WhereHome, Reason: "sourced by every zsh, including scripts"},
	{Name: ".zprofile", Where: WhereHome, Reason: "sourced by zsh login shells"},
	{Name: ".zlogin", Where: WhereHome, Reason: "sourced by zsh login shells"},
	{Name: ".zlogout", Where: WhereHome, Reason: "run by zsh when a login shell exits"},
	{Name: ".config/fish", Dir: true, Where: WhereHome, Reason: "config.fish and conf.d are sourced by every fish shell"},
	{Name: ".gitconfig", Where: WhereHome, Reason: "global git config: hooksPath, aliases, credential helpers, sshCommand"},
	{Name: ".config/git", Dir: true, Where: WhereHome, Reason: "global git config and attributes (XDG location)"},
	{Name: ".ssh", Dir: true, Where: WhereHome, Reason: "authorized_keys grants logins; config runs ProxyCommand and LocalCommand"},
	{Name: ".gnupg", Dir: true, Where: WhereHome, Reason: "gpg-agent.conf names programs gpg runs (pinentry-program)"},
	{Name: ".config/autostart", Dir: true, Where: WhereHome, Reason: "desktop sessions start these entries at login"},
	{Name: ".config/systemd", Dir: true, Where: WhereHome, Reason: "systemd user units run outside the sandbox"},
	{Name: ".config/environment.d", Dir: true, Where: WhereHome, Reason: "sets the environment (PATH, LD_PRELOAD) of the user's session services"},
	{Name: ".local/bin", Dir: true, Where: WhereHome, Reason: "on PATH by default: a file here shadows commands the user runs"},
	{Name: ".npmrc", Where: WhereHome, Reason: "npm runs script-shell and node-options from it on every npm run"},
	{Name: ".aws/config", Where: WhereHome, Reason: "credential_process runs a command whenever an AWS tool needs credentials"},
	{Name: ".kube/config", Where: WhereHome, Reason: "exec credential plugins run a command on every kubectl call"},
	{Name: ".vimrc", Where: WhereHome, Reason: "vim runs it, and any command in it, at startup"},
	{Name: ".vim", Dir: true, Where: WhereHome, Reason: "vim sources plugin/ and ftplugin/ scripts at startup"},
	{Name: ".local/lib", Dir: true, Where: WhereHome, Reason: "python runs the import lines of .pth files in the user site-packages at every start"},
	{Name: ".local/share/nvim", Dir: true, Where: WhereHome, Reason: "neovim loads the plugins of site/pack at startup"},
	{Name: ".config/tmux", Dir: true, Where: WhereHome, Reason: "tmux.conf runs run-shell and if-shell commands when tmux starts"},
	{Name: ".cargo/bin", Dir: true, Where: WhereHome, Reason: "on PATH after rustup: a file here shadows commands the user runs"},
	{Name: ".config/nvim", Dir: true, Where: WhereHome, Reason: "neovim runs init.lua and plugins at startup"},
	{Name: ".emacs", Where: WhereHome, Reason: "emacs evaluates it at startup"},
	{Name: ".emacs.d", Dir: true, Where: WhereHome, Reason: "emacs evaluates init.el at startup"},
	{Name: ".claude", Dir: true, Where: WhereHome, Reason: "Claude Code user settings: hooks and permissions for every project"},
	{Name: ".claude.json", Where: WhereHome, Reason: "Claude Code user MCP servers, started for every project"},
	{Name: ".codex", Dir: true, Where: WhereHome, Reason: "Codex user config: sandbox mode and MCP servers"},
	{Name: ".gemini", Dir: true, Where: WhereHome, Reason: "Gemini CLI user settings and MCP servers"},
	{Name: ".cursor", Dir: true, Where: WhereHome, Reason: "Cursor user MCP servers and rules"},
	{Name: ".config/moat", Dir: true, Where: WhereHome, Reason: "moat's own settings: the sandbox must not widen itself"},
	{Name: ".srt-settings.json", Where: WhereHome, Reason: "srt's settings, which moat may be pointed at"},
}

// ProtectedTable returns a copy of the built-in protected paths table.
func ProtectedTable() []Protected {
	return append([]Protected(nil), protectedTable...)
}
