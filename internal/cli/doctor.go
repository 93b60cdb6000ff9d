package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/moat-sandbox/moat/internal/linux/fusemask"
	"github.com/moat-sandbox/moat/internal/linux/probe"
)

const doctorUsage = "usage: moat doctor [--json]"

func doctorCmd(args []string, std stdio) error {
	fset := flag.NewFlagSet("moat doctor", flag.ContinueOnError)
	fset.SetOutput(io.Discard) // errors are reported once, by Run
	asJSON := fset.Bool("json", false, "print the report as JSON")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(std.out, doctorUsage)
			fmt.Fprintln(std.out, "\nReports which kernel features moat's sandbox is built from are usable here,")
			fmt.Fprintln(std.out, "what is lost without each missing one, and how to fix it.")
			fmt.Fprintln(std.out, "\nflags:")
			fset.SetOutput(std.out)
			fset.PrintDefaults()
			return nil
		}
		return usageError{fmt.Errorf("doctor: %w", err), doctorUsage}
	}
	if fset.NArg() > 0 {
		return usageError{fmt.Errorf("doctor: unexpected argument %q", fset.Arg(0)), doctorUsage}
	}

	r := probe.Detect()
	r.Features = append(r.Features, fileEvents())
	if *asJSON {
		enc := json.NewEncoder(std.out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	writeDoctor(std.out, r)
	return nil
}

// writeDoctor prints r as aligned plain text: a header, a line per feature with the
// meaning and fix of each one that isn't available, and a summary.
func writeDoctor(w io.Writer, r probe.Report) {
	fmt.Fprintln(w, "moat doctor: what this host can enforce")
	fmt.Fprintf(w, "  kernel  %s\n", r.Kernel)
	fmt.Fprintf(w, "  arch    %s\n", r.Arch)
	fmt.Fprintf(w, "  user    %s\n", r.User)
	if r.Root {
		fmt.Fprintln(w, "  note:   running as root; run 'moat doctor' as the user who runs moat,")
		fmt.Fprintln(w, "          for whom user namespaces and cgroups may be restricted")
	}
	fmt.Fprintln(w)

	nameWidth := 0
	for _, f := range r.Features {
		nameWidth = max(nameWidth, len(f.Name))
	}
	const statusWidth = len("MISSING")
	// Meaning and fix lines start under the feature's name.
	indent := strings.Repeat(" ", 2+statusWidth+2)
	for _, f := range r.Features {
		fmt.Fprintf(w, "  %-*s  %-*s  %s\n", statusWidth, statusLabel(f.Status), nameWidth, f.Name, f.Detail)
		if f.Status == probe.Available {
			continue
		}
		writeField(w, indent, "meaning: ", f.Meaning)
		writeField(w, indent, "fix:     ", f.Fix)
	}
	fmt.Fprintln(w)
	if r.Mode.Name != "" {
		writeField(w, "", "mode:    ", modeLine(r.Mode))
	}
	fmt.Fprintln(w, summary(r))
}

// fileEventsName is the doctor line of the FUSE device, which moat run's reports of
// reads of hidden paths need.
const fileEventsName = "filesystem denial events"

// fileEvents checks that this user can open the FUSE device.
func fileEvents() probe.Feature {
	f := probe.Feature{Name: fileEventsName}
	if err := fusemask.Check(); err != nil {
		f.Detail = "unavailable: " + err.Error()
		f.Meaning = "moat run hides the same paths, but doesn't report reads of them (--events, the summary at exit); not in the direct mode either way"
		f.Fix = fusemask.Fix(err)
		return f
	}
	f.Status = probe.Available
	f.Detail = "available: " + fusemask.Device + " opens, so moat run reports each read of a hidden path"
	return f
}

// modeLine says which mode moat run will use, and why.
func modeLine(m probe.RunMode) string {
	switch m.Name {
	case probe.ModeNamespaces:
		return "moat run uses the namespace mode here: " + m.Detail
	case probe.ModeDirect:
		return "moat run uses the direct mode here (no namespaces): " + m.Detail
	}
	return "moat run can't build a sandbox here: " + m.Detail
}

// writeField prints a labelled, possibly multi-line value, continuation lines aligned
// under the first.
func writeField(w io.Writer, indent, label, value string) {
	if value == "" {
		return
	}
	pad := strings.Repeat(" ", len(label))
	for i, line := range strings.Split(value, "\n") {
		if i == 0 {
			fmt.Fprintf(w, "%s%s%s\n", indent, label, line)
		} else {
			fmt.Fprintf(w, "%s%s%s\n", indent, pad, line)
		}
	}
}

func statusLabel(s probe.Status) string {
	switch s {
	case probe.Available:
		return "ok"
	case probe.Partial:
		return "PARTIAL"
	}
	return "MISSING"
}

// summary says whether moat run can enforce its full policy with what r found, in the
// mode it will use: what only the other mode needs is left out.
func summary(r probe.Report) string {
	var required, optional []string
	for _, f := range r.Lacking() {
		if f.DirectMode && r.Mode.Name == probe.ModeNamespaces || !f.DirectMode && r.Mode.Name == probe.ModeDirect && isNamespace(f.Name) {
			continue
		}
		name := f.Name
		if f.Status == probe.Partial {
			name += " (partial)"
		}
		if f.Required || f.DirectMode && r.Mode.Name != probe.ModeNamespaces {
			required = append(required, name)
		} else {
			optional = append(optional, name)
		}
	}
	switch {
	case len(r.Features) == 0:
		return "summary: moat doctor probed nothing, which is a bug in moat: assume moat run enforces nothing."
	case r.Mode.Name == probe.ModeNone:
		return "summary: moat run can NOT build a sandbox here: it lacks " + strings.Join(required, ", ") + ".\n" +
			"         Make user namespaces available, or fix the direct mode's needs (see above)."
	case r.Mode.Name == probe.ModeDirect:
		s := "summary: moat run uses its direct mode here: the same policy from Landlock, seccomp and a supervising\n" +
			"         process, less what README \"Hosts without user namespaces\" lists. Make user namespaces\n" +
			"         available (see above) for the namespace mode."
		if len(required) > 0 {
			s += "\n         It also lacks: " + strings.Join(required, ", ") + "."
		}
		if len(optional) > 0 {
			s += "\n         Weaker fallbacks also apply for: " + strings.Join(optional, ", ") + "."
		}
		return s
	case len(required) > 0:
		s := "summary: moat run can NOT enforce its full policy here: it lacks " + strings.Join(required, ", ") + ".\n" +
			"         Fix these, or accept knowingly that the layers they provide are lost."
		if len(optional) > 0 {
			s += "\n         Weaker fallbacks also apply for: " + strings.Join(optional, ", ") + "."
		}
		return s
	case len(optional) > 0:
		return "summary: moat run can enforce its full isolation policy here; weaker fallbacks for: " +
			strings.Join(optional, ", ") + " (see meaning above)."
	}
	return "summary: moat run can enforce its full policy here."
}

// isNamespace reports whether name is one of the namespaces the namespace mode creates.
func isNamespace(name string) bool {
	switch name {
	case probe.UserNS, probe.MountNS, probe.PIDNS, probe.NetNS, probe.IPCNS, probe.UTSNS:
		return true
	}
	return false
}
