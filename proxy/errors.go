package proxy

import "errors"

// Errors returned by the Serve methods.
var (
	ErrServerClosed = errors.New("proxy: server closed")
	ErrNoCheck      = errors.New("proxy: Server.Check is nil")
)

// Parse errors; each refusal names the object after them with %w.
var (
	errBadHost    = errors.New("malformed host")
	errBadRequest = errors.New("malformed request")
	errBadTLS     = errors.New("malformed TLS ClientHello")
	errTooLong    = errors.New("too long")
)
