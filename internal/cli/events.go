package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

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
	werr   error
}

func newEventLog(w io.Writer) *eventLog {
	l := &eventLog{seen: map[string]int{}}
	if w != nil {
		l.enc = json.NewEncoder(w)
	}
	return l
}

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
	l.seen[key] = len(l.denied)
	l.denied = append(l.denied, ev)
	l.counts = append(l.counts, 1)
}

// summary prints one line per refused destination: what, why, and how to allow it.
func (l *eventLog) summary(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	const max = 20
	for i, ev := range l.denied {
		if i == max {
			fmt.Fprintf(w, "moat: ... and %d more refused destinations (see --events)\n", len(l.denied)-max)
			break
		}
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
