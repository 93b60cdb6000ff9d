package corpus_test

import (
	"github.com/moat-sandbox/moat/internal/testmoat"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolchainProfiles fetches through a registry with a toolchain profile and
// its registry profile, the tools' caches at their default places in the home
// directory (present, as after earlier use): the download, the lock or sum
// file in the workspace and the cache entries must all land on the host.
func TestToolchainProfiles(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		reg := goProxy()
		if reg.skip != "" {
			t.Skip(reg.skip)
		}
		b := newBox(t)
		b.git("init", "-q")
		pr := compileProfile(t, b, "go")
		makeStateDirs(t, pr.allowWrite)
		writeFile(t, filepath.Join(b.ws, "go.mod"), "module example.com/fetch\n\ngo 1.22\n")
		writeFile(t, filepath.Join(b.ws, "main.go"), "package main\n\nimport \"github.com/google/go-cmp/cmp\"\n\n"+
			"func main() { println(cmp.Equal(1, 1)) }\n")
		// No go.sum: go mod tidy checks the new module against the checksum
		// database, whose cache (~/go/pkg/sumdb) the go profile makes writable.
		r := b.run(opts{
			argv:  []string{goBin(), "mod", "tidy"},
			flags: []string{"--profile", "go", "--profile", "go-registry", "--allow-net", reg.host},
			env:   []string{"GOPROXY=" + reg.url, "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local"},
		})
		if r.code != 0 {
			t.Fatalf("go mod tidy under --profile go --profile go-registry:\n%s", r)
		}
		wantEqual(t, "go.sum", testmoat.ReadFile(t, filepath.Join(b.ws, "go.sum")), depSum)
		zip := filepath.Join(b.home, "go/pkg/mod/cache/download", depModule, "@v", depVersion+".zip")
		if !testmoat.Exists(zip) {
			t.Errorf("no %s on the host", zip)
		}
		if entries, _ := os.ReadDir(filepath.Join(b.home, "go/pkg/sumdb")); len(entries) == 0 {
			t.Errorf("go verified %s against the checksum database, yet ~/go/pkg/sumdb is empty on the host", depModule)
		}
	})

	t.Run("node", func(t *testing.T) {
		t.Parallel()
		reg := npmRegistry()
		if reg.skip != "" {
			t.Skip(reg.skip)
		}
		b := newBox(t)
		b.git("init", "-q")
		pr := compileProfile(t, b, "node")
		makeStateDirs(t, pr.allowWrite)
		// npm's cache is ~/.npm, as without moat.
		r := b.run(opts{
			script: `npm install --no-audit --no-fund --no-update-notifier --registry "$NPM_REGISTRY" ` + npmPackage + "@" + npmVersion,
			flags:  []string{"--profile", "node", "--profile", "node-registry", "--allow-net", reg.host},
			env:    []string{"NPM_REGISTRY=" + reg.url},
		})
		if r.code != 0 {
			t.Fatalf("npm install under --profile node --profile node-registry:\n%s", r)
		}
		wantContains(t, "node_modules/"+npmPackage+"/package.json",
			testmoat.ReadFile(t, filepath.Join(b.ws, "node_modules", npmPackage, "package.json")), `"version": "`+npmVersion+`"`)
		var cached int
		_ = filepath.WalkDir(filepath.Join(b.home, ".npm", "_cacache"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.Contains(p, "content-v2") {
				cached++
			}
			return nil
		})
		if cached == 0 {
			t.Errorf("npm cached nothing in ~/.npm/_cacache on the host:\n%s", r)
		}
	})
}
