package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tailscale/hujson"

	"github.com/moat-sandbox/moat/policy"
	"github.com/moat-sandbox/moat/sandbox"
)

// approver asks the person at the terminal about each connection no rule decides.
type approver struct {
	cmd    *sandbox.Cmd
	pol    *policy.Policy
	config string // where "always" records its rule: the user config (--config, else the default path)
}

// ask is the sandbox's Cmd.Approve.
func (a *approver) ask(r sandbox.Request) (sandbox.Approval, error) {
	entry := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	if ip := net.ParseIP(r.Host); ip == nil || ip.To4() != nil {
		entry = r.Host + ":" + strconv.Itoa(r.Port)
	}
	var v sandbox.Approval
	err := a.cmd.WithTerminal(func(tty *os.File) error {
		var err error
		v, err = a.prompt(tty, entry)
		if err == nil && v == sandbox.AllowAlways {
			if werr := addAllowedDomain(a.config, entry); werr != nil {
				fmt.Fprintf(tty, "moat: could not record it (%v); allowed for this run only\n", werr)
				v = sandbox.AllowRun
			} else {
				fmt.Fprintf(tty, "moat: added %q to network.allowedDomains in %s\n", entry, display(a.pol, a.config))
			}
		}
		return err
	})
	return v, err
}

// answers maps a key to its answer.
var answers = map[byte]sandbox.Approval{
	'o': sandbox.AllowOnce, 'r': sandbox.AllowRun, 'a': sandbox.AllowAlways,
	'd': sandbox.Deny, 'n': sandbox.DenyAll,
	'\r': sandbox.Deny, '\n': sandbox.Deny, 3: sandbox.Deny, 4: sandbox.Deny, // Enter, Ctrl-C, Ctrl-D
}

var answerWords = map[sandbox.Approval]string{
	sandbox.AllowOnce: "allowed once", sandbox.AllowRun: "allowed for this run", sandbox.AllowAlways: "allowed always",
	sandbox.Deny: "denied", sandbox.DenyAll: "denied, and every other undecided host in this run",
}

// resetText makes what follows plain, visible text whatever the command wrote
// before: it ends a control string the command left open (CAN, then ST: text
// would otherwise go into an unfinished OSC or DCS), turns off every text
// attribute (SGR 0), puts back the terminal's default colours (OSC 110, 111:
// the command can set the default foreground to the background colour, and the
// question would be invisible under a fake one of its own), its palette (OSC
// 104) and cursor colour (OSC 112), turns reverse video off (DECSCNM), shows the
// cursor, and selects ASCII as the G0 character set in use (ESC ( B, then SI).
const resetText = "\x18\x1b\\" + "\x1b[0m" + "\x1b]104\x1b\\\x1b]110\x1b\\\x1b]111\x1b\\\x1b]112\x1b\\" + "\x1b[?5l\x1b[?25h" + "\x1b(B\x0f"

// prompt asks about entry (host:port) on tty and reads one key, with the terminal
// in a mode of its own: no echo, one key at a time, and Ctrl-C a key (deny), not
// a signal.
func (a *approver) prompt(tty *os.File, entry string) (sandbox.Approval, error) {
	restore, err := keyMode(tty)
	if err != nil {
		return sandbox.Deny, err
	}
	defer restore()
	// Nothing the sandbox writes shows while moat asks (Cmd.WithTerminal), but
	// what it wrote before may have left the terminal drawing text invisible (SGR
	// 8, or one colour on the same) or in the line-drawing character set: plain
	// text again, first.
	fmt.Fprint(tty, resetText)
	fmt.Fprintf(tty, "\nmoat: the sandboxed command wants to connect to %s, which no rule allows or denies.\n", entry)
	fmt.Fprintf(tty, "moat:   o  allow once\n")
	fmt.Fprintf(tty, "moat:   r  allow for the rest of this run\n")
	fmt.Fprintf(tty, "moat:   a  allow always (adds %q to %s)\n", entry, display(a.pol, a.config))
	fmt.Fprintf(tty, "moat:   d  deny (Enter)\n")
	fmt.Fprintf(tty, "moat:   n  deny, and every other undecided host in this run\n")
	for {
		fmt.Fprintf(tty, "moat: allow %s? [o/r/a/d/n] ", entry)
		var buf [64]byte
		n, err := tty.Read(buf[:])
		if err != nil || n == 0 {
			fmt.Fprintf(tty, "\n")
			return sandbox.Deny, nil
		}
		// An answer is one key. The terminal's reply to a query the sandbox wrote
		// just before the question (its colours, or its title, which the sandbox
		// can set to any text) arrives as a burst that starts with ESC; read a
		// byte at a time, its letters would answer.
		if n > 1 || buf[0] == 0x1b {
			drainInput(tty)
			fmt.Fprintf(tty, "\n")
			continue
		}
		key := buf[0]
		if key >= 'A' && key <= 'Z' {
			key += 'a' - 'A'
		}
		if v, ok := answers[key]; ok {
			fmt.Fprintf(tty, "%s\n", answerWords[v])
			return v, nil
		}
		fmt.Fprintf(tty, "\n")
	}
}

// addAllowedDomain appends entry to network.allowedDomains in the JSONC file at
// path, creating the file, the object or the list as needed and keeping the rest
// of the file, comments included, as it was.
func addAllowedDomain(path, entry string) error {
	if path == "" {
		return errors.New("no user config path")
	}
	data, err := os.ReadFile(path)
	mode := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = []byte("// moat's user config; see moat's README for the keys.\n{}\n")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var ops []map[string]any
	if v.Find("/network") == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/network", "value": map[string]any{}})
	}
	if v.Find("/network/allowedDomains") == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/network/allowedDomains", "value": []string{}})
	}
	ops = append(ops, map[string]any{"op": "add", "path": "/network/allowedDomains/-", "value": entry})
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := v.Patch(patch); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.jsonc")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(v.Pack()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
