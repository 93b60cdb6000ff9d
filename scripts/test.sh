#!/usr/bin/env bash
# Runs moat's whole test suite: vet, unit tests, the real-kernel integration tests
# and the escape suite. As root it also runs every test binary again as an
# unprivileged user (created if missing), because real users are not root.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 # moat's init stage needs it (syscall.AllThreadsSyscall)

echo "== go vet"
go vet ./...
echo "== go test as $(id -un)"
go test -count=1 ./...

if [ "$(id -u)" != 0 ]; then
	echo "== not root: skipping the second run as an unprivileged user"
	exit 0
fi
user=${MOAT_TEST_USER:-moattest}
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
out=$(mktemp -d /tmp/moat-test.XXXXXX)
trap 'rm -rf "$out"' EXIT
chmod 755 "$out"
go build -o "$out/moat" ./cmd/moat
echo "== go test as $user"
failed=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	name=$(echo "${pkg#github.com/moat-sandbox/moat/}" | tr / _)
	go test -c -o "$out/$name.test" "$pkg"
	[ -f "$out/$name.test" ] || continue # no tests in this package
	# Test binaries read testdata/ relative to their package dir: give them a copy.
	mkdir -p "$out/src/$name" && cp -r "$dir/." "$out/src/$name/"
	chmod -R a+rX "$out"
	log="$out/$name.log"
	if (cd "$out/src/$name" && su "$user" -s /bin/bash -c "MOAT_BIN=$out/moat $out/$name.test -test.count=1 -test.v" >"$log" 2>&1); then
		echo "ok   $pkg as $user ($(grep -c -- '^--- PASS' "$log" || true) passed, $(grep -c -- '--- SKIP' "$log" || true) skipped)"
	else
		echo "FAIL $pkg as $user:"
		grep -E -- '--- FAIL|^\s+.*_test.go:[0-9]+' "$log" | head -40 || tail -40 "$log"
		failed=1
	fi
done
exit $failed
