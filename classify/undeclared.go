package classify

import (
	"net/http"
	"strings"

	"github.com/robotsguard/robotsguard/internal/settings"
)

// Values of Config.Undeclared.
const (
	// UndeclaredOn judges an undeclared bot as a bot, by the "*" group.
	UndeclaredOn = "on"
	// UndeclaredOff judges every header that names a browser as the
	// browser's, whatever the request's other headers say.
	UndeclaredOff = "off"
	// UndeclaredReport judges an undeclared bot as a bot in dry run: its
	// requests pass, and what would have stopped them is logged,
	// counted and reported, so that an operator can try the rules on
	// live traffic first.
	UndeclaredReport = "report"
	// ClassUndeclared is the class of an undeclared bot in the report,
	// the dashboard and the audit (beside Unfurler, Fetcher, Reader).
	ClassUndeclared = "undeclared"
)

// checkUndeclared sets an empty *v to UndeclaredOn and refuses an unknown
// value.
func checkUndeclared(v *string) error {
	switch *v {
	case "":
		*v = UndeclaredOn
	case UndeclaredOn, UndeclaredOff, UndeclaredReport:
	default:
		return settings.Errorf("bots", "undeclared", "must be %q, %q or %q, got %q", UndeclaredOn, UndeclaredOff, UndeclaredReport, *v)
	}
	return nil
}

// Evidence is what a request's other headers and its connection say of
// the browser its User-Agent names: the headers that every release of
// that browser since a version sends on every request it makes. The front
// ends fill it from the request's header (package guard); a log that
// carries no headers leaves it unread, and then no rule applies.
type Evidence struct {
	// Read reports that the headers below were read; false means they
	// are unknown (a log, a proxy that forwards only some headers).
	Read bool
	// HTTPS reports a request that came over TLS: browsers send fetch
	// metadata and client hints to secure origins only.
	HTTPS bool
	// AcceptLanguage, SecCHUA and SecFetchMode report the presence of
	// the Accept-Language, Sec-CH-UA and Sec-Fetch-Mode headers.
	AcceptLanguage, SecCHUA, SecFetchMode bool
	// Navigate reports a navigation by its own word (Sec-Fetch-Mode:
	// navigate); WebSocket a WebSocket handshake (Upgrade: websocket).
	Navigate, WebSocket bool
}

// EvidenceOf returns the Evidence of a request's header h (read; its
// HTTPS is the caller's to set). It does not allocate.
func EvidenceOf(h http.Header) Evidence {
	mode, up := h["Sec-Fetch-Mode"], h["Upgrade"]
	return Evidence{Read: true, AcceptLanguage: len(h["Accept-Language"]) > 0,
		SecCHUA: len(h["Sec-Ch-Ua"]) > 0, SecFetchMode: len(mode) > 0,
		Navigate: len(mode) > 0 && mode[0] == "navigate", WebSocket: len(up) > 0 && strings.EqualFold(up[0], "websocket")}
}

// Browser families a User-Agent header can name, for the rules.
const (
	familyNone uint8 = iota
	familyChrome
	familyFirefox
	familySafari
	familyEdge // EdgeHTML, before Edge moved to Chromium ("Edge/18")
)

// named is the browser a header names, as the undeclared rules read it.
type named struct {
	family uint8
	// major is the browser's major version (Chrome's for Chromium-based
	// ones: Edge's "Edg/" and Opera's "OPR/" follow it).
	major int
	// plain reports a header of that browser and nothing else: only the
	// tokens its own releases write, no WebView mark ("; wv)"), no other
	// product (an app, a fork), so that a rule about what the browser
	// sends is not applied to software that embeds or imitates it.
	plain bool
}

// Rule is one rule of the undeclared bots: a header that a browser sends
// on every request, whose absence contradicts a User-Agent that names
// it. Rules are data: each says which headers it applies to and the
// evidence that no real browser is refused by it.
type Rule struct {
	// Name names the rule in logs, metrics, the report and the 403 body.
	Name string
	// Header is the header whose absence the rule reads.
	Header string
	// since says which headers it applies to: those that name one of
	// its families at its major version or later (Chrome's version for
	// Chromium-based browsers). plain limits it to plain headers (see
	// named), https to requests over TLS, navigations to requests that
	// say they are one (Sec-Fetch-Mode: navigate), and notWebSocket
	// leaves WebSocket handshakes out.
	since        []since
	plain        bool
	https        bool
	navigations  bool
	notWebSocket bool
	// Evidence says which browsers send Header, since when, on which
	// requests, and what was measured (docs/undeclared.md).
	Evidence string
}

// UndeclaredRules are the rules, in the order they are tried. A rule is
// added only with measurements that no real browser is refused by it
// (docs/undeclared.md, integration_test.TestUndeclaredRealBrowsers):
// "Accept: */*" exactly (every fetch() and script of Chromium sends it)
// and text/html without Upgrade-Insecure-Requests (every <link
// rel=prefetch>) were measured and are not rules; neither is HTTP/1.x
// over TLS, which browsers behind a TLS-inspecting proxy use. Chromium
// sends no Sec-CH-UA on CORS preflights, worker, shared-worker and
// service-worker scripts, their own fetches and WebSocket handshakes, and
// no Sec-Fetch-Mode on WebSocket handshakes: the rules leave those out.
var UndeclaredRules = []*Rule{
	{
		Name: "no-accept-language", Header: "Accept-Language",
		since: []since{{familyChrome, 0}, {familyFirefox, 0}, {familySafari, 0}, {familyEdge, 0}}, plain: true,
		Evidence: "Chrome, Firefox, Safari and Edge send Accept-Language on every request they make; measured on real " +
			"Chromium 156 and Firefox ESR 153 over http and https: navigations, sub-resources, fonts, media ranges, fetch(), " +
			"XHR, beacons, EventSource, prefetch, CORS preflights, workers, shared workers, service workers and their " +
			"fetches, WebSocket handshakes: none without it (integration_test.TestUndeclaredRealBrowsers). Plain headers " +
			"only: an app's WebView (\"; wv)\") or embedded engine may fetch through the app's own HTTP stack with its " +
			"header (Android's shouldInterceptRequest), without the browser's other headers",
	},
	{
		Name: "no-fetch-metadata", Header: "Sec-Fetch-Mode",
		since: []since{{familyChrome, 80}, {familyFirefox, 90}}, plain: true, https: true, notWebSocket: true,
		Evidence: "fetch metadata is sent to secure origins since Chrome 80 and Firefox 90; measured over https on every " +
			"kind of request above: only Chromium's WebSocket handshake lacks it (left out)",
	},
	{
		Name: "no-client-hints", Header: "Sec-CH-UA",
		since: []since{{familyChrome, 89}}, plain: true, https: true, navigations: true,
		Evidence: "Chrome 89 and later (and Edge and Opera on its engine) send the Sec-CH-UA client hint on every " +
			"navigation to a secure origin (top-level, frames, forms, history); measured: every navigation of real " +
			"Chromium over https carried it, while preflights, workers and WebSocket handshakes do not (left out)",
	},
}

// since is a browser family and the first major version a rule reads.
type since struct {
	family uint8
	major  int
}

// applies reports whether r applies to the browser n names, over a
// request whose evidence is ev.
func (r *Rule) applies(n named, ev Evidence) bool {
	if r.https && !ev.HTTPS || r.plain && !n.plain || r.navigations && !ev.Navigate || r.notWebSocket && ev.WebSocket {
		return false
	}
	for _, s := range r.since {
		if s.family == n.family {
			return n.major >= s.major
		}
	}
	return false
}

// present reports whether ev says r's header was sent.
func (r *Rule) present(ev Evidence) bool {
	switch r.Header {
	case "Accept-Language":
		return ev.AcceptLanguage
	case "Sec-CH-UA":
		return ev.SecCHUA
	}
	return ev.SecFetchMode
}

// Undeclared returns the first rule by which the request's other headers
// (ev) contradict the browser its header names, nil when none does (the
// header names no browser, the evidence was not read, or it agrees). It
// does not allocate.
func (info *Info) Undeclared(ev Evidence) *Rule {
	if !ev.Read || info.named.family == familyNone {
		return nil
	}
	for _, r := range UndeclaredRules {
		if r.applies(info.named, ev) && !r.present(ev) {
			return r
		}
	}
	return nil
}

// nameBrowser reads the browser a header names (familyNone for none of
// the rules' families), with its major version and whether the header is
// plain.
func nameBrowser(ua string) named {
	var n named
	switch {
	case strings.Contains(ua, "Chrome/"):
		n.family, n.major = familyChrome, majorAfter(ua, "Chrome/")
	case strings.Contains(ua, "Firefox/"):
		n.family, n.major = familyFirefox, majorAfter(ua, "Firefox/")
	case strings.Contains(ua, "Edge/"):
		n.family, n.major = familyEdge, majorAfter(ua, "Edge/")
	case strings.Contains(ua, "Safari/") && strings.Contains(ua, "Version/"):
		n.family, n.major = familySafari, majorAfter(ua, "Version/")
	default:
		return n
	}
	n.plain = plainHeader(ua)
	return n
}

// majorAfter is the number that follows the first tok in ua, 0 for none.
func majorAfter(ua, tok string) int {
	i := strings.Index(ua, tok)
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range []byte(ua[i+len(tok):]) {
		if c < '0' || c > '9' || n > 10000 {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// plainTokens are the product tokens that browsers' own releases write
// (outside the comments).
var plainTokens = map[string]bool{"Mozilla": true, "AppleWebKit": true, "Chrome": true, "Safari": true, "Mobile": true,
	"Edg": true, "EdgA": true, "OPR": true, "Gecko": true, "Firefox": true, "Version": true}

// plainHeader reports whether every product token of ua (outside its
// comments) is a browser's own, and no comment marks a WebView.
func plainHeader(ua string) bool {
	if strings.Contains(ua, "; wv)") {
		return false // an Android WebView: an app's
	}
	depth := 0
	start := -1
	for i := 0; i <= len(ua); i++ {
		c := byte(' ')
		if i < len(ua) {
			c = ua[i]
		}
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth = max(depth-1, 0)
		case depth > 0:
		case c == ' ':
			if start >= 0 {
				tok, _, _ := strings.Cut(ua[start:i], "/")
				if !plainTokens[tok] {
					return false
				}
				start = -1
			}
		case start < 0:
			start = i
		}
	}
	return true
}
