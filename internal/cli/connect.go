package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"time"
)

// connectCmd relays stdin and stdout to HOST:PORT through moat's proxy: ssh's
// ProxyCommand inside the sandbox (git over ssh), or any tool that can pipe.
func connectCmd(args []string, std stdio) error {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	fs.SetOutput(std.err)
	proxyAddr := fs.String("proxy", os.Getenv("MOAT_PROXY"), "the proxy's `host:port` (default $MOAT_PROXY)")
	if err := fs.Parse(args); err != nil {
		return usageError{err: err}
	}
	if fs.NArg() != 2 {
		return usageError{err: errors.New("connect needs HOST and PORT")}
	}
	host, port := fs.Arg(0), fs.Arg(1)
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return usageError{err: fmt.Errorf("port %q is not a number 1-65535", port)}
	}
	if *proxyAddr == "" {
		return runError{err: errors.New("no proxy: MOAT_PROXY is not set"), hint: "run this inside 'moat run', which sets it, or pass --proxy HOST:PORT"}
	}
	c, err := net.DialTimeout("tcp", *proxyAddr, 10*time.Second)
	if err != nil {
		return runError{err: fmt.Errorf("connect to moat's proxy: %w", err)}
	}
	defer c.Close()
	target := net.JoinHostPort(host, port)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	tp := textproto.NewReader(br)
	status, err := tp.ReadLine()
	if err != nil {
		return runError{err: fmt.Errorf("read the proxy's answer: %w", err)}
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		return runError{err: fmt.Errorf("read the proxy's answer: %w", err)}
	}
	if f := strings.Fields(status); len(f) < 2 || f[1] != "200" {
		body, _ := io.ReadAll(io.LimitReader(br, 4096))
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = status
		}
		return runError{err: fmt.Errorf("the proxy refused %s: %s", target, msg), hint: hdr.Get("X-Moat-Hint")}
	}
	go func() {
		io.Copy(c, std.in)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	io.Copy(std.out, br) // the tunnel's bytes, including any read with the header
	return nil
}
