#!/usr/bin/env bash
# Benchmarks moat's network path against the same work without moat, and prints
# figures and ratios; it asserts nothing.
#
#   1. A download from a test host through moat's proxy, over plain HTTP and over
#      HTTPS (CONNECT), against the same download straight from the host and
#      through a bare TCP relay on the host (splice, no checks): the floor for
#      any proxy on this machine, which separates the proxy's own cost from the
#      cost of a relay hop. With each figure, the share of the machine's CPUs
#      busy during that download: where the direct download already keeps them
#      busy (client and test server share this machine, and with TLS both
#      spend a CPU each on the cipher), any relay costs throughput.
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
server= relays=()
cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
	for p in "${relays[@]}"; do kill "$p" 2>/dev/null || true; done
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

# The bare relays, one per server port, on the host's loopback like moat's
# proxy on the sandbox's; relay_port[PORT] is where each listens.
declare -A relay_port
for port in 8080 8443; do
	MOAT_NETTEST_ROLE=benchrelay "$work/nettest" -listen 127.0.0.1:0 -to "$peer_ip:$port" 2>"$work/relay$port.log" &
	relays+=($!)
	for _ in $(seq 100); do
		relay_port[$port]=$(sed -n 's/^benchrelay: listening on 127\.0\.0\.1://p' "$work/relay$port.log")
		[ -n "${relay_port[$port]}" ] && break
		sleep 0.1
	done
	[ -n "${relay_port[$port]}" ] || { echo "bench-net: the relay did not start: $(cat "$work/relay$port.log")" >&2; exit 1; }
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
# relayed CMD...: runs CMD on the host, which reaches the test host through the bare relays.
relayed() { "$@" --connect-to "$name:8080:127.0.0.1:${relay_port[8080]}" --connect-to "$name:8443:127.0.0.1:${relay_port[8443]}"; }
# cpu_ticks: the whole machine's busy and total CPU time, in ticks.
cpu_ticks() { awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6; exit }' /proc/stat; }
# download MODE URL: one download; prints bytes per second and the share (%) of
# the machine's CPU time that was busy meanwhile.
download() {
	local b0 t0 b1 t1 s
	read -r b0 t0 < <(cpu_ticks)
	s=$("$1" curl -sS --http1.1 --cacert "$work/ca.pem" -o /dev/null -w '%{speed_download}' "$2")
	read -r b1 t1 < <(cpu_ticks)
	echo "$s $((100 * (b1 - b0) / (t1 > t0 ? t1 - t0 : 1)))"
}
mibs() { awk -v b="$1" 'BEGIN { printf "%.0f MiB/s", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "== $mib MiB download, best of $rounds, the modes taking turns; cpu: the machine's $(nproc) CPUs busy during that download"
bytes=$((mib * 1048576))
for scheme in http https; do
	port=8080
	[ "$scheme" = https ] && port=8443
	url="$scheme://$name:$port/bytes/$bytes"
	# best[MODE] is "bytes/s cpu%" of MODE's fastest round.
	declare -A best=([direct]=0 [inmoat]=0 [relayed]=0)
	for _ in $(seq "$rounds"); do
		for mode in direct inmoat relayed; do
			r=$(download "$mode" "$url")
			if awk -v a="${r%% *}" -v b="${best[$mode]%% *}" 'BEGIN { exit !(a > b) }'; then
				best[$mode]=$r
			fi
		done
	done
	read -r d dc <<<"${best[direct]}"
	read -r m mc <<<"${best[inmoat]}"
	read -r r rc <<<"${best[relayed]}"
	via="proxy (plain HTTP)"
	[ "$scheme" = https ] && via="proxy (HTTPS CONNECT)"
	printf '%-6s direct %12s   moat %-24s %12s   moat/direct %s   cpu %3s%% %3s%%\n' "$scheme" "$(mibs "$d")" "$via" "$(mibs "$m")" "$(ratio "$m" "$d")" "$dc" "$mc"
	printf '%-6s direct %12s   bare relay (no checks)        %12s   relay/direct %s  cpu %3s%% %3s%%   moat/relay %s\n' "$scheme" "$(mibs "$d")" "$(mibs "$r")" "$(ratio "$r" "$d")" "$dc" "$rc" "$(ratio "$m" "$r")"
done
echo "   (the bare relay runs on the host and copies with splice(2) between its two TCP"
echo "    connections, as moat's tunnels do, without a request, checks or a sandbox:"
echo "    relay/direct is what a relay hop costs on this machine, moat/relay what moat"
echo "    costs on top of that; cpu near 100% for direct means client and test server"
echo "    already use every CPU, and a relay can only take its CPU from them)"

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
