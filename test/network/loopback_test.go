package network_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// hostAddrs are the host's own non-loopback addresses a socket can reach without
// a zone.
func hostAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || p.Addr().IsLoopback() || p.Addr().IsLinkLocalUnicast() {
			continue
		}
		out = append(out, p.Addr())
	}
	return out
}

func mustListen(t *testing.T, network, addr string) *tcpServer {
	t.Helper()
	s, err := listenHost(t, network, addr)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	return s
}

// TestHostLoopback: the host's loopback services and its own addresses are out of
// reach, directly and through the proxy under every spelling of the address. The
// controls: the host reaches every listener; and through the proxy, the opt-in (a
// rule naming the literal 127.0.0.1:PORT) reaches another listener there.
func TestHostLoopback(t *testing.T) {
	b := newBox(t)
	client := b.client()
	l4 := mustListen(t, "tcp4", "127.0.0.1:0")
	lw := mustListen(t, "tcp", ":0") // every address of the host
	lc := mustListen(t, "tcp4", "127.0.0.1:0")
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	udp := serveUDP(t, pc, pc.LocalAddr().String())
	watched := map[string]interface {
		all() []hit
		settle(*testing.T)
	}{"127.0.0.1 tcp": l4, "every host address tcp": lw, "127.0.0.1 udp": udp}
	var l6 *tcpServer
	if s, err := listenHost(t, "tcp6", "[::1]:0"); err == nil {
		l6 = s
		watched["::1 tcp"] = l6
	} else {
		t.Logf("no IPv6 loopback here (%v): the ::1 cases are left out", err)
	}
	// The proxy's own port, on the host's loopback: the proxy must not reach "itself".
	if s, err := listenHost(t, "tcp4", "127.0.0.1:3128"); err == nil {
		watched["127.0.0.1:3128 tcp"] = s
	} else {
		t.Logf("the host's 127.0.0.1:3128 is taken (%v): the proxy-to-itself cases are judged by the other listeners only", err)
	}

	p4 := strconv.Itoa(l4.port())
	var direct, viaProxy []string
	reaches := map[string]interface{ containing(string) []hit }{} // direct target -> its listener
	addDirect := func(spec string, s interface{ containing(string) []hit }) {
		direct = append(direct, spec)
		reaches[spec] = s
	}
	addDirect("tcp:127.0.0.1:"+p4, l4)
	addDirect(fmt.Sprintf("udp:127.0.0.1:%d", pc.LocalAddr().(*net.UDPAddr).Port), udp)
	for _, u := range []string{"127.0.0.1", "localhost", "127.1", "2130706433", "0x7f.1", "0177.0.0.1", "0", "0.0.0.0", "[::ffff:127.0.0.1]"} {
		viaProxy = append(viaProxy, "curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://"+u+":"+p4+"/")
	}
	for _, u := range []string{"127.0.0.1", "localhost", "0x7f000001", "0.0.0.0", "[::ffff:7f00:1]"} {
		viaProxy = append(viaProxy, "python3 "+shq(client)+" connect $MOAT_PROXY "+shq(u+":"+p4)+" raw x")
	}
	viaProxy = append(viaProxy,
		"python3 "+shq(client)+" socks $MOAT_PROXY ipv4 127.0.0.1 "+p4+" raw x",
		"python3 "+shq(client)+" socks $MOAT_PROXY ipv4 0.0.0.0 "+p4+" raw x",
		"python3 "+shq(client)+" socks $MOAT_PROXY domain localhost "+p4+" raw x",
		"curl -sS -m 5 -o /dev/null --socks5-hostname $MOAT_PROXY http://localhost:"+p4+"/",
		// The proxy reaching itself.
		"python3 "+shq(client)+" connect $MOAT_PROXY 127.0.0.1:3128 raw x",
		"python3 "+shq(client)+" socks $MOAT_PROXY ipv4 127.0.0.1 3128 raw x",
		"curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://127.0.0.1:3128/",
		"curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://localhost:3128/")
	if l6 != nil {
		p6 := strconv.Itoa(l6.port())
		addDirect("tcp6:::1:"+p6, l6)
		viaProxy = append(viaProxy,
			"curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://[::1]:"+p6+"/",
			"curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://[::]:"+p6+"/",
			"python3 "+shq(client)+" connect $MOAT_PROXY '[::1]:"+p6+"' raw x",
			"python3 "+shq(client)+" socks $MOAT_PROXY ipv6 ::1 "+p6+" raw x")
	}
	for _, a := range hostAddrs(t) {
		hp := lw.hostPort(a.String())
		kind := "tcp:"
		if a.Is6() {
			kind = "tcp6:"
		}
		addDirect(kind+a.String()+":"+strconv.Itoa(lw.port()), lw)
		viaProxy = append(viaProxy, "python3 "+shq(client)+" connect $MOAT_PROXY "+shq(hp)+" raw x",
			"curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://"+hp+"/")
	}

	// Control: the host reaches every listener.
	tc := token("c")
	ctl := b.host("sh", "-c", "PROBE_TOKEN="+tc+" python3 "+shq(client)+" probe "+strings.Join(direct, " "))
	for _, s := range watched {
		s.settle(t)
	}
	for _, d := range direct {
		expectHit(t, reaches[d].containing(d+" "+tc), "the host reached "+d, ctl)
	}
	before := map[string]int{}
	for name, s := range watched {
		before[name] = len(s.all())
	}

	conf := settings([]string{"localhost", "127.0.0.1:" + strconv.Itoa(lc.port())}, nil)
	check := func(t *testing.T, r result) {
		t.Helper()
		for name, s := range watched {
			s.settle(t)
			if n := len(s.all()) - before[name]; n != 0 {
				t.Errorf("the host's %s listener accepted %d connection(s) from the sandbox:", name, n)
				for _, h := range s.all()[before[name]:] {
					t.Errorf("  %s", h)
				}
			}
		}
		if t.Failed() {
			t.Logf("the run:\n%s", r)
		}
	}
	t.Run("direct", func(t *testing.T) {
		r := b.run(opts{config: conf, script: "python3 " + shq(client) + " probe " + strings.Join(direct, " ")})
		res := testmoat.KeyValues(r.stdout)
		for _, d := range direct {
			if res[d] == "" {
				t.Errorf("the probe did not try %s inside:\n%s", d, r)
			}
		}
		check(t, r)
		t.Logf("inside: %v", res)
	})
	t.Run("through_the_proxy", func(t *testing.T) {
		r := b.run(opts{config: conf, script: strings.Join(viaProxy, "; ")})
		check(t, r)
		if len(r.denials()) < len(viaProxy)-3 { // curl refuses some spellings itself
			t.Errorf("%d refusals in the event log for %d attempts:\n%s", len(r.denials()), len(viaProxy), r)
		}
	})
	t.Run("name_resolving_to_loopback", func(t *testing.T) {
		h := needTestHost(t)
		r := b.onTestHost(h, strings.Join([]string{
			"curl -sS -m 5 -o /dev/null http://loop.moat-test:" + p4 + "/",
			"python3 " + shq(client) + " connect $MOAT_PROXY loop.moat-test:" + p4 + " raw x",
			"python3 " + shq(client) + " socks $MOAT_PROXY domain loop.moat-test " + p4 + " raw x",
			"curl -sS -m 5 -o /dev/null --socks5-hostname $MOAT_PROXY http://loop.moat-test:" + p4 + "/",
			"getent hosts loop.moat-test",
		}, "; "))
		check(t, r)
		if strings.Contains(r.stdout, "127.0.0.1") {
			t.Errorf("the DNS stub answered loop.moat-test with a loopback address:\n%s", r)
		}
	})
	t.Run("control_opt_in_literal", func(t *testing.T) {
		tok := token("c")
		r := b.run(opts{config: conf, script: "curl --noproxy '' -x http://$MOAT_PROXY -sS -m 5 -o /dev/null http://127.0.0.1:" + strconv.Itoa(lc.port()) + "/" + tok +
			"; python3 " + shq(client) + " connect $MOAT_PROXY 127.0.0.1:" + strconv.Itoa(lc.port()) + " raw " + tok + "-connect"})
		lc.settle(t)
		expectHit(t, lc.containing("/"+tok), "curl reached the opted-in 127.0.0.1 port through the proxy", r)
		expectHit(t, lc.containing(tok+"-connect"), "CONNECT reached the opted-in 127.0.0.1 port", r)
		check(t, r)
	})
}

// TestHostAddressAddedDuringRun: an address the host gains while a sandbox runs (a
// VPN comes up, docker0 appears) is the host's own from then on, and out of reach
// like the others, though the proxy had listed the host's addresses before. The
// sandbox asks for a name that resolves to the new address; the host's wildcard
// listener must see nothing. The control: the host itself reaches the listener
// there.
func TestHostAddressAddedDuringRun(t *testing.T) {
	h := needTestHost(t)
	b := newBox(t)
	lw := mustListen(t, "tcp4", ":0")
	late := h.addr(addrLate)
	target := net.JoinHostPort("late.moat-test", strconv.Itoa(lw.port()))
	tok := token("a")
	ready, gone := filepath.Join(b.ws, "ready"), filepath.Join(b.ws, "go")
	added := make(chan error, 1)
	go func() {
		if !testmoat.WaitFor(30*time.Second, func() bool { return testmoat.Exists(ready) }) {
			added <- errors.New("the sandbox never said it was ready")
			return
		}
		err := ipCmd("addr", "add", late.String()+"/32", "dev", h.hostIf)
		if err == nil {
			err = os.WriteFile(gone, nil, 0o644)
		}
		added <- err
	}()
	t.Cleanup(func() { ipCmd("addr", "del", late.String()+"/32", "dev", h.hostIf) })
	conf := settings([]string{"allowed.moat-test", "late.moat-test"}, nil)
	r := b.run(opts{config: conf, where: viaTestHost, script: `
curl -sS -m 5 -o /dev/null http://allowed.moat-test:1/   # the proxy lists the host's addresses now
touch ready
i=0; while [ ! -e go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
curl -sS -m 5 http://` + target + `/` + tok + `-curl
python3 ` + shq(b.client()) + ` connect $MOAT_PROXY ` + target + ` raw ` + tok + `-connect
`})
	if err := <-added; err != nil {
		t.Fatalf("add %s to the host: %v\n%s", late, err, r)
	}
	ctl := b.host("curl", "-sS", "-m", "5", "http://"+net.JoinHostPort(late.String(), strconv.Itoa(lw.port()))+"/"+token("c"))
	lw.settle(t)
	if len(lw.all()) == 0 {
		t.Fatalf("control: the host did not reach its listener on the new address %s:\n%s", late, ctl)
	}
	expectNone(t, lw.containing(tok), "the host's listener on "+late.String()+", added during the run, accepted", r)
	if !strings.Contains(r.eventLog, `"address-host"`) {
		t.Errorf("no address-host refusal in the event log:\n%s", r)
	}
}

// TestUnixSockets: the host's abstract and pathname unix sockets are out of reach;
// the control is a socket the policy lists in network.allowUnixSockets.
func TestUnixSockets(t *testing.T) {
	b := newBox(t)
	client := b.client()
	dir := filepath.Join(b.root, "s")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abstract := "moat-nettest-" + token("")
	pathname, allowed := filepath.Join(dir, "host.sock"), filepath.Join(dir, "allowed.sock")
	la := mustListen(t, "unix", "@"+abstract)
	lp := mustListen(t, "unix", pathname)
	lok := mustListen(t, "unix", allowed)
	for _, p := range []string{pathname, allowed} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	targets := []string{"abstract:" + abstract, "unix:" + pathname, "unix:" + allowed}

	tc := token("c")
	ctl := b.host("sh", "-c", "PROBE_TOKEN="+tc+" python3 "+shq(client)+" probe "+strings.Join(targets, " "))
	for _, s := range []*tcpServer{la, lp, lok} {
		s.settle(t)
	}
	expectHit(t, la.containing(tc), "the host reached its abstract socket", ctl)
	expectHit(t, lp.containing(tc), "the host reached its pathname socket", ctl)

	conf, err := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "allowUnixSockets": []string{allowed}},
		"filesystem": map[string]any{"allowWrite": []string{"."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ta := token("a")
	r := b.run(opts{config: string(conf), script: "PROBE_TOKEN=" + ta + " python3 " + shq(client) + " probe " + strings.Join(targets, " ")})
	for _, s := range []*tcpServer{la, lp, lok} {
		s.settle(t)
	}
	expectHit(t, lok.containing(ta), "the sandbox reached the socket allowUnixSockets lists", r)
	expectNone(t, la.containing(ta), "the host's abstract socket accepted from the sandbox", r)
	expectNone(t, lp.containing(ta), "the host's pathname socket accepted from the sandbox", r)
	if n := len(la.all()) + len(lp.all()); n != 2 {
		t.Errorf("the host's sockets logged %d connections, want the host's 2", n)
	}
	t.Logf("inside: %v", testmoat.KeyValues(r.stdout))
}
