package policy

import (
	"strings"
	"time"
)

// keyKind classifies the key of a directive line.
type keyKind uint8

// keySpelling is a key prefix that selects a directive, as Google's parser
// accepts them (SEMANTICS.md §2). typo marks misspellings.
type keySpelling struct {
	prefix string
	kind   keyKind
	typo   bool
}

// keySpellings is checked in order; the first prefix that matches wins.
var keySpellings = [...]keySpelling{
	{"user-agent", keyUserAgent, false},
	{"useragent", keyUserAgent, true},
	{"user agent", keyUserAgent, true},
	{"allow", keyAllow, false},
	{"disallow", keyDisallow, false},
	{"dissallow", keyDisallow, true},
	{"dissalow", keyDisallow, true},
	{"disalow", keyDisallow, true},
	{"diasllow", keyDisallow, true},
	{"disallaw", keyDisallow, true},
	{"sitemap", keySitemap, false},
	{"site-map", keySitemap, true},
	{"crawl-delay", keyCrawlDelay, false},
	{"crawldelay", keyCrawlDelay, true},
	{"crawl delay", keyCrawlDelay, true},
	{"content-signal", keyContentSignal, false},
	{"content signal", keyContentSignal, true},
	{"content-usage", keyContentUsage, false},
	{"license", keyLicense, false},
	{"licence", keyLicense, true},
}

// knownOther lists records that have no effect on matching but are common
// enough not to be reported as unknown.
var knownOther = [...]string{"host", "clean-param", "noindex", "nofollow", "request-rate", "visit-time", "cache-delay"}

// classifyKey returns the directive a key selects and the canonical
// spelling it was matched against ("" for other records).
func classifyKey(key string) (keyKind, keySpelling) {
	for _, s := range keySpellings {
		if len(key) >= len(s.prefix) && strings.EqualFold(key[:len(s.prefix)], s.prefix) {
			return s.kind, s
		}
	}
	return keyOther, keySpelling{}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' || c == '\n'
}

func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// splitKeyValue splits a comment-free, trimmed line into key and value
// (SEMANTICS.md §2). Without a colon, exactly two whitespace-separated words
// are accepted as key and value, as Google does.
func splitKeyValue(line string) (key, value string, ok, noColon bool) {
	sep := strings.IndexByte(line, ':')
	if sep < 0 {
		ws := strings.IndexAny(line, " \t")
		if ws < 0 {
			return "", "", false, false
		}
		rest := line[ws:]
		rest = strings.TrimLeft(rest, " \t")
		if strings.ContainsAny(rest, " \t") {
			return "", "", false, false
		}
		key, value = trimSpace(line[:ws]), rest
		return key, value, key != "", true
	}
	key = trimSpace(line[:sep])
	if key == "" {
		return "", "", false, false
	}
	return key, trimSpace(line[sep+1:]), true, false
}

// agentToken extracts the product token of a user-agent value
// (SEMANTICS.md §4): "*" (or "*" and whitespace) is the global group;
// otherwise the leading run of [A-Za-z0-9_-], digits kept.
func agentToken(v string) (tok string, global bool) {
	if v == "*" || len(v) > 1 && v[0] == '*' && isSpace(v[1]) {
		return "*", true
	}
	i := 0
	for i < len(v) && isTokenByte(v[i]) {
		i++
	}
	return v[:i], false
}

// isTokenByte reports whether c may appear in a product token: [A-Za-z0-9_-].
func isTokenByte(c byte) bool {
	return charClass[c]&classToken != 0
}

// parseDelay parses a Crawl-delay value in decimal seconds ("10", "0.5").
// Negative or malformed values are rejected.
func parseDelay(v string) (time.Duration, bool) {
	intPart, frac, hasDot := strings.Cut(v, ".")
	if intPart == "" && frac == "" {
		return 0, false
	}
	for _, s := range []string{intPart, frac} {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
		}
	}
	if hasDot && frac == "" && intPart == "" {
		return 0, false
	}
	const maxSeconds = 1 << 32 // about 136 years; anything larger is clamped
	var secs int64
	for i := 0; i < len(intPart); i++ {
		secs = secs*10 + int64(intPart[i]-'0')
		if secs > maxSeconds {
			secs = maxSeconds
			break
		}
	}
	var nanos int64
	scale := int64(100_000_000)
	for i := 0; i < len(frac) && scale > 0; i++ {
		nanos += int64(frac[i]-'0') * scale
		scale /= 10
	}
	return time.Duration(secs)*time.Second + time.Duration(nanos), true
}

func canonicalName(k keyKind) string {
	switch k {
	case keyUserAgent:
		return "User-agent"
	case keyAllow:
		return "Allow"
	case keyDisallow:
		return "Disallow"
	case keySitemap:
		return "Sitemap"
	case keyCrawlDelay:
		return "Crawl-delay"
	case keyContentSignal:
		return "Content-Signal"
	case keyContentUsage:
		return "Content-Usage"
	case keyLicense:
		return "License"
	}
	return ""
}
