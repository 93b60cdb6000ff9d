package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/moat-sandbox/moat/proxy"
)

func ExampleServer() {
	// An upstream the policy allows by its address literal (loopback needs that).
	up, _ := net.Listen("tcp", "127.0.0.1:0")
	defer up.Close()
	upAddr := up.Addr().(*net.TCPAddr)

	srv := &proxy.Server{
		Check: func(host string, port int) proxy.Decision {
			if host == "127.0.0.1" && port == upAddr.Port {
				return proxy.Decision{Allow: true, Rule: "example rule"}
			}
			return proxy.Decision{Default: true, Rule: "no rule allows this host", Hint: "allow with --allow-net " + host}
		},
		Events: func(e proxy.Event) {
			b, _ := json.Marshal(struct{ Action, Proto, Host, Reason string }{e.Action, e.Proto, e.Host, e.Reason})
			fmt.Fprintln(os.Stdout, string(b))
		},
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)

	for _, target := range []string{upAddr.String(), "evil.example:443"} {
		c, _ := net.Dial("tcp", ln.Addr().String())
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", target)
		resp, _ := http.ReadResponse(bufio.NewReader(c), nil)
		fmt.Println(strings.TrimSpace(resp.Status + " " + resp.Header.Get("X-Moat-Blocked")))
		c.Close()
	}
	srv.Close()
	// Output:
	// {"Action":"allow","Proto":"connect","Host":"127.0.0.1","Reason":""}
	// 200 Connection established
	// {"Action":"deny","Proto":"connect","Host":"evil.example","Reason":"not-allowed"}
	// 403 Forbidden not-allowed
}
