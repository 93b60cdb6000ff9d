package policy

import (
	"errors"
	"strings"
	"testing"
)

// TestNamespaceSwitches: moat.requireNamespaces and moat.allowUnscopedSignals parse
// as booleans in a settings file, compile into Policy switches with their origin,
// and only turn on: false in any layer changes nothing.
func TestNamespaceSwitches(t *testing.T) {
	tests := []struct {
		name          string
		user, project string
		flags         Flags
		require, sigs string // the origins wanted; "" for off
	}{
		{name: "absent"},
		{name: "user config",
			user:    "{\"moat\": {\n  \"requireNamespaces\": true,\n  \"allowUnscopedSignals\": true}}",
			require: "s.json:2 moat.requireNamespaces", sigs: "s.json:3 moat.allowUnscopedSignals"},
		{name: "false is off", user: `{"moat": {"requireNamespaces": false, "allowUnscopedSignals": false}}`},
		{name: "flag", flags: Flags{RequireNamespaces: true}, require: "flag --no-fallback"},
		{name: "weakest layer's origin stays", user: `{"moat": {"requireNamespaces": true}}`, flags: Flags{RequireNamespaces: true},
			require: "s.json:1 moat.requireNamespaces"},
		// Forbidding the fallback tightens: an untrusted project file may.
		{name: "untrusted project", user: `{}`, project: "{\n\"moat\": {\"requireNamespaces\": true}}",
			require: projPath + ":2 moat.requireNamespaces"},
		// An untrusted project's false can't turn the user's switch off.
		{name: "project false", user: `{"moat": {"requireNamespaces": true}}`, project: `{"moat": {"requireNamespaces": false}}`,
			require: "s.json:1 moat.requireNamespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layers{Flags: tt.flags}
			if tt.user != "" {
				l.User = mustParse(t, tt.user)
			}
			if tt.project != "" {
				l.Project = parseProject(t, tt.project)
			}
			p, err := CompileLayers(l, testEnv)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.RequireNamespaces; got.On != (tt.require != "") || got.Origin != tt.require {
				t.Errorf("RequireNamespaces = %+v, want origin %q", got, tt.require)
			}
			if got := p.AllowUnscopedSignals; got.On != (tt.sigs != "") || got.Origin != tt.sigs {
				t.Errorf("AllowUnscopedSignals = %+v, want origin %q", got, tt.sigs)
			}
		})
	}
}

func TestNamespaceSwitchErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		kind      error
		key, msg  string
	}{
		{"string", `{"moat": {"requireNamespaces": /*@*/"never"}}`, ErrType, "moat.requireNamespaces", "expected a boolean"},
		{"number", `{"moat": {"allowUnscopedSignals": /*@*/1}}`, ErrType, "moat.allowUnscopedSignals", "expected a boolean"},
		{"null", `{"moat": {"requireNamespaces": /*@*/null}}`, ErrType, "moat.requireNamespaces", "got null"},
		{"duplicate", `{"moat": {"requireNamespaces": true, /*@*/"requireNamespaces": true}}`, ErrDuplicate, "moat.requireNamespaces", "twice"},
		{"misspelt", `{"moat": {/*@*/"requireNamespace": true}}`, ErrUnknownKey, "moat.requireNamespace", "unknown key"},
		// A host's abilities are not a profile's business.
		{"in a profile", `{"moat": {"profiles": {"p": {"moat": {/*@*/"requireNamespaces": true}}}}}`, ErrUnknownKey,
			"moat.profiles.p.moat.requireNamespaces", "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("s.json", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
			line, col := wantPos(t, tt.doc)
			if e.Line != line || e.Col != col || e.Key != tt.key || !strings.Contains(e.Error(), tt.msg) {
				t.Errorf("error %q at %d:%d key %q, want %d:%d %q containing %q", e.Error(), e.Line, e.Col, e.Key, line, col, tt.key, tt.msg)
			}
		})
	}
}
