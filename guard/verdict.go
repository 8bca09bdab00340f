package guard

import (
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
)

// Request is what the Engine needs to know about one HTTP request. The
// net/http Handler fills it from the *http.Request; the Caddy module fills it
// from what Caddy knows (the original URI before rewrites, the client_ip
// variable, the server as Origin).
type Request struct {
	// Scheme is "http" or "https"; empty means "http".
	Scheme string
	// Host is the Host header of the request, port included when present.
	// Together with Scheme and Port it names the site whose robots.txt
	// applies: its name is lower-cased and loses trailing dots, and its
	// port counts only when Port is unknown.
	Host string
	// Port is the port the request came in on (the server's own), which
	// the client cannot choose; 0 when unknown. Handler fills it from
	// http.LocalAddrContextKey. With it, a client that writes other ports
	// into its Host header still reaches one site, one robots.txt and one
	// Crawl-delay budget.
	Port int
	// Target is the request-target as the client sent it, before any
	// rewrite: the escaped path plus "?query" when a query is present.
	// Empty means "/".
	Target string
	// UserAgent is the User-Agent header.
	UserAgent string
	// ClientIP is the client's address, "ip" or "ip:port", as resolved by a
	// trusted-proxy aware layer. It is parsed when a Crawl-delay applies,
	// a claim is verified, or bans are in use.
	ClientIP string
	// Method is the request method; "" means GET. Only GET and HEAD
	// requests can spring a trap.
	Method string
	// SecFetchSite and SecFetchDest are the request's Sec-Fetch-Site and
	// Sec-Fetch-Dest headers. A browser that fetches a trap as a
	// sub-resource (an <img> someone put on a page) or from another site
	// says so in them, and is not banned for it: only a document fetch
	// from the site itself, or from no page at all, is.
	SecFetchSite, SecFetchDest string
	// SecPurpose is the request's Sec-Purpose header (or, without one,
	// Purpose): "prefetch" for a speculative fetch a browser makes on its
	// own. With trap_links static such a fetch never bans.
	SecPurpose string
	// Evidence is what the request's other headers say of the browser
	// its User-Agent names (classify.UndeclaredRules read it): the front
	// ends fill it from the header unless bots.undeclared is off; left
	// unread, no rule applies. Its HTTPS is taken from Scheme.
	Evidence classify.Evidence
	// LicenseToken is the token of the request's Authorization: License
	// header (RSL 1.0), "" for none: RequestOf and the Handler read it
	// from the header when licences are on. Content whose licence names a
	// licence server passes a bot only with a token that server verifies
	// (an Engine of WithOfflineLicenses asks no server: any token passes,
	// unchecked).
	LicenseToken string

	header http.Header // the request's header (RequestOf), read only in rare cases
	peer   string      // the connection's remote address (RequestOf)

	addr     netip.Addr // ClientIP parsed, once (Engine.clientAddr)
	addrDone bool
	key      limit.Client // ClientIP as a limiter key, once made (Engine.clientKey)
	keyDone  bool
	at       int64 // the clock when the decision first read it, Unix ns (Engine.clock); 0 before
	// Signed holds what a Web Bot Auth signature covers when the request
	// carries one and VerifyConfig.WebBotAuth is on (see SignedRequest);
	// nil otherwise.
	Signed *identity.SignedRequest
	// Origin is the handler that serves the site. The default robots.txt
	// source sends it a virtual GET /robots.txt. It may be nil when another
	// source is configured.
	Origin http.Handler
}

// Action is what the Engine decided to do with a request.
type Action uint8

// The three actions.
const (
	// Allow passes the request to the next handler.
	Allow Action = iota
	// Deny answers 403 Forbidden: robots.txt disallows the path for the bot.
	Deny
	// Throttle answers 429 Too Many Requests with Retry-After: the bot is
	// faster than its group's Crawl-delay.
	Throttle
)

// String returns "allow", "deny" or "throttle", usable as a metric label.
func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Throttle:
		return "throttle"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// Reason says why an Action was chosen. Its string forms are a small fixed
// set, usable as a metric label.
type Reason uint8

// The reasons of a Verdict.
const (
	// ReasonNotBot: the client is not classified as a bot.
	ReasonNotBot Reason = iota
	// ReasonRobotsTxt: the request is for /robots.txt, always allowed.
	ReasonRobotsTxt
	// ReasonInternal: the request is the Engine's own robots.txt fetch.
	ReasonInternal
	// ReasonAllowed: robots.txt allows the path for the bot.
	ReasonAllowed
	// ReasonDisallowed: robots.txt disallows the path as sent.
	ReasonDisallowed
	// ReasonDisallowedDecoded: robots.txt disallows the decoded view of the
	// path (percent-decoded, dot-segments removed, slashes collapsed).
	ReasonDisallowedDecoded
	// ReasonUnreachable: the site's robots.txt is unreachable and
	// on_unreachable is "disallow".
	ReasonUnreachable
	// ReasonCrawlDelay: the bot is faster than its group's Crawl-delay.
	ReasonCrawlDelay
	// ReasonBadTarget: the request-target has no path the guard can judge
	// (the asterisk form, an opaque URI); bots are refused such targets.
	ReasonBadTarget
	// ReasonNewSiteRate: the site's robots.txt is not fetched yet because
	// too many new sites came at once; the bot is told to retry (429).
	ReasonNewSiteRate
	// ReasonSpoofed: the User-Agent names a crawler operator whose
	// published addresses the client's is not among (see
	// VerifyConfig.OnSpoofed).
	ReasonSpoofed
	// ReasonTrap: the path is a trap (Config.Traps.Paths) that robots.txt
	// disallows for every bot; the client is banned.
	ReasonTrap
	// ReasonBanned: the client is banned for ignoring robots.txt.
	ReasonBanned
	// ReasonTrapUnattributed: the path is under a trap that robots.txt
	// disallows for every bot, without the token of the requesting
	// client's own trap link (trap_links client): refused, nobody banned.
	ReasonTrapUnattributed
	// ReasonContentSignal: robots.txt allows the path, but the group's
	// Content-Signal or Content-Usage line says no to the documented
	// purpose of the crawler the User-Agent names (SEMANTICS.md §8a).
	ReasonContentSignal
	// ReasonUnknownSite: the request's host is none of the sites the
	// decision service protects (robots_txt.origin with site_names), so no
	// robots.txt applies and bots are refused.
	ReasonUnknownSite
	// ReasonPersonAgent: an agent that fetches for a person (a link
	// preview, a user-triggered fetch, a feed reader: Verdict.Class),
	// verified as its operator's or one no operator vouches for (a
	// person's own device), judged only by a group that names it, and
	// the site's robots.txt has none.
	ReasonPersonAgent
	// ReasonSignatureReplayed: the request's Web Bot Auth signature
	// verifies, but its nonce was seen in another request within the
	// signature's window: a replay, answered 429 (sign again with a
	// fresh nonce), as draft-ietf-webbotauth-httpsig-protocol-01 allows.
	ReasonSignatureReplayed
	// ReasonBadSignature: the request claims a signing agent (it sends
	// Signature-Agent, or its User-Agent names an operator with signature
	// agents), and its signature headers cannot be read
	// (identity.ErrMalformed): answered 400, as the draft allows.
	ReasonBadSignature
	// ReasonLicense: robots.txt allows the path, and a licence of the
	// site's robots.txt (RSL 1.0) covers it, whose licence server issues
	// tokens, and the bot sent none, or one that does not verify:
	// answered 401 with a WWW-Authenticate: License challenge (402 for
	// a licence that asks payment and no token).
	ReasonLicense
	// ReasonLicenseUnavailable: as ReasonLicense, but the token could not
	// be checked now (the licence server did not answer): 503.
	ReasonLicenseUnavailable
	// ReasonLicenseUsage: robots.txt allows the path, but none of the
	// licences of the content (RSL 1.0) grants the documented purpose of
	// the crawler the User-Agent names (Crawler): its <prohibits
	// type="usage"> covers it, or its <permits type="usage"> does not;
	// answered 403, token or not, with the Link to the terms.
	ReasonLicenseUsage
)

var reasonNames = [...]string{
	ReasonNotBot:             "not_bot",
	ReasonRobotsTxt:          "robots_txt",
	ReasonInternal:           "internal_fetch",
	ReasonAllowed:            "allowed",
	ReasonDisallowed:         "disallowed",
	ReasonDisallowedDecoded:  "disallowed_decoded",
	ReasonUnreachable:        "unreachable",
	ReasonCrawlDelay:         "crawl_delay",
	ReasonBadTarget:          "bad_target",
	ReasonNewSiteRate:        "new_site_rate",
	ReasonSpoofed:            "spoofed",
	ReasonTrap:               "trap",
	ReasonBanned:             "banned",
	ReasonTrapUnattributed:   "trap_unattributed",
	ReasonContentSignal:      "content_signal",
	ReasonUnknownSite:        "unknown_site",
	ReasonPersonAgent:        "person_agent",
	ReasonSignatureReplayed:  "signature_replayed",
	ReasonBadSignature:       "bad_signature",
	ReasonLicense:            "license",
	ReasonLicenseUnavailable: "license_unavailable",
	ReasonLicenseUsage:       "license_usage",
}

// String returns the reason in snake_case, e.g. "disallowed".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Verdict is the Engine's decision for one request.
type Verdict struct {
	// Action is what the rules ask for. In dry-run mode it is still the
	// decided action; see Enforced.
	Action Action
	// Reason says why.
	Reason Reason
	// DryRun reports that the Engine is in dry-run mode: the request must
	// pass whatever Action says.
	DryRun bool
	// Bot reports whether the client was classified as a bot.
	Bot bool
	// Verification is the verdict on the crawler operator the User-Agent
	// names, when Config.Verify is on: identity.None when it names none
	// (or verification is off). See Operator.
	Verification identity.Verdict
	// Method says how a Verified claim was proved.
	Method identity.Method
	// Site is the scheme and host whose robots.txt applied, e.g.
	// "https://example.com"; empty for exempt requests.
	Site string
	// SiteLabel is Site when the configuration names the site's host
	// (Config.RobotsTxt.SiteNames: the Caddy module's site addresses), "_other" for
	// any other site, "" with no site: a label of bounded values for
	// metrics, which tells the blocks of a server apart.
	SiteLabel string
	// Group is the user-agent token of the applied group as written in
	// robots.txt, "*" for the global group, "" when none applies.
	Group string
	// Rule is the deciding Disallow line for Deny verdicts with
	// ReasonDisallowed or ReasonDisallowedDecoded; nil otherwise. It must not
	// be modified.
	Rule *policy.Rule
	// CrawlDelay is the Crawl-delay of the applied group, 0 when none.
	CrawlDelay time.Duration
	// CrawlDelayLine is the robots.txt line of that Crawl-delay, 0 when
	// none; a Throttle verdict's log line names it.
	CrawlDelayLine int
	// RetryAfter is the real remaining wait of a Throttle verdict.
	RetryAfter time.Duration
	// Operator is the claimed operator Verification is about ("" for none).
	Operator string
	// BanUntil is when the client's ban ends (Unix ns), for ReasonTrap and
	// ReasonBanned verdicts.
	BanUntil int64
	// Class is "unfurler" or "fetcher" when the User-Agent names an agent
	// that fetches for a person (classify.Info.Class), "" otherwise.
	Class string
	// License is the URL of the RSL document whose licence covers the
	// content a bot asked for (a License line of the site's robots.txt):
	// every answer to the bot carries it in a Link header. LicenseServer
	// is the licence server that issues its tokens; LicenseError is the
	// challenge's error for ReasonLicense ("" for no token, or
	// "invalid_token") and ReasonLicenseUnavailable ("server_error"), and
	// LicenseDetail why; LicensePayment reports a licence that asks
	// payment (402, not 401, without a token).
	License, LicenseServer, LicenseError, LicenseDetail string
	LicensePayment                                      bool
	// Undeclared names the rule by which the request's other headers
	// contradict the browser its User-Agent names (classify.Rule.Name),
	// "" for none: an undeclared bot, judged by the "*" group (and in dry
	// run with bots.undeclared report).
	Undeclared string
	// Crawler is the registry's entry of the crawler the User-Agent
	// names (its documented purpose), nil for none or with content_signals
	// and licenses off. Signal is the Content-Signal or Content-Usage line that denied
	// it (ReasonContentSignal): its Line, and Signal.Text(Crawler.Purpose)
	// as written, e.g. "Content-Signal ai-train=no".
	Crawler *identity.CrawlerPurpose
	Signal  *policy.SignalRule
}

// ActionName names what happened to the request, for logs, metrics and
// placeholders: "allow", "deny" or "throttle", and in dry-run mode
// "dry_run_deny" or "dry_run_throttle" for the requests that enforcement
// would have stopped.
func (v Verdict) ActionName() string {
	switch {
	case v.Action == Allow:
		return "allow"
	case v.DryRun && v.Action == Deny:
		return "dry_run_deny"
	case v.DryRun && v.Action == Throttle:
		return "dry_run_throttle"
	}
	return v.Action.String()
}

// Enforced reports whether the request must be stopped: the action is Deny
// or Throttle and the Engine is not in dry-run mode.
func (v Verdict) Enforced() bool { return v.Action != Allow && !v.DryRun }

// StatusCode returns the HTTP status of the verdict: 403 for Deny (400 for
// ReasonBadSignature), 429 for Throttle and 200 for Allow.
func (v Verdict) StatusCode() int {
	switch v.Action {
	case Deny:
		switch {
		case v.Reason == ReasonBadSignature:
			return http.StatusBadRequest
		case v.Reason == ReasonLicense && v.LicensePayment && v.LicenseError == "":
			return http.StatusPaymentRequired
		case v.Reason == ReasonLicense:
			return http.StatusUnauthorized
		case v.Reason == ReasonLicenseUnavailable:
			return http.StatusServiceUnavailable
		}
		return http.StatusForbidden
	case Throttle:
		return http.StatusTooManyRequests
	}
	return http.StatusOK
}

// RetryAfterSeconds returns RetryAfter rounded up to whole seconds, the value
// of the Retry-After header of a Throttle verdict. It is at least 1 for a
// Throttle verdict.
func (v Verdict) RetryAfterSeconds() int64 {
	s := int64((v.RetryAfter + time.Second - 1) / time.Second)
	if s < 1 && v.Action == Throttle {
		s = 1
	}
	return s
}

// Message returns the short text explaining a Deny or Throttle verdict, e.g.
// "Disallowed by robots.txt line 12 for GPTBot".
func (v Verdict) Message() string { return string(v.AppendMessage(nil)) }

// AppendMessage appends Message to b; it lets callers avoid an allocation.
func (v Verdict) AppendMessage(b []byte) []byte {
	switch v.Action {
	case Deny:
		switch v.Reason {
		case ReasonUnreachable:
			return append(b, "Disallowed: robots.txt of this site is unreachable"...)
		case ReasonBadTarget:
			return append(b, "Disallowed: bots must send a request-target with a path"...)
		case ReasonUnknownSite:
			return append(b, "Disallowed: this host is not a site this guard protects"...)
		case ReasonBadSignature:
			return append(b, "Bad request: the Web Bot Auth signature headers cannot be read"...)
		case ReasonTrap, ReasonBanned, ReasonTrapUnattributed:
			if v.Reason != ReasonBanned {
				b = append(b, "Disallowed: robots.txt disallows this path for every bot"...)
				if v.BanUntil == 0 {
					return b
				}
				b = append(b, ". "...)
			}
			b = append(b, "This address is banned until "...)
			b = time.Unix(0, v.BanUntil).UTC().AppendFormat(b, time.RFC3339)
			return append(b, " for ignoring this site's robots.txt"...)
		case ReasonContentSignal:
			// "Content-Signal ai-train=no (robots.txt line 4) applies
			// to GPTBot, a training crawler"
			if v.Crawler == nil || v.Signal == nil {
				return append(b, "Disallowed by the Content-Signal of robots.txt"...)
			}
			b = append(b, v.Signal.Text(v.Crawler.Purpose)...)
			b = append(b, " (robots.txt line "...)
			b = strconv.AppendInt(b, int64(v.Signal.Line), 10)
			b = append(b, ") applies to "...)
			{
				b = append(b, v.Crawler.Token...)
				b = append(b, ", "...)
				b = append(b, v.Crawler.Kind...)
			}
			return b
		case ReasonLicense, ReasonLicenseUnavailable, ReasonLicenseUsage:
			return v.appendLicenseMessage(b)
		case ReasonSpoofed:
			b = append(b, "Disallowed: the User-Agent names a crawler of "...)
			b = append(b, v.Operator...)
			b = append(b, ", but this request does not come from an address that "...)
			b = append(b, v.Operator...)
			return append(b, " publishes for its crawlers"...)
		}
		b = append(b, "Disallowed by robots.txt"...)
		if v.Rule != nil {
			b = append(b, " line "...)
			b = strconv.AppendInt(b, int64(v.Rule.Line), 10)
		}
		b = append(b, " for "...)
		b = append(b, v.Group...)
		if v.Reason == ReasonDisallowedDecoded {
			b = append(b, " (decoded path)"...)
		}
		b = v.appendUndeclared(b)
	case Throttle:
		if v.Reason == ReasonSignatureReplayed {
			return append(b, "Signature replayed: its nonce was seen before; sign each request with a fresh nonce"...)
		}
		if v.Reason == ReasonNewSiteRate {
			b = append(b, "Too many new sites at once: retry after "...)
			b = strconv.AppendInt(b, v.RetryAfterSeconds(), 10)
			return append(b, " s"...)
		}
		b = append(b, "Crawl-delay of robots.txt for "...)
		b = append(b, v.Group...)
		b = v.appendUndeclared(b)
		b = append(b, " exceeded: retry after "...)
		b = strconv.AppendInt(b, v.RetryAfterSeconds(), 10)
		b = append(b, " s"...)
	default:
		b = append(b, "Allowed"...)
	}
	return b
}

// appendUndeclared appends, for an undeclared bot, why it is judged as
// one: " (an undeclared bot: its User-Agent names a browser, and it sent
// no Accept-Language)".
func (v Verdict) appendUndeclared(b []byte) []byte {
	if v.Undeclared == "" {
		return b
	}
	b = append(b, " (an undeclared bot: its User-Agent names a browser, and "...)
	for _, r := range classify.UndeclaredRules {
		if r.Name == v.Undeclared {
			b = append(b, "it sent no "...)
			b = append(b, r.Header...)
			return append(b, ')')
		}
	}
	b = append(b, "rule "...)
	b = append(b, v.Undeclared...)
	return append(b, ')')
}

// appendLicenseMessage appends the text of a licence's refusal: "Licensed
// content: send Authorization: License with a token of <server>",
// LicenseDetail, or for ReasonLicenseUsage "Licensed content: its licence
// grants no ai-train use to GPTBot, a training crawler", then the terms'
// URL.
func (v Verdict) appendLicenseMessage(b []byte) []byte {
	b = append(b, "Licensed content: "...)
	switch {
	case v.Reason == ReasonLicenseUsage && v.Crawler != nil:
		b = append(b, "its licence grants no "...)
		b = append(b, v.Crawler.Purpose.String()...)
		b = append(b, " use to "...)
		b = append(b, v.Crawler.Token...)
		b = append(b, ", "...)
		b = append(b, v.Crawler.Kind...)
	case v.Reason == ReasonLicenseUsage:
		b = append(b, "its licence grants no use of this kind"...)
	case v.LicenseDetail != "":
		b = append(b, v.LicenseDetail...)
	default:
		b = append(b, "send Authorization: License with a token of "...)
		b = append(b, v.LicenseServer...)
	}
	b = append(b, " (terms: "...)
	b = append(b, v.License...)
	return append(b, ')')
}
