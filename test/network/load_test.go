package network_test

import (
	"fmt"
	"strings"
	"testing"
)

// concurrent is how many connections TestConcurrent holds open through the proxy
// at once.
const concurrent = 200

// TestConcurrent: 200 requests through the proxy at once, none lost. The test
// host's server holds every request until all 200 are in, so they were open at
// the same time; the verdict is the server's log of 200 distinct paths.
func TestConcurrent(t *testing.T) {
	h := needTestHost(t)
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			web := h.web(t)
			web.hold = newBarrier(concurrent)
			tok := token("l")
			port := web.httpPort()
			if scheme == "https" {
				port = web.httpsPort()
			}
			url := fmt.Sprintf("%s://%s.allowed.moat-test:%d/hold/%s", scheme, tok, port, tok)
			r := b.onTestHost(h, fmt.Sprintf("env %s=goclient %s load %s %d %s", roleEnv, shq(selfBin), url, concurrent, shq(testCert().caFile)))
			web.settle(t)
			paths := map[string]bool{}
			for _, x := range web.match(and(kind("http"), hasPath("/hold/"+tok+"/"))) {
				paths[x.Path] = true
			}
			if len(paths) != concurrent {
				t.Errorf("the test host got %d distinct requests of %d:\n%s", len(paths), concurrent, r)
			}
			if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("ok %d of %d", concurrent, concurrent)) {
				t.Errorf("the client inside did not get %d answers:\n%s", concurrent, r)
			}
			if n := len(r.denials()); n != 0 {
				t.Errorf("%d refusals:\n%s", n, r)
			}
		})
	}
}
