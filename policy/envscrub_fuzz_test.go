package policy

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// oldWildMatch is the backtracking matcher wildMatch replaced, kept as the
// reference the faster one must agree with.
func oldWildMatch(pattern, name string, fold bool) bool {
	if fold && (!oldIsASCII(pattern) || !oldIsASCII(name)) {
		pattern, name, fold = strings.ToUpper(pattern), strings.ToUpper(name), false
	}
	p, n, star, mark := 0, 0, -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && oldSameByte(pattern[p], name[n], fold):
			p++
			n++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func oldSameByte(a, b byte, fold bool) bool {
	if a == b {
		return true
	}
	if !fold {
		return false
	}
	if 'a' <= a && a <= 'z' {
		a -= 'a' - 'A'
	}
	if 'a' <= b && b <= 'z' {
		b -= 'a' - 'A'
	}
	return a == b
}

func oldIsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// oldScrubbed is scrubbed as it was: the first entry whose pattern matches.
func oldScrubbed(name string) (EnvScrub, bool) {
	for _, s := range envScrubTable {
		if oldWildMatch(s.Pattern, name, true) {
			return s, true
		}
	}
	return EnvScrub{}, false
}

// pieces build names and patterns that come close to the table's patterns: their
// words, in both cases, short runs, and bytes that fold only under Unicode rules
// (ı and ſ upper-case to I and S) or not at all (invalid UTF-8).
var pieces = []string{"", "_", "*", "**", "A", "a", "B", "S", "s", "K", "TOKEN", "token", "_TOKEN", "_TOKEN_", "AUTH",
	"_AUTH", "SECRET", "SeCrEt", "KEY", "_KEY", "_KEYS", "API", "APIKEY", "PASS", "PASSWORD", "PWD", "DSN", "URL",
	"DATABASE", "DATABASE_URL", "COOKIE", "AWS", "AWS_", "GH_", "VAULT_", "DISPLAY", "TMUX", "STY", "ı", "ſ",
	"é", "ÿ", "\xff", "\xc3", "ECRET", "ECR", "TOK"}

func randomName(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func checkAgainstOld(t *testing.T, pattern, name string) {
	t.Helper()
	for _, fold := range []bool{false, true} {
		if got, want := wildMatch(pattern, name, fold), oldWildMatch(pattern, name, fold); got != want {
			t.Fatalf("wildMatch(%q, %q, %v) = %v, the old matcher says %v", pattern, name, fold, got, want)
		}
	}
}

func checkScrubbedAgainstOld(t *testing.T, name string) {
	t.Helper()
	got, gotOK := scrubbed(name)
	want, wantOK := oldScrubbed(name)
	if gotOK != wantOK || got.Pattern != want.Pattern {
		t.Fatalf("scrubbed(%q) = %q, %v; the old matcher says %q, %v", name, got.Pattern, gotOK, want.Pattern, wantOK)
	}
}

// TestWildMatchAgreesWithOld compares the matcher with the old one on the table's
// patterns and random ones, against this process's environment, every name the
// other tests use and random names.
func TestWildMatchAgreesWithOld(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var patterns, names []string
	for _, s := range envScrubTable {
		patterns = append(patterns, s.Pattern, strings.ToLower(s.Pattern))
		names = append(names, s.Pattern, strings.ToLower(s.Pattern), strings.ReplaceAll(s.Pattern, "*", ""),
			strings.ReplaceAll(s.Pattern, "*", "X"), strings.ReplaceAll(s.Pattern, "*", "_ı_"))
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	for range 200 {
		patterns = append(patterns, randomName(r))
	}
	for range 2000 {
		names = append(names, randomName(r))
	}
	for _, n := range names {
		checkScrubbedAgainstOld(t, n)
		for _, p := range patterns {
			checkAgainstOld(t, p, n)
		}
	}
}

// TestWildMatchSmall compares the matchers on every pattern of up to five symbols
// and every name of up to four, from small alphabets: it covers the overlaps of
// prefix, pieces and suffix (AB*BA and ABA, *A*A* and A) random names seldom reach.
func TestWildMatchSmall(t *testing.T) {
	all := func(alphabet []string, n int) []string {
		out, last := []string{""}, []string{""}
		for range n {
			var next []string
			for _, s := range last {
				for _, a := range alphabet {
					next = append(next, s+a)
				}
			}
			out, last = append(out, next...), next
		}
		return out
	}
	names := all([]string{"A", "B", "a", "ı"}, 4)
	for _, p := range all([]string{"A", "B", "a", "*"}, 5) {
		for _, n := range names {
			checkAgainstOld(t, p, n)
		}
	}
}

func FuzzWildMatch(f *testing.F) {
	f.Add("*_TOKEN", "gh_token")
	f.Add("A*B*C", "AXBXC")
	f.Add("AB*BA", "ABA")
	f.Add("*SECRET*", "ſecret")
	f.Add("**", "\xff")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		checkAgainstOld(t, pattern, name)
		checkScrubbedAgainstOld(t, name)
	})
}

func BenchmarkFilterEnv(b *testing.B) {
	p := &Policy{}
	env := os.Environ()
	for b.Loop() {
		p.FilterEnv(env)
	}
}
