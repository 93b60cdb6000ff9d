#!/usr/bin/env bash
# Benchmarks moat's network path against the same work without moat, and prints
# figures and ratios; it asserts nothing.
#
#   1. A download from a test host through moat's proxy, over plain HTTP and over
#      HTTPS (CONNECT), against the same download straight from the host.
#   2. The latency of small requests, median, through the proxy and direct.
#   3. `moat run -- true` (the proxy is always on).
#
# The test host is a network namespace joined to the host's by a veth pair in
# 198.18.0.240/28; its server is the network tests' binary (test/network) in its
# benchserver role. moat runs in a private mount namespace whose /etc/hosts names
# the test host, so its supervisor resolves the name as it would any other.
#
# Needs root, iproute2, util-linux's unshare, curl; hyperfine for figure 3.
#
#   scripts/bench-net.sh              # 1 GiB downloads, 500 small requests
#   BENCH_MIB=256 BENCH_REQUESTS=200 scripts/bench-net.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 # moat's init stage needs it

if [ "$(id -u)" != 0 ]; then
	echo "bench-net: needs root: it builds a network namespace and a veth pair" >&2
	exit 1
fi
for tool in ip unshare curl; do
	command -v "$tool" >/dev/null || { echo "bench-net: needs $tool" >&2; exit 1; }
done
mib=${BENCH_MIB:-1024}
requests=${BENCH_REQUESTS:-500}
rounds=${BENCH_ROUNDS:-3}

host_ip=198.18.0.241 peer_ip=198.18.0.242 name=allowed.moat-test
if ip -br addr | grep -qw "$host_ip"; then
	echo "bench-net: $host_ip is already in use on this host (another bench-net?)" >&2
	exit 1
fi
# The sandbox replaces /tmp: keep the files it must read elsewhere.
work=$(mktemp -d "${BENCH_DIR:-$HOME}/moat-bench-net.XXXXXX")
chmod 755 "$work"
ns=moatbench-$$ hostif=mnb$$h peerif=mnb$$p
server=
cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
	ip link del "$hostif" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building moat and the test server"
go build -o "$work/moat" ./cmd/moat
go test -c -o "$work/nettest" ./test/network

ip netns add "$ns"
ip link add "$hostif" type veth peer name "$peerif"
ip link set "$peerif" netns "$ns"
ip addr add "$host_ip/28" dev "$hostif"
ip link set "$hostif" up
ip -n "$ns" addr add "$peer_ip/28" dev "$peerif"
ip -n "$ns" link set "$peerif" up
ip -n "$ns" link set lo up

ip netns exec "$ns" env MOAT_NETTEST_ROLE=benchserver "$work/nettest" \
	-http "$peer_ip:8080" -https "$peer_ip:8443" -ca "$work/ca.pem" 2>"$work/server.log" &
server=$!
for _ in $(seq 100); do
	curl -s -o /dev/null --resolve "$name:8080:$peer_ip" "http://$name:8080/" && break
	sleep 0.1
done

printf '127.0.0.1 localhost\n%s %s\n' "$peer_ip" "$name" >"$work/hosts"
printf '{"network": {"allowedDomains": ["%s"]}, "filesystem": {"allowWrite": ["."]}}\n' "$name" >"$work/settings.json"
cd "$work"

# direct CMD...: runs CMD on the host, which reaches the test host by address.
direct() { "$@" --resolve "$name:8080:$peer_ip" --resolve "$name:8443:$peer_ip"; }
# inmoat CMD...: runs CMD in moat, whose proxy resolves the name through /etc/hosts.
inmoat() {
	unshare -m --propagation private sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh \
		"$work/hosts" "$work/moat" run --config "$work/settings.json" -- "$@"
}
# best MODE CMD...: the highest of $rounds download speeds, bytes per second.
best() {
	local mode=$1 top=0 s
	shift
	for _ in $(seq "$rounds"); do
		s=$("$mode" curl -sS --http1.1 --cacert "$work/ca.pem" -o /dev/null -w '%{speed_download}' "$@")
		top=$(awk -v a="$top" -v b="$s" 'BEGIN { print (b > a) ? b : a }')
	done
	echo "$top"
}
mibs() { awk -v b="$1" 'BEGIN { printf "%.0f MiB/s", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "== $mib MiB download, best of $rounds"
bytes=$((mib * 1048576))
for scheme in http https; do
	port=8080
	[ "$scheme" = https ] && port=8443
	url="$scheme://$name:$port/bytes/$bytes"
	d=$(best direct "$url")
	m=$(best inmoat "$url")
	via="proxy (plain HTTP)"
	[ "$scheme" = https ] && via="proxy (HTTPS CONNECT)"
	printf '%-6s direct %12s   moat %-24s %12s   moat/direct %s\n' "$scheme" "$(mibs "$d")" "$via" "$(mibs "$m")" "$(ratio "$m" "$d")"
done

echo "== latency of $requests small requests, one curl each way, median"
# One curl process makes every request in turn, so process start-up is not
# counted; -w prints each request's total time.
median_ms() { sort -n | awk '{ a[NR] = $1 } END { printf "%.3f", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) * 1000 }'; }
small() {
	local mode=$1 url=$2
	shift 2
	local args=()
	for i in $(seq "$requests"); do args+=(-o /dev/null "$url?$i"); done
	"$mode" curl -sS --http1.1 --cacert "$work/ca.pem" -w '%{time_total}\n' "$@" "${args[@]}" | median_ms
}
for kind in "http keep-alive" "http new-connection" "https new-connection"; do
	set -- $kind
	port=8080
	[ "$1" = https ] && port=8443
	extra=()
	[ "$2" = new-connection ] && extra=(-H "Connection: close")
	url="$1://$name:$port/small"
	d=$(small direct "$url" "${extra[@]}")
	m=$(small inmoat "$url" "${extra[@]}")
	printf '%-22s direct %8s ms   moat %8s ms   added %+.3f ms   moat/direct %s\n' "$kind" "$d" "$m" \
		"$(awk -v a="$m" -v b="$d" 'BEGIN { print a - b }')" "$(ratio "$m" "$d")"
done
echo "   (through the proxy, each plain-HTTP request gets its own upstream connection;"
echo "    with keep-alive, the direct client reuses one)"

echo "== moat run -- true (networking is always on)"
if command -v hyperfine >/dev/null; then
	hyperfine -N --warmup 5 --runs "${BENCH_RUNS:-50}" "$work/moat run -- true" "true" 2>&1 | sed 's/^/   /'
else
	echo "   hyperfine is not installed (Debian: apt-get install hyperfine)"
fi
