package identity

import (
	"errors"
	"fmt"

	"github.com/robotsguard/robotsguard/internal/sfv"
)

// Errors of signature verification: VerifySignature's, and ErrReplayed,
// which a Verifier adds for a nonce it has seen in another verified
// signature of the same key still within its window.
var (
	ErrNoSignature  = errors.New("no Signature-Input with tag web-bot-auth")
	ErrUnknownKey   = errors.New("unknown key id")
	ErrBadSignature = errors.New("signature does not verify")
	ErrReplayed     = errors.New("signature replayed: its nonce was seen before")
	// ErrMalformed is matched (errors.Is) by the errors of signature
	// headers that cannot be read: a header that is not a structured
	// field; a web-bot-auth signature without created, expires or keyid,
	// with a covered component that is not a string, without its
	// Signature member (or one that is not a byte sequence), or covering
	// a Signature-Agent member that is not there. The draft lets an origin
	// answer such a request 400. This verifier's own bounds (the bytes of
	// a header, the number of covered components) are not client errors
	// and do not match it.
	ErrMalformed = errors.New("malformed signature headers")
)

// malformedError is an error of unreadable signature headers: it matches
// ErrMalformed and reads as its own text.
type malformedError struct{ msg string }

func (e *malformedError) Error() string        { return e.msg }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// malformed returns a malformedError of the formatted text.
func malformed(format string, args ...any) error {
	return &malformedError{fmt.Sprintf(format, args...)}
}

// headerError is the error of a signature header that did not parse: one
// that matches ErrMalformed, unless the header is only past a bound of
// the structured-field parser (a client error for nobody).
func headerError(name string, err error) error {
	var se *sfv.Error
	if errors.As(err, &se) && se.Bound {
		return fmt.Errorf("%s: %w", name, err)
	}
	return malformed("%s: %v", name, err)
}
