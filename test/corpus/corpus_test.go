package corpus_test

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"github.com/moat-sandbox/moat/internal/testmoat"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The module the Go cases fetch through the module proxy and then build offline:
// small, without dependencies (the network suite uses it too).
const (
	depModule, depVersion = "github.com/google/go-cmp", "v0.7.0"
	depSum                = "github.com/google/go-cmp v0.7.0 h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8=\n" +
		"github.com/google/go-cmp v0.7.0/go.mod h1:pXiqmnSA92OHEEa9HXL2W4E7lf9JzCmGVUdgjX3N/iU=\n"
	npmPackage, npmVersion = "is-number", "7.0.0"
)

// project is the scratch repository every corpus command runs in, as an agent's
// session would: committed on the host first, then changed only from inside.
var project = map[string]string{
	"README.md": "# corpus project\n\nneedle in the readme\n",
	".gitignore": strings.Join([]string{".gocache/", ".modcache/", ".npm-cache/", "node_modules/", "bin/", "build/",
		"dist/", "unpacked/", ".worktrees/", "clones/", "vendor/", ".venv/", "lib/", "__pycache__/", "out/", ""}, "\n"),
	"docs/guide.md": "The colour of the sandbox.\nAnother colour line.\nneedle in the guide\n",
	"src/go.mod":    "module example.com/corpus\n\ngo 1.22\n",
	"src/main.go": "package main\n\nimport \"fmt\"\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n\n" +
		"func main() { fmt.Println(\"sum\", Add(2, 3)) }\n",
	"src/main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n",
	// A printf mistake for go vet to find: proof that vet ran.
	"src/vetme/vetme.go": "package vetme\n\nimport \"fmt\"\n\n// Say prints.\nfunc Say() { fmt.Printf(\"%d\\n\", \"needle\") }\n",
	"src/ugly/ugly.go":   "package ugly\n\n// Ugly is badly formatted.\nfunc   Ugly( )  int {\nreturn 1}\n",
	"depmod/go.mod":      "module example.com/depmod\n\ngo 1.22\n\nrequire " + depModule + " " + depVersion + "\n",
	"depmod/go.sum":      depSum,
	"depmod/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/go-cmp/cmp\"\n)\n\n" +
		"func main() { fmt.Println(\"equal\", cmp.Equal([]int{1, 2}, []int{1, 2})) }\n",
	"py/calc.py":      "def add(a, b):\n    return a + b\n",
	"py/test_calc.py": "import unittest\n\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n",
	"py/hellopkg/pyproject.toml": "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n" +
		"[project]\nname = \"hellopkg\"\nversion = \"0.1\"\n",
	"py/hellopkg/hellopkg/__init__.py": "GREETING = \"hello from a local package\"\n",
	"c/hello.c":                        "#include <stdio.h>\n\nint main(void) {\n\tprintf(\"hello from c %d\\n\", 6 * 7);\n\treturn 0;\n}\n",
	"Makefile":                         "build/lines.txt: docs/guide.md\n\tmkdir -p build\n\twc -l < docs/guide.md > build/lines.txt\n",
	"web/package.json": `{"name": "corpus-web", "version": "1.0.0", "private": true,` +
		` "scripts": {"build": "node build.js"}}` + "\n",
	"web/build.js": "const fs = require('fs');\nfs.mkdirSync('dist', {recursive: true});\n" +
		"fs.writeFileSync('dist/out.json', JSON.stringify({built: true, node: process.version.startsWith('v')}));\n",
	"served/index.txt": "served over loopback\n",
	"scratch/README":   "room for the edit and shell cases\n",
	"patches/readme.diff": "--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n # corpus project\n \n" +
		"-needle in the readme\n+needle in the readme, patched\n",
	"patches/calc.diff": "diff --git a/py/calc.py b/py/calc.py\n--- a/py/calc.py\n+++ b/py/calc.py\n@@ -1,2 +1,6 @@\n" +
		" def add(a, b):\n     return a + b\n+\n+\n+def sub(a, b):\n+    return a - b\n",
}

// corpusCase is one everyday command: it must succeed inside the sandbox, and
// check judges its effect on the host.
type corpusCase struct {
	name string
	// needs are programs the host must have, or "npm-registry" and "go-proxy"
	// (reachable; the run gets --allow-net for its host), "pip", or "case:NAME" (an
	// earlier case that must have passed).
	needs []string
	// script runs with bash -c in the project; net cases read the registry from
	// $NPM_REGISTRY or $GOPROXY.
	script string
	stdin  string
	check  func(t *testing.T, b *box, r result)
}

// TestCorpus runs the corpus in order in one project, as one agent session would;
// a later case may build on an earlier one's result (commits, branches, caches).
func TestCorpus(t *testing.T) {
	t.Parallel() // a long sequence of its own: run it beside the others
	b := newBox(t)
	for name, data := range project {
		writeFile(t, filepath.Join(b.ws, name), data)
	}
	b.git("init", "-q", "-b", "main")
	b.git("add", "-A")
	b.git("commit", "-q", "-m", "initial")

	env := []string{
		// The build cache must be writable: the default policy makes only the
		// workspace so (the go profile adds ~/.cache/go-build).
		"GOCACHE=" + filepath.Join(b.ws, ".gocache"),
		"GOMODCACHE=" + filepath.Join(b.ws, ".modcache"),
		"GOFLAGS=-modcacherw", "GOTOOLCHAIN=local", "GOPROXY=off", "GOSUMDB=off",
		"npm_config_cache=" + filepath.Join(b.ws, ".npm-cache"),
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false",
		"MOAT_CORPUS_VAR=plain value",
	}
	cases := corpus()
	if len(cases) < 40 {
		t.Fatalf("the corpus has %d cases; the issue asks for at least 40", len(cases))
	}
	seen, passed := map[string]bool{}, map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases named %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			cb := *b
			cb.t = t
			var flags, cenv []string
			for _, n := range c.needs {
				switch n {
				case "npm-registry":
					reg := npmRegistry()
					if reg.skip != "" {
						t.Skip(reg.skip)
					}
					flags = append(flags, "--allow-net", reg.host)
					cenv = append(cenv, "NPM_REGISTRY="+reg.url)
				case "go-proxy":
					reg := goProxy()
					if reg.skip != "" {
						t.Skip(reg.skip)
					}
					flags = append(flags, "--allow-net", reg.host)
					cenv = append(cenv, "GOPROXY="+reg.url)
				case "pip":
					if r := cb.host(b.ws, "python3", "-c", "import importlib.util as u, sys; sys.exit(not (u.find_spec('pip') and u.find_spec('setuptools')))"); r.code != 0 {
						t.Skip("python3 has no pip and setuptools on this host")
					}
				default:
					if dep, ok := strings.CutPrefix(n, "case:"); ok {
						if !passed[dep] {
							t.Skipf("needs the result of %s, which did not pass", dep)
						}
						continue
					}
					if !have(&cb, n) {
						t.Skipf("%s is not installed on this host", n)
					}
				}
			}
			r := cb.run(opts{script: c.script, stdin: c.stdin, flags: flags, env: append(append([]string(nil), env...), cenv...)})
			if r.code != 0 {
				t.Fatalf("failed inside the sandbox: %s\n%s", c.script, r)
			}
			c.check(t, &cb, r)
			passed[c.name] = !t.Failed()
		})
	}
}

func corpus() []corpusCase {
	return []corpusCase{
		// git: the everyday repository work, judged by the host's own git.
		{name: "git_status", needs: []string{"git"},
			script: "echo draft > draft.txt && git status --porcelain",
			check: func(t *testing.T, b *box, r result) {
				sameAsHost(t, b, r, "git", "status", "--porcelain")
				wantContains(t, "git status", r.stdout, "?? draft.txt")
			}},
		{name: "git_add_commit", needs: []string{"git"},
			script: "git add draft.txt && git commit -q -m 'add draft'",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "subject of HEAD", b.git("log", "-1", "--format=%s"), "add draft\n")
				wantEqual(t, "draft.txt in HEAD", b.git("show", "HEAD:draft.txt"), "draft\n")
				wantEqual(t, "git status", b.git("status", "--porcelain"), "")
			}},
		{name: "git_diff", needs: []string{"git"},
			script: "echo more >> draft.txt && git diff",
			check: func(t *testing.T, b *box, r result) {
				sameAsHost(t, b, r, "git", "diff")
				wantContains(t, "git diff", r.stdout, "+more")
			}},
		{name: "git_commit_all", needs: []string{"git"},
			script: "git commit -q -a -m 'more draft' && git rev-parse HEAD",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "HEAD", b.git("rev-parse", "HEAD"), r.stdout)
				wantEqual(t, "subject of HEAD", b.git("log", "-1", "--format=%s"), "more draft\n")
			}},
		{name: "git_log_show", needs: []string{"git"},
			script: "git log --format='%H %s' && git show --stat HEAD >/dev/null",
			check: func(t *testing.T, b *box, r result) {
				sameAsHost(t, b, r, "git", "log", "--format=%H %s")
				wantContains(t, "git log", r.stdout, " initial\n")
			}},
		{name: "git_checkout_b", needs: []string{"git"},
			script: "git checkout -q -b feature && echo feature > feature.txt && git add feature.txt && git commit -q -m feature",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "current branch", b.git("rev-parse", "--abbrev-ref", "HEAD"), "feature\n")
				wantEqual(t, "subject of feature", b.git("log", "-1", "--format=%s", "feature"), "feature\n")
			}},
		{name: "git_branch", needs: []string{"git"},
			script: "git checkout -q main && git branch topic && git branch --list",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "topic", b.git("rev-parse", "topic"), b.git("rev-parse", "main"))
				wantEqual(t, "current branch", b.git("rev-parse", "--abbrev-ref", "HEAD"), "main\n")
				sameAsHost(t, b, r, "git", "branch", "--list")
			}},
		{name: "git_merge", needs: []string{"git"},
			script: "git merge -q --no-ff -m 'merge feature' feature",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "second parent of the merge", b.git("rev-parse", "HEAD^2"), b.git("rev-parse", "feature"))
				wantEqual(t, "feature.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "feature.txt")), "feature\n")
			}},
		{name: "git_rebase", needs: []string{"git"},
			script: "git checkout -q topic && echo topic > topic.txt && git add topic.txt && git commit -q -m topic && git rebase -q main",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "parent of topic", b.git("rev-parse", "topic^"), b.git("rev-parse", "main"))
				wantEqual(t, "topic.txt in topic", b.git("show", "topic:topic.txt"), "topic\n")
				wantEqual(t, "current branch", b.git("rev-parse", "--abbrev-ref", "HEAD"), "topic\n")
			}},
		{name: "git_stash", needs: []string{"git"},
			script: "git checkout -q main && echo wip >> draft.txt && git stash -q && git stash list",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "stash entries", strconv.Itoa(strings.Count(b.git("stash", "list"), "\n")), "1")
				wantEqual(t, "git status", b.git("status", "--porcelain"), "")
				wantEqual(t, "draft.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "draft.txt")), "draft\nmore\n")
			}},
		{name: "git_stash_pop_restore", needs: []string{"git"},
			script: "git stash pop -q && grep -q wip draft.txt && git restore draft.txt",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "git stash list", b.git("stash", "list"), "")
				wantEqual(t, "git status", b.git("status", "--porcelain"), "")
			}},
		{name: "git_tag", needs: []string{"git"},
			script: "git tag -a v0.1.0 -m 'release 0.1.0' && git describe",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "type of v0.1.0", b.git("cat-file", "-t", "v0.1.0"), "tag\n")
				wantEqual(t, "git describe", b.git("describe"), r.stdout)
			}},
		{name: "git_worktree_add", needs: []string{"git"},
			script: "git worktree add -q .worktrees/hotfix -b hotfix && cd .worktrees/hotfix && " +
				"echo fix > fix.txt && git add fix.txt && git commit -q -m hotfix",
			check: func(t *testing.T, b *box, r result) {
				wantContains(t, "git worktree list", b.git("worktree", "list", "--porcelain"),
					"worktree "+filepath.Join(b.ws, ".worktrees/hotfix")+"\n")
				wantEqual(t, "subject of hotfix", b.git("log", "-1", "--format=%s", "hotfix"), "hotfix\n")
				wantEqual(t, "fix.txt", testmoat.ReadFile(t, filepath.Join(b.ws, ".worktrees/hotfix/fix.txt")), "fix\n")
			}},
		{name: "git_cherry_pick", needs: []string{"git"},
			script: "git cherry-pick hotfix >/dev/null",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "subject of main", b.git("log", "-1", "--format=%s", "main"), "hotfix\n")
				wantEqual(t, "fix.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "fix.txt")), "fix\n")
			}},
		{name: "git_apply", needs: []string{"git"},
			script: "git apply --check patches/calc.diff && git apply patches/calc.diff && git diff --stat",
			check: func(t *testing.T, b *box, r result) {
				wantContains(t, "py/calc.py", testmoat.ReadFile(t, filepath.Join(b.ws, "py/calc.py")), "def sub(a, b):")
				wantContains(t, "git diff --stat", b.git("diff", "--stat"), "py/calc.py")
			}},
		{name: "git_grep", needs: []string{"git"},
			script: "git grep -n needle -- README.md docs",
			check: func(t *testing.T, b *box, r result) {
				sameAsHost(t, b, r, "git", "grep", "-n", "needle", "--", "README.md", "docs")
				wantContains(t, "git grep", r.stdout, "docs/guide.md:3:needle in the guide")
			}},
		{name: "git_init_new_repo", needs: []string{"git"},
			script: "git init -q -b main vendor/lib && git -C vendor/lib commit -q --allow-empty -m 'lib init'",
			check: func(t *testing.T, b *box, r result) {
				out := b.host(filepath.Join(b.ws, "vendor/lib"), "git", "log", "--format=%s")
				wantEqual(t, "log of the new repository", out.stdout, "lib init\n")
			}},
		{name: "git_clone_local", needs: []string{"git"},
			script: `git clone -q "$PWD" clones/copy && git -C clones/copy log -1 --format=%H`,
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "HEAD of the clone", r.stdout, b.git("rev-parse", "main"))
				wantEqual(t, "README.md of the clone", testmoat.ReadFile(t, filepath.Join(b.ws, "clones/copy/README.md")),
					testmoat.ReadFile(t, filepath.Join(b.ws, "README.md")))
			}},

		// Builds and tests. go test first: it compiles most of what go build needs.
		{name: "go_test", needs: []string{"go"},
			script: "mkdir -p out && cd src && go test -count=1 -json . > ../out/test.json",
			check: func(t *testing.T, b *box, r result) {
				events := testmoat.ReadFile(t, filepath.Join(b.ws, "out/test.json"))
				wantContains(t, "out/test.json", events, `"Action":"pass","Package":"example.com/corpus","Test":"TestAdd"`)
			}},
		{name: "go_build", needs: []string{"go"},
			script: "cd src && go build -o ../bin/app . && ../bin/app",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, "sum 5\n")
				wantEqual(t, "bin/app run on the host", b.host(b.ws, filepath.Join(b.ws, "bin/app")).stdout, "sum 5\n")
			}},
		{name: "go_vet", needs: []string{"go"},
			script: "mkdir -p out && cd src && go vet . && ! go vet ./vetme 2> ../out/vet.txt",
			check: func(t *testing.T, b *box, r result) {
				wantContains(t, "out/vet.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "out/vet.txt")), "Printf format %d has arg")
			}},
		{name: "gofmt", needs: []string{"go"},
			script: "gofmt -l src/ugly && gofmt -w src/ugly/ugly.go",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "src/ugly/ugly.go", testmoat.ReadFile(t, filepath.Join(b.ws, "src/ugly/ugly.go")),
					"package ugly\n\n// Ugly is badly formatted.\nfunc Ugly() int {\n\treturn 1\n}\n")
			}},
		{name: "go_mod_download", needs: []string{"go", "go-proxy"},
			script: "cd depmod && go mod download " + depModule,
			check: func(t *testing.T, b *box, r result) {
				zip := filepath.Join(b.ws, ".modcache/cache/download", depModule, "@v", depVersion+".zip")
				if !testmoat.Exists(zip) {
					t.Errorf("no %s on the host\n%s", zip, r)
				}
			}},
		{name: "go_build_offline_with_dep", needs: []string{"go", "case:go_mod_download"},
			script: "cd depmod && go build -o ../bin/depdemo . && ../bin/depdemo",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, "equal true\n")
				wantEqual(t, "bin/depdemo run on the host", b.host(b.ws, filepath.Join(b.ws, "bin/depdemo")).stdout, "equal true\n")
			}},
		{name: "python_py_compile", needs: []string{"python3"},
			script: "python3 -m py_compile py/calc.py && ls py/__pycache__",
			check: func(t *testing.T, b *box, r result) {
				pyc, _ := filepath.Glob(filepath.Join(b.ws, "py/__pycache__/calc.*.pyc"))
				if len(pyc) != 1 {
					t.Errorf("py/__pycache__/calc.*.pyc on the host: %q", pyc)
				}
			}},
		{name: "python_unittest", needs: []string{"python3"},
			script: "mkdir -p out && cd py && python3 -m unittest -v 2> ../out/unittest.log",
			check: func(t *testing.T, b *box, r result) {
				log := testmoat.ReadFile(t, filepath.Join(b.ws, "out/unittest.log"))
				wantContains(t, "out/unittest.log", log, "test_add (test_calc.TestCalc")
				wantContains(t, "out/unittest.log", log, "\nOK\n")
			}},
		{name: "python_venv", needs: []string{"python3"},
			script: "python3 -m venv --without-pip .venv && .venv/bin/python -c 'import sys; print(sys.prefix)'",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "sys.prefix inside", r.stdout, filepath.Join(b.ws, ".venv")+"\n")
				wantContains(t, ".venv/pyvenv.cfg", testmoat.ReadFile(t, filepath.Join(b.ws, ".venv/pyvenv.cfg")), "home = ")
			}},
		{name: "pip_install_local", needs: []string{"python3", "pip"},
			script: "python3 -m pip install -q --no-index --no-build-isolation --disable-pip-version-check --target lib ./py/hellopkg && " +
				"PYTHONPATH=lib python3 -c 'import hellopkg; print(hellopkg.GREETING)'",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, "hello from a local package\n")
				wantContains(t, "lib/hellopkg/__init__.py", testmoat.ReadFile(t, filepath.Join(b.ws, "lib/hellopkg/__init__.py")), "GREETING")
			}},
		{name: "cc_build", needs: []string{"cc"},
			script: "mkdir -p bin && cc -O2 -o bin/hello c/hello.c && ./bin/hello",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, "hello from c 42\n")
				wantEqual(t, "bin/hello run on the host", b.host(b.ws, filepath.Join(b.ws, "bin/hello")).stdout, "hello from c 42\n")
			}},
		{name: "make", needs: []string{"make"},
			script: "make -s && make -q",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "build/lines.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "build/lines.txt")), "3\n")
			}},
		{name: "node_script", needs: []string{"node"},
			script: `node -e "require('fs').writeFileSync('out/node.json', JSON.stringify({sum: 2 + 3}))"`,
			check: func(t *testing.T, b *box, r result) {
				var v struct{ Sum int }
				if err := json.Unmarshal([]byte(testmoat.ReadFile(t, filepath.Join(b.ws, "out/node.json"))), &v); err != nil || v.Sum != 5 {
					t.Errorf("out/node.json: %+v, %v", v, err)
				}
			}},
		{name: "npm_run", needs: []string{"npm"},
			script: "cd web && npm run -s build",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "web/dist/out.json", testmoat.ReadFile(t, filepath.Join(b.ws, "web/dist/out.json")), `{"built":true,"node":true}`)
			}},
		{name: "npm_install", needs: []string{"npm", "node", "npm-registry"},
			script: `cd web && npm install -s --registry "$NPM_REGISTRY" ` + npmPackage + "@" + npmVersion + ` && ` +
				`node -e "console.log(require('` + npmPackage + `')(5))"`,
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, "true\n")
				wantContains(t, "web/node_modules/"+npmPackage+"/package.json",
					testmoat.ReadFile(t, filepath.Join(b.ws, "web/node_modules", npmPackage, "package.json")), `"version": "`+npmVersion+`"`)
				wantContains(t, "web/package.json", testmoat.ReadFile(t, filepath.Join(b.ws, "web/package.json")), `"`+npmPackage+`"`)
			}},

		// Search.
		{name: "grep_r", needs: []string{"grep"},
			script: "grep -rn needle README.md docs src",
			check: func(t *testing.T, b *box, r result) {
				sameAsHost(t, b, r, "grep", "-rn", "needle", "README.md", "docs", "src")
				wantContains(t, "grep -r", r.stdout, "src/vetme/vetme.go:")
			}},
		{name: "find", needs: []string{"find"},
			script: "find src docs py -name '*.go' -o -name '*.py' -o -name '*.md' | sort",
			check: func(t *testing.T, b *box, r result) {
				out := b.host(b.ws, "sh", "-c", "find src docs py -name '*.go' -o -name '*.py' -o -name '*.md' | sort")
				wantEqual(t, "find", r.stdout, out.stdout)
				wantContains(t, "find", r.stdout, "src/main_test.go\n")
			}},
		{name: "find_xargs", needs: []string{"find", "xargs"},
			script: "find docs src -name '*.md' -print0 | xargs -0 wc -l",
			check: func(t *testing.T, b *box, r result) {
				wantContains(t, "wc -l", r.stdout, "3 docs/guide.md")
			}},
		{name: "ripgrep", needs: []string{"rg"},
			script: "rg -n --sort path needle README.md docs",
			check: func(t *testing.T, b *box, r result) {
				sameAsHost(t, b, r, "rg", "-n", "--sort", "path", "needle", "README.md", "docs")
			}},
		{name: "ls_stat", needs: []string{"ls", "stat"},
			script: "ls -la docs >/dev/null && stat -c '%s %n' README.md docs/guide.md",
			check: func(t *testing.T, b *box, r result) {
				sameAsHost(t, b, r, "stat", "-c", "%s %n", "README.md", "docs/guide.md")
			}},

		// Edits.
		{name: "sed_i", needs: []string{"sed"},
			script: "sed -i 's/colour/color/g' docs/guide.md",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "docs/guide.md", testmoat.ReadFile(t, filepath.Join(b.ws, "docs/guide.md")),
					"The color of the sandbox.\nAnother color line.\nneedle in the guide\n")
			}},
		{name: "patch", needs: []string{"patch"},
			script: "patch -s -p1 < patches/readme.diff",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "README.md", testmoat.ReadFile(t, filepath.Join(b.ws, "README.md")), "# corpus project\n\nneedle in the readme, patched\n")
			}},
		{name: "perl_pi", needs: []string{"perl"},
			script: "perl -pi -e 's/^Another/One more/' docs/guide.md",
			check: func(t *testing.T, b *box, r result) {
				wantContains(t, "docs/guide.md", testmoat.ReadFile(t, filepath.Join(b.ws, "docs/guide.md")), "One more color line.\n")
			}},
		{name: "mkdir_touch", needs: []string{"mkdir", "touch"},
			script: "mkdir -p scratch/a/b/c && touch scratch/a/b/c/.keep scratch/marker",
			check: func(t *testing.T, b *box, r result) {
				for _, p := range []string{"scratch/a/b/c/.keep", "scratch/marker"} {
					if !testmoat.Exists(filepath.Join(b.ws, p)) {
						t.Errorf("%s is not on the host", p)
					}
				}
			}},
		{name: "cp_mv_rm", needs: []string{"cp", "mv", "rm"},
			script: "cp README.md scratch/readme.copy && mv scratch/readme.copy scratch/a/readme.moved && " +
				"rm scratch/marker && rm -r scratch/a/b && cp -r docs scratch/docs-copy",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/a/readme.moved", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/a/readme.moved")),
					testmoat.ReadFile(t, filepath.Join(b.ws, "README.md")))
				for _, gone := range []string{"scratch/marker", "scratch/a/b", "scratch/readme.copy"} {
					if testmoat.Exists(filepath.Join(b.ws, gone)) {
						t.Errorf("%s is still on the host", gone)
					}
				}
				wantEqual(t, "scratch/docs-copy/guide.md", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/docs-copy/guide.md")),
					testmoat.ReadFile(t, filepath.Join(b.ws, "docs/guide.md")))
			}},
		{name: "mktemp", needs: []string{"mktemp"},
			script: `t=$(mktemp) && echo tmpdata > "$t" && cp "$t" scratch/from-tmp.txt && echo "$t" && ` +
				`d=$(mktemp -d -p scratch) && echo x > "$d/f" && basename "$d"`,
			check: func(t *testing.T, b *box, r result) {
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				if len(lines) != 2 {
					t.Fatalf("want the temp file and the temp dir:\n%s", r)
				}
				wantEqual(t, "scratch/from-tmp.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/from-tmp.txt")), "tmpdata\n")
				wantEqual(t, "the temp dir's file", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch", lines[1], "f")), "x\n")
				if strings.HasPrefix(lines[0], "/tmp/") && testmoat.ReadFile(t, lines[0]) == "tmpdata\n" {
					t.Errorf("mktemp's file %s landed in the host's /tmp", lines[0])
				}
			}},
		{name: "tee", needs: []string{"tee"},
			script: "printf 'one\\ntwo\\n' | tee scratch/t1.txt scratch/t2.txt >/dev/null && echo three | tee -a scratch/t1.txt",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/t1.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/t1.txt")), "one\ntwo\nthree\n")
				wantEqual(t, "scratch/t2.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/t2.txt")), "one\ntwo\n")
			}},
		{name: "symlink", needs: []string{"ln"},
			script: "ln -s ../docs/guide.md scratch/guide-link && head -1 scratch/guide-link",
			check: func(t *testing.T, b *box, r result) {
				target, err := os.Readlink(filepath.Join(b.ws, "scratch/guide-link"))
				if err != nil || target != "../docs/guide.md" {
					t.Errorf("scratch/guide-link on the host: %q, %v", target, err)
				}
				wantEqual(t, "read through the link", r.stdout, "The color of the sandbox.\n")
			}},
		{name: "chmod_script", needs: []string{"chmod"},
			script: "printf '#!/bin/sh\\necho script ran\\n' > scratch/run.sh && chmod +x scratch/run.sh && ./scratch/run.sh",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, "script ran\n")
				if fi, err := os.Stat(filepath.Join(b.ws, "scratch/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
					t.Errorf("scratch/run.sh is not executable on the host: %v", err)
				}
			}},
		{name: "dd_truncate", needs: []string{"dd", "truncate"},
			script: "dd if=/dev/zero of=scratch/blob.bin bs=1024 count=64 2>/dev/null && truncate -s 100K scratch/blob.bin",
			check: func(t *testing.T, b *box, r result) {
				if fi, err := os.Stat(filepath.Join(b.ws, "scratch/blob.bin")); err != nil || fi.Size() != 100*1024 {
					t.Errorf("scratch/blob.bin on the host: %v, %v", fi, err)
				}
			}},

		// Archives.
		{name: "tar_create", needs: []string{"tar", "gzip"},
			script: "mkdir -p dist && tar czf dist/src.tar.gz src docs",
			check: func(t *testing.T, b *box, r result) {
				names := tarNames(t, filepath.Join(b.ws, "dist/src.tar.gz"))
				for _, want := range []string{"src/main.go", "docs/guide.md"} {
					if !names[want] {
						t.Errorf("dist/src.tar.gz lacks %s: %v", want, names)
					}
				}
			}},
		{name: "tar_extract", needs: []string{"tar", "gzip"},
			script: "mkdir -p unpacked && tar xzf dist/src.tar.gz -C unpacked",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "unpacked/src/main.go", testmoat.ReadFile(t, filepath.Join(b.ws, "unpacked/src/main.go")),
					testmoat.ReadFile(t, filepath.Join(b.ws, "src/main.go")))
			}},
		{name: "gzip_roundtrip", needs: []string{"gzip"},
			script: "gzip -k -9 docs/guide.md && mv docs/guide.md.gz dist/ && gunzip -c dist/guide.md.gz > scratch/guide.roundtrip",
			check: func(t *testing.T, b *box, r result) {
				f, err := os.Open(filepath.Join(b.ws, "dist/guide.md.gz"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				zr, err := gzip.NewReader(f)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(zr)
				guide := testmoat.ReadFile(t, filepath.Join(b.ws, "docs/guide.md"))
				wantEqual(t, "dist/guide.md.gz read on the host", string(data), guide)
				wantEqual(t, "scratch/guide.roundtrip", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/guide.roundtrip")), guide)
			}},
		{name: "zip_unzip", needs: []string{"zip", "unzip"},
			script: "zip -qr dist/docs.zip docs && unzip -q -o dist/docs.zip -d unpacked/zip",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "unpacked/zip/docs/guide.md", testmoat.ReadFile(t, filepath.Join(b.ws, "unpacked/zip/docs/guide.md")),
					testmoat.ReadFile(t, filepath.Join(b.ws, "docs/guide.md")))
			}},

		// Shell features.
		{name: "pipes", needs: []string{"seq", "grep", "wc"},
			script: "seq 1 1000 | grep 7 | sort -n | tail -1 > scratch/pipe.txt && seq 1 1000 | grep 7 | wc -l",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/pipe.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/pipe.txt")), "997\n")
				wantEqual(t, "count", strings.TrimSpace(r.stdout), "271")
			}},
		{name: "subshell", needs: []string{"basename"},
			script: "(cd docs && pwd > ../scratch/where.txt); echo $(( 6 * 7 )) > scratch/answer.txt; basename \"$(pwd)\"",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/where.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/where.txt")), filepath.Join(b.ws, "docs")+"\n")
				wantEqual(t, "scratch/answer.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/answer.txt")), "42\n")
				wantEqual(t, "basename", r.stdout, filepath.Base(b.ws)+"\n")
			}},
		{name: "heredoc", needs: []string{"cat"},
			script: "cat > scratch/literal.ini <<'EOF'\n[core]\nhome = $HOME\nEOF\ncat > scratch/expanded.ini <<EOF\nhome = $HOME\nEOF",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/literal.ini", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/literal.ini")), "[core]\nhome = $HOME\n")
				wantEqual(t, "scratch/expanded.ini", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/expanded.ini")), "home = "+b.home+"\n")
			}},
		{name: "background_wait", needs: []string{"sleep"},
			script: "(sleep 0.2; echo one > scratch/bg1.txt) & (echo two > scratch/bg2.txt) & wait; cat scratch/bg1.txt scratch/bg2.txt",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, "one\ntwo\n")
				wantEqual(t, "scratch/bg1.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/bg1.txt")), "one\n")
			}},
		{name: "bash_features", needs: []string{"bash", "sort"},
			script: "diff <(printf 'b\\na\\n' | sort) <(printf 'a\\nb\\n') && arr=(x y z) && [[ abc == a* ]] && " +
				"echo \"${#arr[@]} ${arr[-1]}\" > scratch/bash.txt",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/bash.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/bash.txt")), "3 z\n")
			}},
		{name: "exit_status_timeout", needs: []string{"timeout", "sleep"},
			script: "false || echo recovered > scratch/recovered.txt; timeout 0.2 sleep 10; echo $? > scratch/timeout.txt",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/recovered.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/recovered.txt")), "recovered\n")
				wantEqual(t, "timeout's status", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/timeout.txt")), "124\n")
			}},
		{name: "stdin", needs: []string{"wc", "tee"},
			stdin:  "a\nb\nc\n",
			script: "tee scratch/stdin.txt | wc -l",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "count", strings.TrimSpace(r.stdout), "3")
				wantEqual(t, "scratch/stdin.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/stdin.txt")), "a\nb\nc\n")
			}},
		{name: "long_output", needs: []string{"seq", "head", "yes"},
			script: "seq 1 200000 && yes 0123456789abcdef | head -c 1000000 >&2 && seq 1 200000 > scratch/long.txt",
			check: func(t *testing.T, b *box, r result) {
				if len(r.stdout) != 1288895 || !strings.HasSuffix(r.stdout, "\n199999\n200000\n") {
					t.Errorf("stdout: %d bytes ending %q, want 1288895 ending in 200000", len(r.stdout), r.stdout[max(0, len(r.stdout)-20):])
				}
				if len(r.stderr) != 1000000 {
					t.Errorf("stderr: %d bytes, want 1000000", len(r.stderr))
				}
				wantEqual(t, "scratch/long.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/long.txt")), r.stdout)
			}},
		{name: "env_inspection", needs: []string{"env", "sort"},
			script: "env | sort > scratch/env.txt && printenv HOME && echo \"$MOAT_CORPUS_VAR\"",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "output inside", r.stdout, b.home+"\nplain value\n")
				env := testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/env.txt"))
				for _, want := range []string{"HOME=" + b.home + "\n", "PWD=" + b.ws + "\n", "MOAT_CORPUS_VAR=plain value\n", "HTTPS_PROXY="} {
					wantContains(t, "scratch/env.txt", env, want)
				}
			}},
		{name: "identity", needs: []string{"id", "uname"},
			script: "id -u > scratch/uid.txt && uname -s",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "id -u inside", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/uid.txt")), strconv.Itoa(os.Getuid())+"\n")
				wantEqual(t, "uname -s", r.stdout, "Linux\n")
			}},
		{name: "process_tools", needs: []string{"ps", "sleep"},
			// Poll until the child has exec'd sleep: synchronisation, not a verdict.
			script: "sleep 30 & pid=$!; for i in $(seq 100); do [ \"$(ps -o comm= -p $pid)\" = sleep ] && break; sleep 0.05; done; " +
				"ps -o comm= -p $pid > scratch/ps.txt; kill $pid; wait $pid; echo $? > scratch/killed.txt",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/ps.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/ps.txt")), "sleep\n")
				wantEqual(t, "status of the killed sleep", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/killed.txt")), "143\n")
			}},
		{name: "loopback_server", needs: []string{"python3", "curl"},
			script: "python3 -m http.server 18765 --bind 127.0.0.1 --directory served >/dev/null 2>&1 & srv=$!; " +
				"for i in $(seq 100); do curl -fsS -o scratch/fetched.txt http://127.0.0.1:18765/index.txt 2>/dev/null && break; sleep 0.1; done; " +
				"kill $srv; cat scratch/fetched.txt",
			check: func(t *testing.T, b *box, r result) {
				wantEqual(t, "scratch/fetched.txt", testmoat.ReadFile(t, filepath.Join(b.ws, "scratch/fetched.txt")), "served over loopback\n")
			}},
	}
}

// sameAsHost fails unless the sandboxed command printed what the same command
// prints on the host, in the workspace, now.
func sameAsHost(t *testing.T, b *box, r result, name string, args ...string) {
	t.Helper()
	h := b.host(b.ws, name, args...)
	if h.code != 0 {
		t.Fatalf("host %s %q:\n%s", name, args, h)
	}
	if r.stdout != h.stdout {
		t.Errorf("%s %s printed inside:\n%s\non the host:\n%s", name, strings.Join(args, " "), clip(r.stdout), clip(h.stdout))
	}
}

func wantEqual(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %q, want %q", what, clip(got), clip(want))
	}
}

func wantContains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s: %q lacks %q", what, clip(got), want)
	}
}

// tarNames lists a .tar.gz on the host.
func tarNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = true
	}
}
