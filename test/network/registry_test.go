package network_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The package and module the tests fetch: small, without dependencies.
const (
	npmPackage, npmVersion = "is-number", "7.0.0"
	goModule, goVersion    = "github.com/google/go-cmp", "v0.7.0"
	// go.sum lines of goModule, so that "go mod download" needs no checksum database.
	goSum = "github.com/google/go-cmp v0.7.0 h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8=\n" +
		"github.com/google/go-cmp v0.7.0/go.mod h1:pXiqmnSA92OHEEa9HXL2W4E7lf9JzCmGVUdgjX3N/iU=\n"
)

// reachable skips the test unless the host itself gets an answer from rawURL.
func reachable(t *testing.T, what, rawURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Skipf("%s is not reachable from this host (%v)", what, err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Skipf("%s answers %s for %s from this host", what, resp.Status, rawURL)
	}
}

// hostConfig runs a tool on the host with the user's own environment, to read its
// configuration.
func hostConfig(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Skipf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// TestPackageManagers: npm and the go command fetch through the proxy from their
// real registries when the registry's host is allowed (the evidence: the package
// on the host's disk), and fetch nothing when it is not.
func TestPackageManagers(t *testing.T) {
	t.Run("npm", func(t *testing.T) {
		t.Parallel()
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("npm is not installed")
		}
		registry := hostConfig(t, npm, "config", "get", "registry")
		u, err := url.Parse(registry)
		if err != nil || u.Hostname() == "" {
			t.Skipf("npm's registry %q is not a URL", registry)
		}
		reachable(t, "npm's registry", strings.TrimSuffix(registry, "/")+"/"+npmPackage)
		script := "npm install --no-audit --no-fund --no-update-notifier --registry " + shq(registry) + " " + npmPackage + "@" + npmVersion
		env := []string{"npm_config_cache=.npm-cache", "npm_config_fetch_retries=0", "npm_config_fetch_timeout=30000"}
		manifest := func(b *box) string {
			data, _ := os.ReadFile(filepath.Join(b.ws, "node_modules", npmPackage, "package.json"))
			return string(data)
		}

		b := newBox(t)
		r := b.run(opts{script: script, config: settings([]string{u.Hostname()}, nil), env: env})
		if m := manifest(b); !strings.Contains(m, `"version": "`+npmVersion+`"`) {
			t.Fatalf("control: npm installed no %s@%s in the workspace (package.json %q):\n%s", npmPackage, npmVersion, m, r)
		}
		allowedTo(t, r, u.Hostname())

		b = newBox(t)
		r = b.run(opts{script: script, config: settings([]string{"registry.invalid"}, nil), env: env})
		if m := manifest(b); m != "" {
			t.Errorf("npm installed %s with its registry not allowed:\n%s", npmPackage, r)
		}
		refusedTo(t, r, u.Hostname())
	})

	t.Run("go_mod_download", func(t *testing.T) {
		t.Parallel()
		gobin := goBin()
		goproxy := hostConfig(t, gobin, "env", "GOPROXY")
		var proxyURL string
		for _, p := range strings.FieldsFunc(goproxy, func(r rune) bool { return r == ',' || r == '|' }) {
			if strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "http://") {
				proxyURL = p
				break
			}
		}
		u, err := url.Parse(proxyURL)
		if proxyURL == "" || err != nil {
			t.Skipf("GOPROXY %q names no proxy URL", goproxy)
		}
		reachable(t, "the Go module proxy", strings.TrimSuffix(proxyURL, "/")+"/"+goModule+"/@v/"+goVersion+".info")
		setup := func(b *box) {
			mod := filepath.Join(b.ws, "mod")
			if err := os.Mkdir(mod, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n\nrequire "+goModule+" "+goVersion+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mod, "go.sum"), []byte(goSum), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := "export GOMODCACHE=$PWD/modcache GOCACHE=$PWD/gocache; cd mod && " + shq(gobin) + " mod download -x " + goModule
		env := []string{"GOPROXY=" + proxyURL, "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local"}
		zip := func(b *box) string {
			return filepath.Join(b.ws, "modcache", "cache", "download", goModule, "@v", goVersion+".zip")
		}

		b := newBox(t)
		setup(b)
		r := b.run(opts{script: script, config: settings([]string{u.Hostname()}, nil), env: env})
		if _, err := os.Stat(zip(b)); err != nil {
			t.Fatalf("control: no %s on the host after go mod download: %v\n%s", zip(b), err, r)
		}
		allowedTo(t, r, u.Hostname())

		b = newBox(t)
		setup(b)
		r = b.run(opts{script: script, config: settings([]string{"proxy.invalid"}, nil), env: env})
		if _, err := os.Stat(zip(b)); err == nil {
			t.Errorf("go mod download fetched %s with the module proxy not allowed:\n%s", goModule, r)
		}
		refusedTo(t, r, u.Hostname())
	})
}

func allowedTo(t *testing.T, r result, host string) {
	t.Helper()
	for _, e := range r.events {
		if e.Action == "allow" && e.Host == host {
			return
		}
	}
	t.Errorf("control: no allowed connection to %s in the event log:\n%s", host, r)
}

func refusedTo(t *testing.T, r result, host string) {
	t.Helper()
	for _, e := range r.denials() {
		if e.Host == host {
			return
		}
	}
	t.Errorf("no refusal of %s in the event log:\n%s", host, r)
}
