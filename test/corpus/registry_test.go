package corpus_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// registry is a package registry the host is configured for and reaches.
type registry struct {
	url  string // as the tool's config gives it
	host string // what --allow-net gets
	skip string // why it can't be used here; "" when it can
}

var (
	npmOnce, goOnce sync.Once
	npmReg, goReg   registry
)

// npmRegistry is the registry of the host's npm (npm config get registry).
func npmRegistry() registry {
	npmOnce.Do(func() {
		npmReg = configuredRegistry("npm's registry", "is-number", "npm", "config", "get", "registry")
	})
	return npmReg
}

// goProxy is the first URL in the host's GOPROXY (go env GOPROXY).
func goProxy() registry {
	goOnce.Do(func() {
		out, err := exec.Command(goBin(), "env", "GOPROXY").Output()
		if err != nil {
			goReg.skip = fmt.Sprintf("go env GOPROXY: %v", err)
			return
		}
		var proxyURL string
		for _, p := range strings.FieldsFunc(strings.TrimSpace(string(out)), func(r rune) bool { return r == ',' || r == '|' }) {
			if strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "http://") {
				proxyURL = p
				break
			}
		}
		if proxyURL == "" {
			goReg.skip = fmt.Sprintf("GOPROXY %q names no proxy URL", strings.TrimSpace(string(out)))
			return
		}
		goReg = checkRegistry("the Go module proxy", proxyURL, depModule+"/@v/"+depVersion+".info")
	})
	return goReg
}

// configuredRegistry reads a registry URL from a tool's own configuration (with
// the user's environment, as the user's tools would) and checks that it answers.
func configuredRegistry(what, probe string, name string, args ...string) registry {
	path, err := exec.LookPath(name)
	if err != nil {
		return registry{skip: name + " is not installed"}
	}
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		return registry{skip: fmt.Sprintf("%s %s: %v", name, strings.Join(args, " "), err)}
	}
	return checkRegistry(what, strings.TrimSpace(string(out)), probe)
}

func checkRegistry(what, raw, probe string) registry {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return registry{skip: fmt.Sprintf("%s %q is not a URL", what, raw)}
	}
	r := registry{url: raw, host: u.Hostname()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(raw, "/")+"/"+probe, nil)
	if err != nil {
		return registry{skip: err.Error()}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return registry{skip: fmt.Sprintf("%s is not reachable from this host (%v)", what, err)}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return registry{skip: fmt.Sprintf("%s answers %s for %s from this host", what, resp.Status, probe)}
	}
	return r
}
