module github.com/moat-sandbox/moat

go 1.26.8

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/landlock-lsm/go-landlock v0.11.0
	github.com/rogpeppe/go-internal v1.16.0
	github.com/tailscale/hujson v0.0.0-20260727124030-b80ff77dac4f
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.77
)

require golang.org/x/tools v0.26.0 // indirect
