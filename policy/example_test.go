package policy_test

import (
	"errors"
	"fmt"

	"github.com/moat-sandbox/moat/policy"
)

func ExampleCompile() {
	settings := []byte(`{
		// srt's settings file, unchanged
		"filesystem": {
			"denyRead": ["/home", "**/.env"],
			"allowRead": ["."],
			"allowWrite": ["."],
		},
	}`)
	s, err := policy.Parse("settings.json", settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	pol, err := policy.Compile(s, policy.Flags{DenyWrite: []string{"go.sum"}},
		policy.Env{Cwd: "/home/me/proj", Home: "/home/me"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, list := range []struct {
		name  string
		rules []policy.Rule
	}{{"deny read", pol.DenyRead}, {"allow read", pol.AllowRead}, {"allow write", pol.AllowWrite}, {"deny write", pol.DenyWrite}} {
		for _, r := range list.rules {
			if _, builtin := policy.SecretName(r.Origin); builtin && r.Path != "/home/me/.ssh" {
				continue // the built-in secret table: print one entry of it
			}
			fmt.Printf("%-11s %-25s glob=%-5v %s\n", list.name, r.Path, r.Glob, r.Origin)
		}
	}
	// Output:
	// deny read   /home/me/.ssh             glob=false default: credential store (~/.ssh: SSH private keys)
	// deny read   /home                     glob=false settings.json:4 filesystem.denyRead[0]
	// deny read   /home/me/proj/**/.env     glob=true  settings.json:4 filesystem.denyRead[1]
	// allow read  /home/me/proj             glob=false settings.json:5 filesystem.allowRead[0]
	// allow write /home/me/proj             glob=false settings.json:6 filesystem.allowWrite[0]
	// deny write  /home/me/proj/go.sum      glob=false flag --deny-write
}

func ExampleParse_error() {
	_, err := policy.Parse("settings.json", []byte(`{
  "network": {"allowedDomains": ["https://github.com"]}
}`))
	var e *policy.Error
	if errors.As(err, &e) {
		fmt.Println("moat: error:", e)
		fmt.Println("moat: hint:", e.Hint())
		fmt.Println(errors.Is(err, policy.ErrDomain))
	}
	// Output:
	// moat: error: settings.json:2:34: network.allowedDomains[0]: domain pattern "https://github.com" is a URL
	// moat: hint: drop the scheme and any path: write just the host, e.g. "example.com"
	// true
}
