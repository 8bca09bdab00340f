package policy

// Access is what the answer to a robots.txt fetch means for crawlers
// (RFC 9309 §2.3.1), once redirects have been followed.
type Access uint8

// The three meanings of a robots.txt fetch's status.
const (
	// Rules: a 2xx answer; the body's rules apply (§2.3.1.1).
	Rules Access = iota
	// Unavailable: a 4xx answer other than 429; there is no robots.txt and
	// crawlers may fetch anything (§2.3.1.3). Redirects that cannot be
	// followed to an end mean the same (§2.3.1.2).
	Unavailable
	// Unreachable: a 5xx or 429 answer, or a status with no meaning here
	// (1xx, an unfollowed 3xx, out of range); crawlers must assume a
	// complete disallow until a copy arrives (§2.3.1.4).
	Unreachable
)

// String returns "rules", "unavailable" or "unreachable".
func (a Access) String() string {
	switch a {
	case Rules:
		return "rules"
	case Unavailable:
		return "unavailable"
	}
	return "unreachable"
}

// StatusAccess maps the final HTTP status code of a robots.txt fetch to
// what it means for crawlers. Every reader of robots.txt in this module
// (the guard's fetches, the command line) maps statuses through it.
func StatusAccess(code int) Access {
	switch {
	case code >= 200 && code < 300:
		return Rules
	case code >= 400 && code < 500 && code != 429:
		return Unavailable
	}
	return Unreachable
}

// FromStatus returns the rules that the answer to a robots.txt fetch
// (its final status code and body) gives, and what the answer means: the
// parsed body for a 2xx answer, and no rules otherwise, where the Access
// says whether that means "everything allowed" (Unavailable) or "nothing
// allowed" (Unreachable). It is the counterpart of temoto/robotstxt's
// FromStatusAndBytes.
func FromStatus(code int, body []byte) (*Robots, Access) {
	a := StatusAccess(code)
	if a != Rules {
		body = nil
	}
	return Parse(body), a
}
