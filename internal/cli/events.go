package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/sandbox"
)

// eventLog writes a run's events as JSON lines (when asked to) and keeps the
// refusals for the summary moat prints when the command exits.
type eventLog struct {
	mu     sync.Mutex
	enc    *json.Encoder // nil: no event log file
	denied []sandbox.Event
	seen   map[string]int // host:port -> index in denied
	counts []int
	more   int // refusals of destinations beyond the first summaryMax, not kept
	werr   error

	// pol, when set, writes home as ~ in the summary and says how to reveal a
	// hidden directory.
	pol      *policy.Policy
	files    []fileGroup
	fileSeen map[string]int // op and hidden path -> index in files
}

// fileGroup is the accesses of one kind to one hidden path and below it.
type fileGroup struct {
	ev    sandbox.FileEvent // the first
	paths []string          // the first few
	n     int
}

func newEventLog(w io.Writer) *eventLog {
	l := &eventLog{seen: map[string]int{}, fileSeen: map[string]int{}}
	if w != nil {
		l.enc = json.NewEncoder(w)
	}
	return l
}

// summaryMax is how many refused destinations the summary names.
const summaryMax = 20

func (l *eventLog) add(ev sandbox.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enc != nil && l.werr == nil {
		l.werr = l.enc.Encode(ev)
	}
	if ev.Action != "deny" {
		return
	}
	key := ev.Proto + " " + ev.Host + ":" + strconv.Itoa(ev.Port)
	if ev.Proto == "dns" {
		key = "dns " + ev.Host
	}
	if i, ok := l.seen[key]; ok {
		l.counts[i]++
		return
	}
	if len(l.denied) >= summaryMax {
		// Only the first ones are named in the summary; keeping every other
		// destination a command makes up would let it grow moat's memory without
		// bound (the event log file has them all).
		l.more++
		return
	}
	l.seen[key] = len(l.denied)
	l.denied = append(l.denied, ev)
	l.counts = append(l.counts, 1)
}

// addFile logs an access to a hidden path (sandbox.Cmd.FileEvents).
func (l *eventLog) addFile(ev sandbox.FileEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enc != nil && l.werr == nil {
		l.werr = l.enc.Encode(ev)
	}
	key := ev.Op + "\x00" + ev.Hidden
	i, ok := l.fileSeen[key]
	if !ok {
		i = len(l.files)
		l.fileSeen[key] = i
		l.files = append(l.files, fileGroup{ev: ev})
	}
	g := &l.files[i]
	if ev.Path == "" { // the count of those left unreported
		g.n += ev.Count
		return
	}
	g.n++
	if len(g.paths) < 2 {
		g.paths = append(g.paths, ev.Path)
	}
}

// summary prints one line per refused destination, then one per hidden path the
// command tried to read: what, why, and how to allow it.
func (l *eventLog) summary(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.fileSummary(w)
	if l.more > 0 {
		defer fmt.Fprintf(w, "moat: ... and %d more refusals of other destinations (see --events)\n", l.more)
	}
	for i, ev := range l.denied {
		what := "connection to " + ev.Host
		if ev.Port != 0 {
			what += ":" + strconv.Itoa(ev.Port)
		}
		switch ev.Proto {
		case "dns":
			what = "DNS lookup of " + ev.Host
		case "listen":
			what = "listening on " + ev.Addr
		}
		line := "moat: blocked " + what
		if n := l.counts[i]; n > 1 {
			line += fmt.Sprintf(" (%d times)", n)
		}
		why := ev.Rule
		if ev.Reason != "" && ev.Reason != "denied-by-rule" && ev.Reason != "not-allowed" {
			why = strings.TrimSuffix(ev.Reason+": "+why, ": ")
		}
		if why != "" {
			line += " (" + why + ")"
		}
		if ev.Hint != "" {
			line += " — " + ev.Hint
		}
		fmt.Fprintln(w, line)
	}
}

// fileSummary prints a line per hidden path the command tried to read or list, the
// accesses below one hidden directory together:
//
//	moat: blocked read of ~/.ssh/id_rsa, ~/.ssh/config and 2 more in ~/.ssh (why) — how to allow it
func (l *eventLog) fileSummary(w io.Writer) {
	const max = 20
	for i, g := range l.files {
		if i == max {
			fmt.Fprintf(w, "moat: ... and %d more hidden paths the command tried to read (see --events)\n", len(l.files)-max)
			break
		}
		ev := g.ev
		var line string
		hint := ev.Hint
		switch {
		case ev.Op == "list":
			line = "moat: blocked listing of " + l.tilde(ev.Hidden)
		case g.n == 1 && len(g.paths) == 1:
			line = "moat: blocked read of " + l.tilde(g.paths[0])
		default:
			shown := make([]string, len(g.paths))
			for j, p := range g.paths {
				shown[j] = l.tilde(p)
			}
			line = "moat: blocked read of " + strings.Join(shown, ", ")
			switch more := g.n - len(g.paths); {
			case len(shown) == 0:
				line += fmt.Sprintf("%d paths", more)
			case more > 0:
				line += fmt.Sprintf(" and %d more", more)
			}
			line += " in " + l.tilde(ev.Hidden)
			if l.pol != nil {
				// How to reveal the directory, rather than one path in it.
				if v := l.pol.ExplainPath(ev.Hidden); !v.Read && v.ReadHint != "" {
					hint = v.ReadHint
				}
			}
		}
		if ev.Rule != "" {
			line += " (" + ev.Rule + ")"
		}
		if hint == "" {
			hint = "'moat explain " + l.tilde(ev.Hidden) + "' says which rule hides it"
		}
		fmt.Fprintln(w, printable(line+" — "+l.tildeAll(hint)))
	}
}

// printable keeps a summary line to one line of plain text: the paths in it are
// names the command chose, which may hold newlines or terminal escape sequences.
// Each quoted path has its own escapes already (quote); this is the last guard.
func printable(line string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r < 0x20 || r >= 0x7f && r < 0xa0 {
			return '?'
		}
		return r
	}, line)
}

// quote writes a path the command chose as Go would quote it when it holds
// anything but printable characters.
func quote(path string) string {
	if !utf8.ValidString(path) || strings.ContainsFunc(path, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(path)
	}
	return path
}

// tilde writes a path in the home directory as ~/..., quoted when it has to be.
func (l *eventLog) tilde(path string) string {
	if l.pol == nil || l.pol.Home == "" || l.pol.Home == "/" {
		return quote(path)
	}
	if path == l.pol.Home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(path, l.pol.Home+"/"); ok {
		return quote("~/" + rest)
	}
	return quote(path)
}

// tildeAll writes the paths in the home directory that text names as ~/...
func (l *eventLog) tildeAll(text string) string {
	if l.pol == nil || l.pol.Home == "" || l.pol.Home == "/" {
		return text
	}
	return strings.ReplaceAll(text, " "+l.pol.Home+"/", " ~/")
}
