package escape_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testmoat"
)

// testSocketStdio: a socket of the host as the command's stdout (inetd, `nc -e`,
// bash's >/dev/udp) belongs to the host's network namespace, so with it the
// command could send to any address: here a UDP datagram to a listener on the
// host's loopback, which no rule allows. moat refuses to run; the listener must
// get nothing. A pipe as stdout still works (and a unix socket pair: sandbox tests).
func testSocketStdio(t *testing.T) {
	b := newBox(t)
	ln, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 100)
		n, _, err := ln.ReadFrom(buf)
		if err == nil {
			got <- string(buf[:n])
		}
	}()
	out, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	f, err := out.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	port := strconv.Itoa(ln.LocalAddr().(*net.UDPAddr).Port)
	send := `import socket; s = socket.socket(fileno=1); s.sendto(b"ESCAPED", ("127.0.0.1", ` + port + `))`
	cmd := exec.Command(moatBin, "run", "--", "python3", "-c", send)
	cmd.Dir, cmd.Env = b.ws, b.env()
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = f, &errb
	runErr := cmd.Run()
	select {
	case msg := <-got:
		t.Errorf("the command sent %q to the host's loopback through its stdout socket", msg)
	case <-time.After(300 * time.Millisecond):
	}
	if code := cmd.ProcessState.ExitCode(); code != 125 || !strings.Contains(errb.String(), "stdout is a network socket") {
		t.Errorf("moat ran with a UDP socket as stdout: exit %d (%v), stderr:\n%s", code, runErr, errb.String())
	}

	// Control: a pipe, as a harness passes output.
	r := b.run(opts{script: "echo fine"})
	if r.code != 0 || r.stdout != "fine\n" {
		t.Fatalf("control: %s", r)
	}
}

// testStateDir: moat's record of the placeholders it removes when the user's last
// run ends lies in its state dir ($TMPDIR/moat-UID without XDG_RUNTIME_DIR). A run
// allowed to write $TMPDIR could add a line naming one of the user's files with
// its content, and moat would delete the file. The state dir is hidden from the
// sandbox; the victim must survive.
func testStateDir(t *testing.T) {
	b := newBox(t)
	tmp := filepath.Join(b.root, "tmp")
	testmoat.Mkdir(t, tmp)
	victim := filepath.Join(b.root, "notes.txt")
	writeFile(t, victim, "the user's notes\n", 0o644)
	state := filepath.Join(tmp, "moat-"+strconv.Itoa(os.Getuid()))
	r := b.run(opts{env: []string{"TMPDIR=" + tmp, "XDG_RUNTIME_DIR="}, flags: []string{"--allow-write", tmp},
		script: `printf 'file\t"the user'"'"'s notes\\n"\t%s\n' ` + shq(victim) + ` >> ` + shq(state+"/placeholders") + ` && echo planted
touch ` + shq(tmp+"/other") + ` && echo wrote-tmp`})
	if !strings.Contains(r.stdout, "wrote-tmp") {
		t.Fatalf("control: the run could not write its allowed TMPDIR:\n%s", r)
	}
	if !testmoat.Exists(victim) {
		t.Errorf("moat deleted %s after the command added it to the placeholder record:\n%s", victim, r)
	}
	if strings.Contains(r.stdout, "planted") {
		t.Errorf("the command wrote moat's placeholder record:\n%s", r)
	}
}
