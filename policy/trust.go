package policy

import (
	"fmt"
	"path/filepath"
	"sort"
)

// A project's .moat.jsonc comes with the repository, which may be hostile. It
// may tighten the policy freely; it may widen it only when the user config
// trusts that exact file: its absolute path and the SHA-256 of its bytes are in
// moat.trustedProjects. Any change to the file revokes the trust.

// widening is one way a project file could widen the policy.
type widening struct {
	key  string // key path of the setting
	what string // what it does, completing "... widens the policy: it ..."
	pos  Pos
}

// userOnlyKeys may appear only in the user config, trusted project or not.
var userOnlyKeys = []struct {
	key, why, hint string
	set            func(s *Settings) bool
}{
	{"moat.trustedProjects", "a project file cannot trust itself or another project",
		"remove it; trusted projects are listed in the user config",
		func(s *Settings) bool { return len(s.Moat.TrustedProjects) > 0 }},
	{"moat.profiles", "profiles are defined in the user config",
		"move the profile to the user config; a trusted project may then select it with moat.defaultProfiles",
		func(s *Settings) bool { return len(s.Moat.Profiles) > 0 }},
}

// keyPos is where key is written in s; settings built without Parse have no
// positions, only the key.
func keyPos(s *Settings, key string) (Pos, bool) {
	pos, ok := s.keys[key]
	if !ok {
		pos = Pos{Key: key}
	}
	return pos, ok
}

// checkProject reports whether the project file is trusted, and fails if it
// uses a user-only key, or widens the policy without being trusted.
func checkProject(l Layers, path, userCfg string) (bool, error) {
	proj := l.Project
	for _, k := range userOnlyKeys {
		if pos, written := keyPos(proj, k.key); written || k.set(proj) {
			return false, &Error{File: proj.File, Line: pos.Line, Col: pos.Col, Key: k.key,
				Err: errf(ErrUntrusted, "not allowed in a project file: %s", k.why), HintText: k.hint}
		}
	}
	var stale *TrustedProject
	if l.User != nil {
		for i, tp := range l.User.Moat.TrustedProjects {
			if tp.Path != filepath.Clean(path) {
				continue
			}
			if tp.SHA256 == proj.SHA256 {
				return true, nil
			}
			stale = &l.User.Moat.TrustedProjects[i]
		}
	}
	depth := defaultProtectedDepth
	if l.User != nil && l.User.MandatoryDenySearchDepth != 0 {
		depth = l.User.MandatoryDenySearchDepth
	}
	w := widenings(proj, depth)
	if len(w) == 0 {
		return false, nil
	}
	first := w[0]
	return false, &Error{File: proj.File, Line: first.pos.Line, Col: first.pos.Col, Key: first.key,
		Err:      errf(ErrUntrusted, "this project file is not trusted, so it may only tighten the policy, and %s widens it: %s", first.key, first.what),
		HintText: trustHint(path, proj.SHA256, userCfg, first.key, stale)}
}

// wideningKeys are the settings that widen the policy, each with what it does
// and whether a file uses it. credentials.envVars with mode "mask" and a smaller
// mandatoryDenySearchDepth are checked in widenings.
var wideningKeys = []struct {
	key, what string
	set       func(s *Settings) bool
}{
	{"filesystem.allowRead", "it re-opens denied paths for reading", func(s *Settings) bool { return len(s.Filesystem.AllowRead) > 0 }},
	{"filesystem.allowWrite", "it makes paths writable", func(s *Settings) bool { return len(s.Filesystem.AllowWrite) > 0 }},
	{"network.allowedDomains", "it lets the sandbox reach hosts", func(s *Settings) bool { return len(s.Network.AllowedDomains) > 0 }},
	{"network.allowUnixSockets", "it lets the sandbox connect to host sockets", func(s *Settings) bool { return len(s.Network.AllowUnixSockets) > 0 }},
	{"network.allowAllUnixSockets", "it lets the sandbox connect to every host socket", func(s *Settings) bool { return s.Network.AllowAllUnixSockets }},
	{"network.allowLocalBinding", "it lets the sandbox listen on ports", func(s *Settings) bool { return s.Network.AllowLocalBinding }},
	{"credentials.allowPlaintextInject", "it sends credentials over plain HTTP", func(s *Settings) bool { return s.Credentials.AllowPlaintextInject }},
	{"ignoreViolations", "it hides violations from the report", func(s *Settings) bool { return len(s.IgnoreViolations) > 0 }},
	{"moat.unprotect", "it makes protected paths writable", func(s *Settings) bool { return len(s.Moat.Unprotect) > 0 }},
	{"moat.allowSecrets", "it makes credential stores readable", func(s *Settings) bool { return len(s.Moat.AllowSecrets) > 0 }},
	{"moat.createDirs", "it creates directories in your home directory", func(s *Settings) bool { return len(s.Moat.CreateDirs) > 0 }},
	{"moat.passEnv", "it passes secret-looking environment variables", func(s *Settings) bool { return len(s.Moat.PassEnv) > 0 }},
	{"moat.defaultProfiles", "profiles add writable paths, hosts and variables", func(s *Settings) bool { return len(s.Moat.DefaultProfiles) > 0 }},
	{"moat.allowUnscopedSignals", "it lets the sandbox signal your other processes on kernels without Landlock scoping", func(s *Settings) bool { return s.Moat.AllowUnscopedSignals }},
}

// widenings lists the settings of a project file that widen the policy, in
// the order they appear in the file.
func widenings(s *Settings, depth int) []widening {
	var out []widening
	for _, k := range wideningKeys {
		if k.set(s) {
			pos, _ := keyPos(s, k.key)
			out = append(out, widening{k.key, k.what, pos})
		}
	}
	for _, ev := range s.Credentials.EnvVars {
		if ev.Mode == ModeMask {
			out = append(out, widening{ev.Key, "mode \"mask\" lets the network layer use the credential; only \"deny\" tightens", ev.Pos})
		}
	}
	if pos, _ := keyPos(s, "mandatoryDenySearchDepth"); s.MandatoryDenySearchDepth != 0 && s.MandatoryDenySearchDepth < depth {
		out = append(out, widening{"mandatoryDenySearchDepth", fmt.Sprintf("it looks for protected paths less deep than %d levels", depth), pos})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].pos, out[j].pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	return out
}

// trustHint says exactly how to trust the project file, or how to do without.
func trustHint(path, sum, userCfg, key string, stale *TrustedProject) string {
	if userCfg == "" {
		userCfg = "your user config (~/.config/moat/config.jsonc)"
	}
	entry := fmt.Sprintf(`{"path": %q, "sha256": %q}`, path, sum)
	if !filepath.IsAbs(path) {
		return fmt.Sprintf("remove %s from the project file; a project file can be trusted only by its absolute path", key)
	}
	var first string
	if stale != nil {
		first = fmt.Sprintf("the file changed since you trusted it (%s:%d has sha256 %s); review the change, then update that entry to:",
			userCfg, stale.Line, stale.SHA256)
	} else {
		first = fmt.Sprintf("if you trust this file as it is now, add this entry to \"moat\": {\"trustedProjects\": [...]} in %s:", userCfg)
	}
	return first + "\n  " + entry + "\n" +
		fmt.Sprintf("any change to the file revokes the trust; or remove %s from the project file", key)
}
