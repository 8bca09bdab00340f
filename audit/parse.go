package audit

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/limit"
)

// The formats an access log can be read in.
const (
	// FormatAuto reads each file in the format its first line has: a JSON
	// object is Traefik's or Cloudflare's by the names of its fields, else
	// Caddy's; CloudFront's header or a tab-separated line that starts
	// with a date is FormatCloudFront, a line that starts with an ALB's
	// type and time FormatALB, one with an [RFC 3339 time] FormatEnvoy,
	// one with HAProxy's [accept date] FormatHAProxy, one whose second
	// field is an IP address FormatVhostCombined, anything else the
	// Common or Combined Log Format.
	FormatAuto = "auto"
	// FormatCaddy is Caddy's JSON access log (one object per line, the
	// request under "request", the time in "ts").
	FormatCaddy = "caddy"
	// FormatCombined is the Combined Log Format that nginx and Apache
	// write by default (and the Common Log Format, without its two last
	// fields; nginx's log_format with fields after the User-Agent too).
	FormatCombined = "combined"
	// FormatVhostCombined is the Combined Log Format with the virtual
	// host first: Apache's vhost_combined ("%v:%p %h ...") or "%v %h ...".
	FormatVhostCombined = "vhost_combined"
	// FormatTraefik is Traefik's JSON access log (accessLog.format: json).
	FormatTraefik = "traefik"
	// FormatCloudflare is Cloudflare's HTTP requests dataset as Logpush
	// (or Logpull) writes it in JSON, one object per line.
	FormatCloudflare = "cloudflare"
	// FormatHAProxy is HAProxy's HTTP log (option httplog), with or
	// without its syslog header.
	FormatHAProxy = "haproxy"
	// FormatEnvoy is Envoy's default access log format.
	FormatEnvoy = "envoy"
	// FormatCloudFront is CloudFront's standard (legacy) log.
	FormatCloudFront = "cloudfront"
	// FormatALB is an AWS Application Load Balancer's access log.
	FormatALB = "alb"
)

// Formats lists the formats Options.Format takes.
var Formats = []string{FormatAuto, FormatCaddy, FormatCombined, FormatVhostCombined, FormatTraefik, FormatCloudflare, FormatHAProxy, FormatEnvoy, FormatCloudFront, FormatALB}

// Entry is one request of an access log.
type Entry struct {
	// At is when the request was made (Unix ns).
	At int64
	// ClientIP is the client's address as the server logged it.
	ClientIP string
	// Method and Target are the request line's ("GET", "/a?b").
	Method, Target string
	// Host is the request's Host, "" when the format has none.
	Host string
	// HTTPS reports a request that came over TLS (Caddy's log says so).
	HTTPS bool
	// UserAgent is the User-Agent header, "" when absent or "-".
	UserAgent string
	// Status is the status the server answered with.
	Status int
	// Evidence is what the request's other headers say of the browser
	// its User-Agent names, for a log that carries them (Caddy's); unread
	// otherwise, and then no undeclared-bot rule applies.
	Evidence classify.Evidence
	// Authorization reports a request that carried an Authorization
	// header that may hold a licence token (RSL 1.0): Caddy logs it as
	// "REDACTED" (a value it shows must be of the License scheme). Its
	// value is not kept. It says something only where the log carries
	// the request's headers (Evidence.Read); elsewhere the token is
	// unknown.
	Authorization bool
}

// errSkip marks a line that is valid but not a request (a Caddy log line
// of another logger).
var errSkip = errors.New("not an access log line")

// parseCombined reads a Common or Combined Log Format line:
//
//	host ident user [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "referer" "user-agent"
//
// Substrings of line are kept in the Entry, so line must not change.
func parseCombined(line string) (Entry, error) {
	var e Entry
	sp := strings.IndexByte(line, ' ')
	if sp <= 0 {
		return e, errors.New("no client address")
	}
	e.ClientIP = line[:sp]
	if _, err := netip.ParseAddr(e.ClientIP); err != nil {
		// A host name (Apache's HostnameLookups) or "-": every such line
		// would share one client.
		return e, errors.New("client " + strconv.Quote(e.ClientIP[:min(len(e.ClientIP), 60)]) + " is not an IP address")
	}
	open := strings.IndexByte(line, '[')
	if open < 0 {
		return e, errors.New("no [time]")
	}
	end := strings.IndexByte(line[open:], ']')
	if end < 0 {
		return e, errors.New("no [time]")
	}
	at, err := parseCLFTime(line[open+1 : open+end])
	if err != nil {
		return e, err
	}
	e.At = at
	rest := strings.TrimLeft(line[open+end+1:], " ")
	reqLine, rest, ok := quoted(rest)
	if !ok {
		return e, errors.New("no quoted request line")
	}
	m, t, ok := requestLine(reqLine)
	if !ok {
		return e, errors.New("request line " + strconv.Quote(reqLine[:min(len(reqLine), 80)]) + " is not METHOD TARGET PROTOCOL")
	}
	e.Method, e.Target = m, t
	rest = strings.TrimLeft(rest, " ")
	sp = strings.IndexByte(rest, ' ')
	if sp < 0 {
		sp = len(rest)
	}
	if e.Status, _ = strconv.Atoi(rest[:sp]); e.Status < 100 || e.Status > 999 {
		return e, errors.New("no status")
	}
	// Common Log Format ends with the size; Combined goes on with the
	// referer and the User-Agent, quoted.
	rest = strings.TrimLeft(rest[sp:], " ")
	if sp = strings.IndexByte(rest, ' '); sp < 0 {
		return e, nil
	}
	rest = strings.TrimLeft(rest[sp:], " ")
	if _, rest, ok = quoted(rest); !ok {
		return e, nil
	}
	ua, _, ok := quoted(strings.TrimLeft(rest, " "))
	if !ok {
		return e, errors.New("the User-Agent field is not quoted")
	}
	if ua != "-" {
		e.UserAgent = unescape(ua)
	}
	return e, nil
}

// quoted reads a double-quoted field at the start of s (backslash escapes
// kept as written) and returns it and what follows.
func quoted(s string) (field, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", s, false
	}
	if i := strings.IndexByte(s[1:], '"') + 1; i > 0 && strings.IndexByte(s[1:i], '\\') < 0 {
		return s[1:i], s[i+1:], true // no escape: the first quote ends it
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return s[1:i], s[i+1:], true
		}
	}
	return "", s, false
}

// unescape undoes the escapes nginx (\xHH) and Apache (\" and \\) write
// into a quoted field; a field without a backslash is returned as it is.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'x':
			if i+2 < len(s) {
				if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
					b.WriteByte(byte(n))
					i += 2
					continue
				}
			}
			b.WriteString(`\x`)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte('\v')
		case 'b':
			b.WriteByte('\b')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// requestLine splits "GET /a HTTP/1.1" into method and target.
func requestLine(s string) (method, target string, ok bool) {
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 {
		return "", "", false
	}
	method, s = s[:sp], s[sp+1:]
	if sp = strings.LastIndexByte(s, ' '); sp > 0 && strings.HasPrefix(s[sp+1:], "HTTP/") {
		s = s[:sp]
	}
	if s == "" || strings.IndexByte(s, ' ') >= 0 {
		return "", "", false
	}
	return method, s, true
}

var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// minTime and maxTime bound a log's times (Unix ns): one outside them
// is no time the log was written at (a wrong clock, or bytes that are no
// time), and would wrap the nanosecond count (which ends in 2262). The
// Auditor bounds them further: none a day after it started. errTime is
// the reason of a time outside them.
var (
	minTime = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	errTime = errors.New("time out of range (1990 to a day after now)")
)

// parseCLFTime reads "10/Oct/2000:13:55:36 -0700" without allocating
// when it is one: a real date (no 31 February) in a zone within ±14:00,
// from minTime to maxTime.
func parseCLFTime(s string) (int64, error) {
	if len(s) != 26 || s[2] != '/' || s[6] != '/' || s[11] != ':' || s[14] != ':' || s[17] != ':' || s[20] != ' ' {
		return 0, badTime(s)
	}
	mon := -1
	for i, m := range months {
		if s[3:6] == m {
			mon = i
		}
	}
	day, year, hh, mm, ss, zh, zm := num(s[0:2]), num(s[7:11]), num(s[12:14]), num(s[15:17]), num(s[18:20]), num(s[22:24]), num(s[24:26])
	if mon < 0 || day < 1 || day > 31 || year < 0 || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60 || (s[21] != '+' && s[21] != '-') {
		return 0, badTime(s)
	}
	if zh < 0 || zm < 0 || zm > 59 || zh*60+zm > 14*60 {
		return 0, errors.New("bad time zone " + strconv.Quote(s[21:]) + " (beyond ±14:00)")
	}
	if year < 1989 || year > 2200 { // before UnixNano, which would wrap
		return 0, errTime
	}
	off := (zh*60 + zm) * 60
	if s[21] == '-' {
		off = -off
	}
	if day > monthDays[mon] && (mon != 1 || day > 29 || year%4 != 0 || year%100 == 0 && year%400 != 0) {
		return 0, badTime(s) // 31/Feb: no such day
	}
	at := time.Date(year, time.Month(mon+1), day, hh, mm, ss, 0, time.UTC).UnixNano() - int64(off)*int64(time.Second)
	if at < minTime || at >= maxTime {
		return 0, errTime
	}
	return at, nil
}

// monthDays are the days of each month of a common year.
var monthDays = [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// badTime is the reason of a [time] that is none.
func badTime(s string) error { return errors.New("bad time " + strconv.Quote(s)) }

// num reads the decimal digits of t, -1 when one is not a digit.
func num(t string) int {
	n := 0
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return -1
		}
		n = n*10 + int(t[i]-'0')
	}
	return n
}

// caddyLine is what the audit reads of a line of Caddy's JSON access log.
type caddyLine struct {
	TS      float64 `json:"ts"`
	Logger  string  `json:"logger"`
	Status  int     `json:"status"`
	Request *struct {
		RemoteIP string `json:"remote_ip"`
		ClientIP string `json:"client_ip"`
		Method   string `json:"method"`
		Host     string `json:"host"`
		URI      string `json:"uri"`
		// Headers keeps the User-Agent, the headers the undeclared-bot
		// rules read and Authorization (a licence token's presence):
		// the others are skipped, not made into a map (a line's headers
		// cost a dozen of them).
		Headers *struct {
			UserAgent      []string `json:"User-Agent"`
			Authorization  []string `json:"Authorization"`
			AcceptLanguage []string `json:"Accept-Language"`
			SecCHUA        []string `json:"Sec-Ch-Ua"`
			SecFetchMode   []string `json:"Sec-Fetch-Mode"`
			Upgrade        []string `json:"Upgrade"`
		} `json:"headers"`
		TLS *struct{} `json:"tls"`
	} `json:"request"`
}

// jsonLine is what the audit reads of a line of a JSON access log:
// entry makes the request it logs of it.
type jsonLine interface {
	entry() (Entry, error)
}

// parseJSON reads a line of a JSON access log into l, and returns its
// entry.
func parseJSON(line []byte, l jsonLine) (Entry, error) {
	if err := json.Unmarshal(line, l); err != nil {
		return Entry{}, err
	}
	return l.entry()
}

// parseCaddy reads a line of Caddy's JSON access log.
func parseCaddy(line []byte) (Entry, error) { return parseJSON(line, &caddyLine{}) }

// entry is the request of a line of Caddy's access log. The client
// address is client_ip (trusted_proxies applied), else remote_ip.
func (c *caddyLine) entry() (Entry, error) {
	if access := strings.HasPrefix(c.Logger, "http.log.access"); c.Request == nil && access {
		return Entry{}, errors.New("an access log line without its request")
	} else if c.Request == nil || (c.Logger != "" && !access) {
		// Another logger's line (Caddy's own have none): the error log
		// and reverse_proxy's debug lines carry "request" too, and
		// would count a request twice.
		return Entry{}, errSkip
	}
	r := c.Request
	e := Entry{ClientIP: r.ClientIP, Method: r.Method, Target: r.URI, Host: r.Host, HTTPS: r.TLS != nil, Status: c.Status}
	if e.ClientIP == "" {
		e.ClientIP = r.RemoteIP
	}
	if h := r.Headers; h != nil {
		if len(h.UserAgent) > 0 {
			e.UserAgent = h.UserAgent[0]
		}
		// Caddy logs every header of the request (but those it
		// redacts): the absence of one is known.
		e.Evidence = classify.Evidence{Read: true, AcceptLanguage: len(h.AcceptLanguage) > 0, SecCHUA: len(h.SecCHUA) > 0, SecFetchMode: len(h.SecFetchMode) > 0,
			Navigate: len(h.SecFetchMode) > 0 && h.SecFetchMode[0] == "navigate", WebSocket: len(h.Upgrade) > 0 && strings.EqualFold(h.Upgrade[0], "websocket")}
		e.Authorization = licenseAuthorization(h.Authorization)
	}
	switch {
	case e.Target == "" || e.Method == "" || c.TS == 0:
		return e, errors.New("no ts, method or uri")
	case !(c.TS >= float64(minTime)/1e9 && c.TS < float64(maxTime)/1e9): // before the conversion, which would wrap
		return e, errTime
	case !limit.ParseAddr(e.ClientIP).IsValid():
		return e, errors.New("client " + strconv.Quote(e.ClientIP[:min(len(e.ClientIP), 60)]) + " is not an IP address")
	}
	e.At = int64(c.TS * 1e9)
	return e, nil
}

// licenseAuthorization reports whether the logged values of an
// Authorization header may carry a licence token: Caddy logs "REDACTED"
// (unless log_credentials is on), which may be one; a value it shows
// must be of the License scheme, as the guard reads it (its first value).
func licenseAuthorization(vals []string) bool {
	if len(vals) == 0 {
		return false
	}
	v := vals[0]
	return v == "REDACTED" || len(v) > 8 && strings.EqualFold(v[:8], "License ")
}
