// Package starttrace prints, when MOAT_TRACE_STARTUP is set, a timestamp for each phase
// of starting a sandbox, from the supervisor and from the re-executed init, on stderr.
package starttrace

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Env turns tracing on. Its value, when a CLOCK_MONOTONIC time in nanoseconds (a
// launcher's clock just before it starts moat), is what times count from; otherwise
// ("1") they count from the supervisor's first phase.
const Env = "MOAT_TRACE_STARTUP"

var (
	on     bool
	origin int64
)

func init() {
	v, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	on = true
	if t, err := strconv.ParseInt(v, 10, 64); err == nil && t > 1e9 {
		origin = t
	}
}

// On reports whether tracing is on.
func On() bool { return on }

func now() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// EnvValue is the Env entry for a re-executed stage's environment: the same origin,
// so that its times and the supervisor's make one timeline.
func EnvValue() string {
	if origin == 0 {
		origin = now()
	}
	return Env + "=" + strconv.FormatInt(origin, 10)
}

// Mark prints "moat: trace: MS ms STAGE PHASE (cpu MS ms, N faults)" when tracing is
// on.
func Mark(stage, phase string) {
	if !on {
		return
	}
	t := now()
	if origin == 0 {
		origin = t
	}
	b := append([]byte("moat: trace: "), strconv.FormatFloat(float64(t-origin)/1e6, 'f', 3, 64)...)
	b = append(b, " ms "+stage+" "+phase...)
	// This process's own CPU time and page faults so far: on a loaded or virtual
	// machine they, more than the wall clock, say what a phase costs.
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		cpu := ru.Utime.Nano() + ru.Stime.Nano()
		b = append(b, " (cpu "...)
		b = strconv.AppendFloat(b, float64(cpu)/1e6, 'f', 3, 64)
		b = append(b, " ms, "...)
		b = strconv.AppendInt(b, ru.Minflt, 10)
		b = append(b, " faults)"...)
	}
	b = append(b, '\n')
	_, _ = os.Stderr.Write(b)
}
