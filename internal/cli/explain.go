package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/internal/ignorefile"
	"github.com/moat-sandbox/moat/policy"
)

const explainUsage = "usage: moat explain [flags] PATH|HOST[:PORT]|env:NAME..."

func explainCmd(args []string, std stdio) error {
	fset := flag.NewFlagSet("moat explain", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	var pf policyFlags
	pf.register(fset)
	asJSON := fset.Bool("json", false, "print the verdicts as JSON lines")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(std.out, explainUsage)
			fmt.Fprintln(std.out, "\nSays whether a command in the sandbox could read and write PATH, connect to")
			fmt.Fprintln(std.out, "HOST (port 443 unless given), or see the environment variable NAME (env:NAME, or")
			fmt.Fprintln(std.out, "'$NAME' quoted from the shell); which rule")
			fmt.Fprintln(std.out, "decides, and how to change it. Takes the same policy flags as 'moat run'.")
			fmt.Fprintln(std.out, "An argument with a '/' or a leading '.', or one that names an existing file, is a path;")
			fmt.Fprintln(std.out, "one with a ':' or another '.' is a host.")
			fmt.Fprintln(std.out, "\nflags:")
			fset.SetOutput(std.out)
			fset.PrintDefaults()
			return nil
		}
		return usageError{fmt.Errorf("explain: %w", err), explainUsage}
	}
	if fset.NArg() == 0 {
		return usageError{errors.New("explain: nothing to explain"), explainUsage}
	}
	lp, err := pf.load()
	if err != nil {
		return err
	}
	pol := lp.Policy
	var ign *ignored // walked once, on the first path
	for _, arg := range fset.Args() {
		var v any
		switch kind, target := classify(arg, pol.Cwd, pol.Home); kind {
		case "env":
			v = pol.ExplainEnv(target)
		case "host":
			host, port, err := splitHostPort(target)
			if err != nil {
				return usageError{fmt.Errorf("explain: %w", err), `write a host as "example.com", "example.com:8080" or "[::1]:8080"`}
			}
			v = pol.ExplainHost(host, port)
		default:
			if ign == nil {
				ign = &ignored{}
				ign.matches, ign.err = ignoredPaths(pol)
			}
			pv := explainPath(pol, target, ign)
			suggestProfiles(pf, pol, &pv, ign)
			v = pv
		}
		if *asJSON {
			if err := json.NewEncoder(std.out).Encode(v); err != nil {
				return err
			}
			continue
		}
		writeVerdict(std.out, pol, v)
	}
	return nil
}

// classify says whether arg is a path, a host or an environment variable ($NAME),
// and returns it absolute for a path.
func classify(arg, cwd, home string) (kind, target string) {
	for _, prefix := range []string{"$", "env:"} {
		if name, ok := strings.CutPrefix(arg, prefix); ok && name != "" {
			return "env", name
		}
	}
	abs := arg
	switch {
	case arg == "~":
		abs = home
	case strings.HasPrefix(arg, "~/"):
		abs = filepath.Join(home, arg[2:])
	case !filepath.IsAbs(arg):
		abs = filepath.Join(cwd, arg)
	}
	switch {
	case strings.ContainsRune(arg, '/') || strings.HasPrefix(arg, ".") || arg == "~":
		return "path", filepath.Clean(abs) // host names never start with "."
	case strings.ContainsAny(arg, ":["):
		return "host", arg
	}
	if _, err := os.Lstat(abs); err == nil {
		return "path", filepath.Clean(abs)
	}
	if strings.Contains(arg, ".") || arg == "localhost" {
		return "host", arg
	}
	return "path", filepath.Clean(abs)
}

// splitHostPort splits "host", "host:port", "[v6]:port" or a bare IPv6 address;
// the port defaults to 443.
func splitHostPort(s string) (string, int, error) {
	host, portStr := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%q has an unclosed \"[\"", s)
		}
		host, portStr = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if s[end+1:] != "" && !strings.HasPrefix(s[end+1:], ":") {
			return "", 0, fmt.Errorf("%q has text after \"]\"", s)
		}
	case strings.Count(s, ":") == 1:
		i := strings.IndexByte(s, ':')
		host, portStr = s[:i], s[i+1:]
	case strings.Count(s, ":") > 1:
		if _, err := netip.ParseAddr(s); err != nil {
			return "", 0, fmt.Errorf("%q is not a host", s)
		}
	}
	port := 443
	if portStr != "" {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 {
			return "", 0, fmt.Errorf("port %q is not a number from 1 to 65535", portStr)
		}
		port = p
	}
	if host == "" {
		return "", 0, fmt.Errorf("%q has no host", s)
	}
	return host, port, nil
}

// ignored is what the ignore files matched, walked once per command.
type ignored struct {
	matches []ignorefile.Match
	err     error
}

// explainPath resolves symlinks as the sandbox does (the path's existing part,
// and every rule's path) and adds what the ignore files match.
func explainPath(pol *policy.Policy, path string, ign *ignored) policy.PathVerdict {
	real := resolveExisting(path)
	q := *pol
	dr, dw := ignorefile.Rules(ign.matches)
	q.DenyRead = append(append([]policy.Rule(nil), pol.DenyRead...), dr...)
	q.DenyWrite = append(append([]policy.Rule(nil), pol.DenyWrite...), dw...)
	v := q.Resolve(filepath.EvalSymlinks).ExplainPath(real)
	v.Path = path
	if real != path {
		v.Notes = append(v.Notes, "symlinks resolved: the sandbox applies the rules to "+real)
	}
	if _, err := os.Lstat(real); err != nil {
		v.Notes = append(v.Notes, "it does not exist now; a file created inside the sandbox gets the verdict of its directory")
	}
	if ign.err != nil {
		v.Notes = append(v.Notes, "ignore files: "+ign.err.Error())
	}
	return v
}

// suggestProfiles adds to the hints the built-in profiles that would make the
// path readable or writable.
func suggestProfiles(pf policyFlags, pol *policy.Policy, v *policy.PathVerdict, ign *ignored) {
	if v.Read && v.Write {
		return
	}
	applied := map[string]bool{}
	for _, p := range pol.Profiles {
		applied[p.Name] = true
	}
	var read, write []string
	for _, info := range policy.BuiltinProfiles() {
		if applied[info.Name] {
			continue
		}
		alt := pf
		alt.profiles = append(append([]string(nil), pf.profiles...), info.Name)
		lp, err := alt.load()
		if err != nil {
			continue
		}
		av := explainPath(lp.Policy, v.Path, ign)
		if !v.Read && av.Read {
			read = append(read, info.Name)
		}
		if !v.Write && av.Write {
			write = append(write, info.Name)
		}
	}
	if len(read) > 0 && v.ReadHint != "" {
		v.ReadHint += "; --profile " + strings.Join(read, " or --profile ") + " makes it readable"
	}
	if len(write) > 0 && v.WriteHint != "" {
		v.WriteHint += "; --profile " + strings.Join(write, " or --profile ") + " makes it writable"
	}
}

// resolveExisting follows symlinks in the longest existing prefix of path.
func resolveExisting(path string) string {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if p == filepath.Dir(p) {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

func writeVerdict(w io.Writer, pol *policy.Policy, v any) {
	switch v := v.(type) {
	case policy.PathVerdict:
		fmt.Fprintln(w, v.Path)
		fmt.Fprintf(w, "  read:  %s\n", pathLine(pol, v.Read, v.ReadRule))
		if v.ReadHint != "" {
			fmt.Fprintf(w, "         hint: %s\n", v.ReadHint)
		}
		fmt.Fprintf(w, "  write: %s\n", pathLine(pol, v.Write, v.WriteRule))
		if v.WriteHint != "" {
			fmt.Fprintf(w, "         hint: %s\n", v.WriteHint)
		}
		for _, n := range v.Notes {
			fmt.Fprintf(w, "  note:  %s\n", n)
		}
	case policy.HostVerdict:
		fmt.Fprintf(w, "%s port %d\n", v.Host, v.Port)
		verdict := "denied"
		if v.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(w, "  %s: %s\n", verdict, v.Reason)
		if v.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", v.Hint)
		}
	case policy.EnvVerdict:
		fmt.Fprintf(w, "$%s\n", v.Name)
		switch {
		case v.Masked:
			fmt.Fprintf(w, "  masked: %s (%s)\n", v.Reason, v.Origin)
		case v.Kept && v.Rule != "":
			fmt.Fprintf(w, "  kept: passed by %q (%s); %s\n", v.Rule, v.Origin, v.Reason)
		case v.Kept:
			fmt.Fprintf(w, "  kept: %s\n", v.Reason)
		default:
			fmt.Fprintf(w, "  removed: matches %s: %s (%s)\n", v.Rule, v.Reason, v.Origin)
		}
		if v.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", v.Hint)
		}
	}
}

func pathLine(pol *policy.Policy, ok bool, r policy.PathRule) string {
	verdict := "denied"
	if ok {
		verdict = "allowed"
	}
	if r.Kind == policy.KindDefault {
		return verdict + ", " + strings.TrimPrefix(r.Origin, policy.OriginDefault+": ")
	}
	return fmt.Sprintf("%s by %s %s (%s)", verdict, r.Kind, display(pol, r.Path), r.Origin)
}
