package sandbox

import (
	"errors"
	"fmt"

	"github.com/moat-sandbox/moat/internal/ignorefile"
	"github.com/moat-sandbox/moat/policy"
)

// ignoreLimit bounds the walk that looks for ignore files in the workspace.
const ignoreLimit = 200000

// ignoreRules reads the policy's ignore files (.moatignore, and the others the
// config names) from the root of the workspace's git work tree down, and returns
// the paths they match, to hide and keep read-only, plus the ignore files
// themselves, to keep read-only. The walk reads directories through dirs (nil: none).
func ignoreRules(pol *policy.Policy, dirs *dirCache) (denyRead, denyWrite []policy.Rule, err error) {
	if len(pol.IgnoreFiles) == 0 {
		return nil, nil, nil
	}
	var names []string
	for _, f := range pol.IgnoreFiles {
		names = append(names, f.Name)
	}
	root := ignorefile.WorkTreeRoot(pol.Cwd)
	ms, files, err := ignorefile.WalkWith(root, names, ignoreLimit, dirs.readDir)
	if errors.Is(err, ignorefile.ErrTooMany) {
		return nil, nil, &SetupError{Stage: "policy", Err: fmt.Errorf("ignore files: %w", err),
			HintText: "run moat from a smaller directory; moat can't tell which paths ignore files hide beyond that many entries"}
	}
	if err != nil {
		return nil, nil, &SetupError{Stage: "policy", Err: fmt.Errorf("ignore files: %w", err)}
	}
	denyRead, denyWrite = ignorefile.Rules(ms)
	for _, f := range files {
		denyWrite = append(denyWrite, policy.Rule{Path: f.Path, Origin: "ignore file (kept read-only so the sandbox can't loosen it)"})
	}
	return denyRead, denyWrite, nil
}
