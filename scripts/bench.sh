#!/usr/bin/env bash
# bench.sh: what `moat run` adds to starting a command, next to running it bare and in
# bubblewrap. A benchmark, not a test: it fails only when a command can't run, never on
# timing.
#
# usage: scripts/bench.sh
#   RUNS=200 WARMUP=20   hyperfine's --runs and --warmup (defaults shown)
#   MOAT=/path/to/moat   benchmark that binary instead of building ./cmd/moat
#
# needs: go (unless MOAT is set), hyperfine; bwrap is optional.
# install: apt-get install -y hyperfine bubblewrap
set -euo pipefail

runs=${RUNS:-200}
warmup=${WARMUP:-20}
target_ms=5 # the issue's goal: median at most this, and no slower than bwrap

say() { printf 'bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/moat-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

command -v hyperfine >/dev/null ||
	die "hyperfine not found; install it: apt-get install -y hyperfine bubblewrap"
# `command -v true` names bash's builtin; hyperfine -N needs the executable.
true_bin=$(type -P true) || die "no 'true' executable on PATH"

have_bwrap=1
if ! command -v bwrap >/dev/null; then
	have_bwrap=0
	say "bwrap not found: skipping the bubblewrap comparison (install: apt-get install -y bubblewrap)"
fi

if [[ -n ${MOAT:-} ]]; then
	moat=$MOAT
	[[ -x $moat ]] || die "MOAT=$moat is not an executable"
else
	command -v go >/dev/null || die "go not found: install Go, or set MOAT to a built moat"
	say "building moat"
	(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/moat" ./cmd/moat) || die "building ./cmd/moat failed"
	moat=$tmp/moat
fi

# Run the commands in an empty directory, which moat makes its writable workspace.
work=$tmp/work
mkdir "$work"
cd "$work"
# moat keeps the record of the placeholders it makes in $TMPDIR/moat-$UID (without
# XDG_RUNTIME_DIR), shared by every moat of the user, and the last one out removes
# them. A private TMPDIR keeps other moats on the machine (a test suite, an agent)
# from holding that lock, which would leave each run's placeholders for the next
# and skip their removal: a faster, wrong figure.
export TMPDIR=$tmp
unset XDG_RUNTIME_DIR

# Commands as hyperfine -N (no shell) splits them: quote each word.
q() { local s; s=$(printf '%q ' "$@"); printf '%s' "${s% }"; }
names=(bare)
cmds=("$(q "$true_bin")")
if ((have_bwrap)); then
	names+=(bwrap)
	cmds+=("$(q bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc "$true_bin")")
fi
names+=(moat)
cmds+=("$(q "$moat" run -- "$true_bin")")

# Each command must work once before it is timed; a failure is an error, not a number.
for i in "${!cmds[@]}"; do
	if ! out=$(eval "${cmds[i]}" 2>&1); then
		die "${names[i]} failed to run: ${cmds[i]}
$out"
	fi
done

args=(-N --warmup "$warmup" --runs "$runs" --export-json "$tmp/bench.json")
for i in "${!cmds[@]}"; do
	args+=(-n "${names[i]}" "${cmds[i]}")
done
say "hyperfine ${args[*]}"
hyperfine "${args[@]}" || die "hyperfine failed (a command exited non-zero during the runs)"

echo
echo "kernel $(uname -r), $(nproc) CPUs, $(hyperfine --version)"
json=$tmp/bench.json
if command -v python3 >/dev/null; then
	python3 - "$json" "$target_ms" <<'EOF' || die "python3 couldn't summarise hyperfine's results"
import json, sys

results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
target = float(sys.argv[2])
ms = lambda s: s * 1000

print(f"{'command':<8} {'median ms':>10} {'mean ms':>9} {'stddev':>8} {'min ms':>8} {'max ms':>8}")
for name, r in results.items():
    print(f"{name:<8} {ms(r['median']):>10.2f} {ms(r['mean']):>9.2f} {ms(r['stddev'] or 0):>8.2f} {ms(r['min']):>8.2f} {ms(r['max']):>8.2f}")
print()
moat = results["moat"]
for base in ("bare", "bwrap"):
    if base in results:
        b = results[base]
        print(f"moat/{base:<5}  median {moat['median'] / b['median']:6.2f}x   mean {moat['mean'] / b['mean']:6.2f}x")

print()
m = ms(moat["median"])
print(f"target: median <= {target:g} ms: moat's is {m:.2f} ms: {'met' if m <= target else 'NOT met'}")
if "bwrap" in results:
    w = ms(results["bwrap"]["median"])
    print(f"target: no slower than bwrap: moat {m:.2f} ms vs bwrap {w:.2f} ms: {'met' if m <= w else 'NOT met'}")
else:
    print("target: no slower than bwrap: not measured (no bwrap)")
EOF
elif command -v jq >/dev/null; then
	jq -r '
		def ms: . * 1000 * 100 | round / 100;
		"command\tmedian ms\tmean ms\tstddev\tmin ms\tmax ms",
		(.results[] | [.command, (.median | ms), (.mean | ms), ((.stddev // 0) | ms), (.min | ms), (.max | ms)] | @tsv)
	' "$json" | column -t -s $'\t' || die "jq couldn't summarise hyperfine's results"
	echo
	jq -r --argjson target "$target_ms" '
		def ms: . * 1000 * 100 | round / 100;
		def x: . * 100 | round / 100;
		(.results | map({key: .command, value: .}) | from_entries) as $r
		| ("bare", "bwrap" | . as $name | $r[$name] as $b | select($b)
			| "moat/\($name)  median \($r.moat.median / $b.median | x)x   mean \($r.moat.mean / $b.mean | x)x"),
		  "",
		  "target: median <= \($target) ms: moat is \($r.moat.median | ms) ms: \(if ($r.moat.median * 1000) <= $target then "met" else "NOT met" end)",
		  (if $r.bwrap then
			"target: no slower than bwrap: moat \($r.moat.median | ms) ms vs bwrap \($r.bwrap.median | ms) ms: \(if $r.moat.median <= $r.bwrap.median then "met" else "NOT met" end)"
		  else "target: no slower than bwrap: not measured (no bwrap)" end)
	' "$json" || die "jq couldn't summarise hyperfine's results"
else
	say "neither python3 nor jq: see hyperfine's summary above"
	echo "target: moat run's median <= ${target_ms} ms and no slower than bwrap"
fi
