package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/linux/probe"
)

func runDoctor(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = doctorCmd(args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	return out.String(), errb.String(), err
}

func TestDoctorHost(t *testing.T) {
	out, _, err := runDoctor(t)
	if err != nil {
		t.Fatalf("doctor: %v", err)
	}
	r := probe.Detect()
	for _, f := range r.Features {
		if !strings.Contains(out, "  "+f.Name+" ") {
			t.Errorf("output lacks feature %q:\n%s", f.Name, out)
		}
	}
	for _, want := range []string{"kernel  " + r.Kernel, "arch    " + r.Arch, "user    " + r.User, "\nsummary: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if r.LandlockABI < probe.LandlockFullABI {
		t.Skipf("Landlock ABI %d here (the probe package's tests check it against the kernel)", r.LandlockABI)
	}
	if !regexp.MustCompile(`(?m)^  ok +landlock +ABI \d+: `).MatchString(out) {
		t.Errorf("no ok line for landlock:\n%s", out)
	}
}

func TestDoctorJSON(t *testing.T) {
	out, _, err := runDoctor(t, "--json")
	if err != nil {
		t.Fatalf("doctor --json: %v", err)
	}
	var r probe.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json printed no Report: %v\n%s", err, out)
	}
	if _, ok := r.Feature(probe.Landlock); !ok || r.Kernel == "" {
		t.Errorf("doctor --json: %+v", r)
	}
}

func TestDoctorArgs(t *testing.T) {
	for _, args := range [][]string{{"--nope"}, {"extra"}, {"--json", "extra"}} {
		_, stderr, err := runDoctor(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("doctor %q: error %v, want a usage error", args, err)
		}
		if stderr != "" {
			t.Errorf("doctor %q wrote to stderr itself (Run reports errors): %q", args, stderr)
		}
	}
	out, _, err := runDoctor(t, "-h")
	if err != nil || !strings.Contains(out, "usage: moat doctor") || !strings.Contains(out, "-json") {
		t.Errorf("doctor -h: %v\n%s", err, out)
	}
}

func TestWriteDoctor(t *testing.T) {
	r := probe.Report{
		Kernel: "Linux 6.1.0", Arch: "amd64", User: "alice (uid 1000)",
		Features: []probe.Feature{
			{Name: probe.UserNS, Status: probe.Missing, Detail: "creating one failed: no space left on device",
				Meaning: "no namespaces", Fix: "first line\n  second line", Required: true},
			{Name: probe.Landlock, Status: probe.Available, Detail: "ABI 7: filesystem", Required: true},
			{Name: probe.CgroupV2, Status: probe.Partial, Detail: "not writable", Meaning: "rlimits", Fix: "delegate"},
		},
	}
	var b bytes.Buffer
	writeDoctor(&b, r)
	want := `moat doctor: what this host can enforce
  kernel  Linux 6.1.0
  arch    amd64
  user    alice (uid 1000)

  MISSING  user namespaces  creating one failed: no space left on device
           meaning: no namespaces
           fix:     first line
                      second line
  ok       landlock         ABI 7: filesystem
  PARTIAL  cgroup v2        not writable
           meaning: rlimits
           fix:     delegate

summary: moat run can NOT enforce its full policy here: it lacks user namespaces.
         Fix these, or accept knowingly that the layers they provide are lost.
         Weaker fallbacks also apply for: cgroup v2 (partial).
`
	if got := b.String(); got != want {
		t.Errorf("writeDoctor:\n%s\nwant:\n%s", got, want)
	}
}

func TestDoctorSummary(t *testing.T) {
	ok := probe.Feature{Name: probe.Landlock, Status: probe.Available, Required: true}
	optional := probe.Feature{Name: probe.CgroupV2, Status: probe.Missing}
	required := probe.Feature{Name: probe.Seccomp, Status: probe.Partial, Required: true}
	tests := []struct {
		name     string
		features []probe.Feature
		want     string
		notWant  string
	}{
		{"all ok", []probe.Feature{ok}, "can enforce its full policy here.", "NOT"},
		{"optional missing", []probe.Feature{ok, optional}, "full isolation policy here; weaker fallbacks for: cgroup v2", "NOT"},
		{"required partial", []probe.Feature{ok, required}, "can NOT enforce its full policy here: it lacks seccomp (partial)", "fallbacks"},
		{"nothing probed", nil, "bug", "can enforce"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(probe.Report{Features: tt.features})
			if !strings.Contains(got, tt.want) || strings.Contains(got, tt.notWant) {
				t.Errorf("summary = %q, want %q and no %q", got, tt.want, tt.notWant)
			}
		})
	}
}

// TestDoctorSummaryModes: the summary speaks of the mode moat run will use, and leaves
// out what only the other mode needs.
func TestDoctorSummaryModes(t *testing.T) {
	noUserNS := probe.Feature{Name: probe.UserNS, Status: probe.Missing, Required: true}
	noNetNS := probe.Feature{Name: probe.NetNS, Status: probe.Missing, Required: true}
	ok := probe.Feature{Name: probe.Landlock, Status: probe.Available, Required: true}
	noGetfd := probe.Feature{Name: probe.PidfdGetfd, Status: probe.Missing, DirectMode: true}
	noCgroup := probe.Feature{Name: probe.CgroupV2, Status: probe.Missing}
	tests := []struct {
		name     string
		mode     string
		features []probe.Feature
		want     []string
		notWant  []string
	}{
		{"namespaces, direct needs missing", probe.ModeNamespaces, []probe.Feature{ok, noGetfd},
			[]string{"can enforce its full policy here."}, []string{"pidfd_getfd", "NOT"}},
		{"direct", probe.ModeDirect, []probe.Feature{noUserNS, noNetNS, ok, noCgroup},
			[]string{"uses its direct mode here", `README "Hosts without user namespaces"`, "fallbacks also apply for: cgroup v2"},
			[]string{"NOT", "lacks", "network namespace"}},
		{"none", probe.ModeNone, []probe.Feature{noUserNS, ok, noGetfd},
			[]string{"can NOT build a sandbox here: it lacks user namespaces, pidfd_getfd."}, []string{"direct mode here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(probe.Report{Features: tt.features, Mode: probe.RunMode{Name: tt.mode}})
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("summary has %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestModeLine(t *testing.T) {
	for _, c := range []struct{ mode, want string }{
		{probe.ModeNamespaces, "moat run uses the namespace mode here: why"},
		{probe.ModeDirect, "moat run uses the direct mode here (no namespaces): why"},
		{probe.ModeNone, "moat run can't build a sandbox here: why"},
	} {
		if got := modeLine(probe.RunMode{Name: c.mode, Detail: "why"}); got != c.want {
			t.Errorf("modeLine(%s) = %q, want %q", c.mode, got, c.want)
		}
	}
}

func TestDoctorSummaryUnchanged(t *testing.T) {
	// A report without a mode (an old JSON report) is summarised as before.
	for _, tt := range []struct {
		features []probe.Feature
		want     string
	}{
		{[]probe.Feature{{Name: probe.Landlock, Status: probe.Available, Required: true}}, "can enforce its full policy here."},
	} {
		t.Run(tt.want, func(t *testing.T) {
			got := summary(probe.Report{Features: tt.features})
			if !strings.Contains(got, tt.want) {
				t.Errorf("summary = %q, want %q", got, tt.want)
			}
		})
	}
}
