package probe

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLandlockDetail(t *testing.T) {
	tests := []struct {
		name string
		abi  int
		want string
	}{
		{"none", 0, "not available"},
		{"negative", -1, "not available"},
		{"first", 1, "ABI 1: filesystem; newer ABIs add refer (2), truncate (3), TCP ports (4), device ioctl (5), scoping (6), audit (7), thread sync (8), unix socket paths (9), UDP (10)"},
		{"tcp", 4, "ABI 4: filesystem, refer, truncate, TCP ports; newer ABIs add device ioctl (5), scoping (6), audit (7), thread sync (8), unix socket paths (9), UDP (10)"},
		{"this host", 7, "ABI 7: filesystem, refer, truncate, TCP ports, device ioctl, scoping, audit; newer ABIs add thread sync (8), unix socket paths (9), UDP (10)"},
		{"newest known", 10, "ABI 10: filesystem, refer, truncate, TCP ports, device ioctl, scoping, audit, thread sync, unix socket paths, UDP"},
		{"from the future", 11, "ABI 11: filesystem, refer, truncate, TCP ports, device ioctl, scoping, audit, thread sync, unix socket paths, UDP, and more than this moat knows of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := landlockDetail(tt.abi); got != tt.want {
				t.Errorf("landlockDetail(%d) =\n  %q\nwant\n  %q", tt.abi, got, tt.want)
			}
		})
	}
}

func TestLandlockLost(t *testing.T) {
	tests := []struct {
		name      string
		abi       int
		has, lacs []string // substrings that must and must not appear
	}{
		{"none", 0, []string{"no filesystem access rules", "TCP", "scoping"}, nil},
		{"truncate but no TCP", 3, []string{"TCP", "ioctl", "scoping"}, []string{"filesystem", "renamed", "truncate"}},
		{"no scoping", 5, []string{"scoping"}, []string{"TCP", "ioctl"}},
		{"full", LandlockFullABI, nil, []string{""}},
		{"beyond full", 7, nil, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := landlockLost(tt.abi)
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("landlockLost(%d) = %q, lacks %q", tt.abi, got, s)
				}
			}
			for _, s := range tt.lacs {
				if s == "" && got != "" || s != "" && strings.Contains(got, s) {
					t.Errorf("landlockLost(%d) = %q, must not contain %q", tt.abi, got, s)
				}
			}
		})
	}
}

func TestLandlockKernel(t *testing.T) {
	if len(landlockABIs) != LandlockNewestABI {
		t.Errorf("the ABI table has %d entries, LandlockNewestABI is %d", len(landlockABIs), LandlockNewestABI)
	}
	for abi, want := range map[int]string{0: "", 1: "5.13", 4: "6.7", 6: "6.12", 7: "6.15", 99: ""} {
		if got := landlockKernel(abi); got != want {
			t.Errorf("landlockKernel(%d) = %q, want %q", abi, got, want)
		}
	}
}

func TestStatus(t *testing.T) {
	var zero Status
	if zero != Missing {
		t.Errorf("zero Status is %v, want missing: an unset feature must not read as available", zero)
	}
	for _, s := range []Status{Missing, Partial, Available} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Status
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%v: JSON %s came back as %v, %v", s, b, back, err)
		}
	}
	var s Status
	if err := json.Unmarshal([]byte(`"ok"`), &s); err == nil {
		t.Error(`unmarshalling "ok" succeeded, want an error`)
	}
	if got := Status(9).String(); got != "Status(9)" {
		t.Errorf("Status(9).String() = %q", got)
	}
}

func TestReportFeature(t *testing.T) {
	r := Report{Features: []Feature{
		{Name: Landlock, Status: Available},
		{Name: CgroupV2, Status: Missing},
		{Name: MPTCP, Status: Partial},
	}}
	if f, ok := r.Feature(Landlock); !ok || f.Status != Available {
		t.Errorf("Feature(landlock) = %+v, %v", f, ok)
	}
	if f, ok := r.Feature("land"); ok {
		t.Errorf("Feature(land) found %+v: names must match exactly", f)
	}
	lack := r.Lacking()
	if len(lack) != 2 || lack[0].Name != CgroupV2 || lack[1].Name != MPTCP {
		t.Errorf("Lacking() = %+v, want cgroup v2 then MPTCP", lack)
	}
}

// TestMode: moat run's mode follows from the features, as its launch does: all six
// namespaces in one clone, else the direct mode if it has what it needs.
func TestMode(t *testing.T) {
	ok := func(names ...string) []Feature {
		var fs []Feature
		for _, n := range names {
			fs = append(fs, Feature{Name: n, Status: Available})
		}
		return fs
	}
	all := append(ok(namespaceFeatures...), ok(directFeatures...)...)
	with := func(fs []Feature, name string, st Status) []Feature {
		out := append([]Feature(nil), fs...)
		for i := range out {
			if out[i].Name == name {
				out[i].Status = st
			}
		}
		return out
	}
	tests := []struct {
		name     string
		features []Feature
		abi      int
		mode     string
		detail   []string // substrings of Detail
	}{
		{"everything", all, 7, ModeNamespaces, []string{"uts namespaces"}},
		{"no user namespaces", with(all, UserNS, Missing), 7, ModeDirect, []string{"user namespaces are unavailable", "requireNamespaces"}},
		{"user namespace without capabilities", with(all, UserNS, Partial), 7, ModeDirect, []string{"user namespaces are unavailable"}},
		{"one namespace inside fails", with(all, NetNS, Missing), 7, ModeDirect, []string{"the network namespace can't be created"}},
		// IPC and UTS are created in the same clone: missing one, launch fails too.
		{"no uts namespace", with(all, UTSNS, Missing), 7, ModeDirect, []string{"uts namespace"}},
		{"old Landlock", with(with(all, UserNS, Missing), Landlock, Partial), 4, ModeDirect,
			[]string{"Landlock ABI 4", `"allowUnscopedSignals": true`}},
		{"no Landlock", with(with(all, UserNS, Missing), Landlock, Missing), 0, ModeNone, []string{"lacks landlock", "fails"}},
		{"old seccomp", with(with(all, UserNS, Missing), SeccompNotify, Partial), 7, ModeNone, []string{"lacks seccomp user notification"}},
		{"no pidfd_getfd", with(with(all, UserNS, Missing), PidfdGetfd, Missing), 7, ModeNone, []string{"pidfd_getfd"}},
		// The direct mode's needs don't matter where namespaces work.
		{"namespaces without direct needs", with(all, PidfdGetfd, Missing), 7, ModeNamespaces, nil},
		{"nothing probed", nil, 0, ModeNone, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Report{Features: tt.features, LandlockABI: tt.abi}.mode()
			if m.Name != tt.mode {
				t.Errorf("mode %q (%s), want %q", m.Name, m.Detail, tt.mode)
			}
			for _, d := range tt.detail {
				if !strings.Contains(m.Detail, d) {
					t.Errorf("Detail %q lacks %q", m.Detail, d)
				}
			}
		})
	}
}
