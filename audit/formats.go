package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

// This file reads the logs of the proxies, load balancers and CDNs put
// in front of a site: Apache's vhost_combined, Traefik's JSON access log
// and Cloudflare's Logpush HTTP requests.

// parseVhost reads a Combined (or Common) Log Format line that starts
// with the virtual host, as Apache's vhost_combined writes it ("%v:%p
// %h ...") or a LogFormat with "%v" first:
//
//	example.com:443 192.0.2.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "-" "Bot"
//
// The host is the request's; port 443 marks it HTTPS (the only port
// whose scheme the line tells).
func parseVhost(line string) (Entry, error) {
	sp := strings.IndexByte(line, ' ')
	if sp <= 0 {
		return Entry{}, errors.New("no virtual host")
	}
	host := line[:sp]
	e, err := parseCombined(strings.TrimLeft(line[sp:], " "))
	if err != nil {
		return e, err
	}
	name, port := sites.SplitHost(host)
	if name == "" || name == "-" || strings.ContainsAny(name, "/?#@[]\"") {
		return e, errors.New("virtual host " + strconv.Quote(host[:min(len(host), 60)]) + " is no host name")
	}
	e.Host, e.HTTPS = host, port == 443
	return e, nil
}

// isVhost reports a line whose second field is an IP address: the
// client's after a leading virtual host (in the Combined format the
// second field is the ident, "-").
func isVhost(line []byte) bool {
	_, rest, ok := bytes.Cut(bytes.TrimLeft(line, " "), []byte{' '})
	if !ok {
		return false
	}
	f, _, _ := bytes.Cut(bytes.TrimLeft(rest, " "), []byte{' '})
	_, err := netip.ParseAddr(string(f))
	return err == nil
}

// jsonFormat returns the format of a JSON log line by the names of its
// fields: Traefik's and Cloudflare's are capitalized and their own,
// anything else is Caddy's.
func jsonFormat(line []byte) string {
	switch {
	case bytes.Contains(line, []byte(`"DownstreamStatus"`)) || bytes.Contains(line, []byte(`"ClientHost"`)):
		return FormatTraefik
	case bytes.Contains(line, []byte(`"ClientRequestURI"`)) || bytes.Contains(line, []byte(`"EdgeStartTimestamp"`)):
		return FormatCloudflare
	}
	return FormatCaddy
}

// traefikLine is what the audit reads of a line of Traefik's JSON access
// log.
type traefikLine struct {
	ClientHost       string `json:"ClientHost"`
	ClientAddr       string `json:"ClientAddr"`
	RequestHost      string `json:"RequestHost"`
	RequestMethod    string `json:"RequestMethod"`
	RequestPath      string `json:"RequestPath"`
	RequestScheme    string `json:"RequestScheme"`
	DownstreamStatus int    `json:"DownstreamStatus"`
	StartUTC         string `json:"StartUTC"`
	Time             string `json:"time"`
	UserAgent        string `json:"request_User-Agent"`
}

// parseTraefik reads a line of Traefik's JSON access log.
func parseTraefik(line []byte) (Entry, error) { return parseJSON(line, &traefikLine{}) }

// entry is the request of a line of Traefik's access log. The client is
// ClientHost (else ClientAddr's address), the time StartUTC (else
// "time"); the User-Agent is there only when the access log keeps that
// header (accessLog.fields.headers.names: User-Agent: keep).
func (t *traefikLine) entry() (Entry, error) {
	e := Entry{ClientIP: t.ClientHost, Method: t.RequestMethod, Target: t.RequestPath, Host: t.RequestHost,
		HTTPS: t.RequestScheme == "https", Status: t.DownstreamStatus, UserAgent: t.UserAgent}
	if e.ClientIP == "" {
		e.ClientIP = t.ClientAddr
		if ap, err := netip.ParseAddrPort(t.ClientAddr); err == nil {
			e.ClientIP = ap.Addr().String()
		}
	}
	if e.Host == "-" {
		e.Host = ""
	}
	when := t.StartUTC
	if when == "" {
		when = t.Time
	}
	if e.Method == "" || e.Target == "" || when == "" {
		return e, errors.New("no StartUTC, RequestMethod or RequestPath")
	}
	at, err := parseRFC3339(when)
	if err != nil {
		return e, err
	}
	e.At = at
	return e, checkClient(e.ClientIP)
}

// cloudflareLine is what the audit reads of a line of Cloudflare's
// Logpush (or Logpull) HTTP requests dataset.
type cloudflareLine struct {
	ClientIP            string          `json:"ClientIP"`
	ClientRequestHost   string          `json:"ClientRequestHost"`
	ClientRequestMethod string          `json:"ClientRequestMethod"`
	ClientRequestURI    string          `json:"ClientRequestURI"`
	ClientRequestScheme string          `json:"ClientRequestScheme"`
	ClientRequestUA     string          `json:"ClientRequestUserAgent"`
	EdgeResponseStatus  int             `json:"EdgeResponseStatus"`
	EdgeStartTimestamp  json.RawMessage `json:"EdgeStartTimestamp"`
}

// parseCloudflare reads a line of Cloudflare's HTTP requests dataset, as
// Logpush writes it in JSON.
func parseCloudflare(line []byte) (Entry, error) { return parseJSON(line, &cloudflareLine{}) }

// entry is the request of a line of Cloudflare's dataset:
// EdgeStartTimestamp in any of its formats (unixnano, unix, rfc3339).
func (c *cloudflareLine) entry() (Entry, error) {
	e := Entry{ClientIP: c.ClientIP, Method: c.ClientRequestMethod, Target: c.ClientRequestURI, Host: c.ClientRequestHost,
		HTTPS: c.ClientRequestScheme == "https", Status: c.EdgeResponseStatus, UserAgent: c.ClientRequestUA}
	if e.Method == "" || e.Target == "" || len(c.EdgeStartTimestamp) == 0 {
		return e, errors.New("no EdgeStartTimestamp, ClientRequestMethod or ClientRequestURI")
	}
	at, err := edgeTime(c.EdgeStartTimestamp)
	if err != nil {
		return e, err
	}
	e.At = at
	return e, checkClient(e.ClientIP)
}

// edgeTime reads a Cloudflare timestamp: an RFC 3339 string, or a
// number of seconds (unix), milliseconds or nanoseconds (unixnano) told
// apart by their size.
func edgeTime(raw json.RawMessage) (int64, error) {
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		return parseRFC3339(s)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, badTime(string(raw[:min(len(raw), 40)]))
	}
	switch {
	case n < 0:
		return 0, errTime
	case n < 1e11: // seconds (to 5138)
		if n > maxTime/1e9 {
			return 0, errTime
		}
		n *= 1e9
	case n < 1e14: // milliseconds
		n *= 1e6
	case n < 1e17: // microseconds
		n *= 1e3
	}
	if n < minTime || n >= maxTime {
		return 0, errTime
	}
	return n, nil
}

// parseRFC3339 reads an RFC 3339 time within the sane window.
func parseRFC3339(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, badTime(s[:min(len(s), 40)])
	}
	if t.Year() < 1989 || t.Year() > 2200 { // before UnixNano, which would wrap
		return 0, errTime
	}
	if at := t.UnixNano(); at >= minTime && at < maxTime {
		return at, nil
	}
	return 0, errTime
}

// checkClient is the reason of a client address that is none.
func checkClient(ip string) error {
	if !limit.ParseAddr(ip).IsValid() {
		return errors.New("client " + strconv.Quote(ip[:min(len(ip), 60)]) + " is not an IP address")
	}
	return nil
}

// parseHAProxy reads a line of HAProxy's HTTP log (option httplog), with
// or without the syslog header before it:
//
//	127.0.0.1:45482 [28/Nov/2026:05:10:24.097] web web/<NOSRV> 0/-1/-1/-1/0 200 74 - - LR-- 1/1/0/0/0 0/0 {FooBot/1.0|shop.example} "GET /a HTTP/1.1"
//
// The accept date has no zone: it is read in the audit's local time zone
// (TZ=UTC for a server that logs UTC). The User-Agent is the first
// header the frontend captures ("capture request header User-Agent len
// 256"), the Host the second; a frontend whose name ends in "~" took the
// request over TLS.
func parseHAProxy(line string) (Entry, error) {
	var e Entry
	open := acceptDate(line)
	if open < 0 {
		return e, errors.New("no [accept date]")
	}
	before := strings.TrimRight(line[:open], " ")
	client := before[strings.LastIndexByte(before, ' ')+1:]
	colon := strings.LastIndexByte(client, ':')
	if colon <= 0 {
		return e, errors.New("no client address:port before the [accept date]")
	}
	e.ClientIP = strings.Trim(client[:colon], "[]")
	if err := checkClient(e.ClientIP); err != nil {
		return e, err
	}
	at, err := haproxyTime(line[open+1 : open+25])
	if err != nil {
		return e, err
	}
	e.At = at
	rest := line[open+26:]
	q := strings.IndexByte(rest, '"')
	end := strings.LastIndexByte(rest, '"')
	if q < 0 || end <= q {
		return e, errors.New("no quoted request line")
	}
	f := strings.Fields(rest[:q])
	if len(f) < 4 {
		return e, errors.New("no frontend, backend, timers and status")
	}
	e.HTTPS = strings.HasSuffix(f[0], "~")
	if e.Status, _ = strconv.Atoi(f[3]); e.Status < 100 || e.Status > 999 {
		return e, errors.New("no status")
	}
	m, t, ok := requestLine(rest[q+1 : end])
	if !ok {
		return e, errors.New("request line " + strconv.Quote(rest[q+1:min(end, q+81)]) + " is not METHOD TARGET PROTOCOL")
	}
	e.Method, e.Target = m, unhash(t)
	e.UserAgent, e.Host = captures(rest[:q])
	return e, nil
}

// acceptDate returns the index of the "[" of HAProxy's accept date
// ("[28/Nov/2026:05:10:24.097]"), -1 when the line has none.
func acceptDate(line string) int {
	for i := 0; i+25 < len(line); i++ {
		if line[i] != '[' {
			continue
		}
		s := line[i+1:]
		if s[2] == '/' && s[6] == '/' && s[11] == ':' && s[20] == '.' && s[24] == ']' && i > 0 && line[i-1] == ' ' {
			return i
		}
	}
	return -1
}

// haproxyTime reads "28/Nov/2026:05:10:24.097" in the local time zone.
func haproxyTime(s string) (int64, error) {
	ms := num(s[21:24])
	utc, err := parseCLFTime(s[:20] + " +0000")
	if err != nil || ms < 0 {
		return 0, badTime(s)
	}
	t := time.Unix(0, utc).UTC()
	at := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), ms*1e6, time.Local).UnixNano()
	if at < minTime || at >= maxTime {
		return 0, errTime
	}
	return at, nil
}

// captures returns the first and second headers of the first block of
// captured headers ("{User-Agent|Host}", the request's), "" for none.
func captures(s string) (ua, host string) {
	open := strings.IndexByte(s, '{')
	end := strings.IndexByte(s, '}')
	if open < 0 || end < open {
		return "", ""
	}
	ua, host, _ = strings.Cut(s[open+1:end], "|")
	host, _, _ = strings.Cut(host, "|")
	return unhash(ua), unhash(host)
}

// unhash undoes HAProxy's escapes ("#22" for a quote, "#7C" for "|") in
// a captured header or the request line.
func unhash(s string) string {
	if strings.IndexByte(s, '#') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && i+2 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseEnvoy reads a line of Envoy's default access log format:
//
//	[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"
//
// The format has no client address but X-Forwarded-For, which Envoy at
// the edge (use_remote_address) ends with the address it saw: the client
// is its last one. The Host is the :authority.
func parseEnvoy(line string) (Entry, error) {
	var e Entry
	end := strings.IndexByte(line, ']')
	if !isEnvoy(line) || end < 0 {
		return e, errors.New("no [start time]")
	}
	at, err := parseRFC3339(line[1:end])
	if err != nil {
		return e, err
	}
	e.At = at
	reqLine, rest, ok := quoted(strings.TrimLeft(line[end+1:], " "))
	if !ok {
		return e, errors.New("no quoted request line")
	}
	if e.Method, e.Target, ok = requestLine(reqLine); !ok {
		return e, errors.New("request line " + strconv.Quote(reqLine[:min(len(reqLine), 80)]) + " is not METHOD TARGET PROTOCOL")
	}
	q := strings.IndexByte(rest, '"')
	if q < 0 {
		return e, errors.New("no quoted X-Forwarded-For")
	}
	f := strings.Fields(rest[:q])
	if len(f) == 0 {
		return e, errors.New("no status")
	}
	if e.Status, _ = strconv.Atoi(f[0]); e.Status < 100 || e.Status > 999 {
		return e, errors.New("no status")
	}
	var fields [4]string // X-Forwarded-For, User-Agent, X-Request-Id, :authority
	rest = rest[q:]
	for i := range fields {
		if fields[i], rest, ok = quoted(strings.TrimLeft(rest, " ")); !ok {
			return e, errors.New("fewer quoted fields than the default format's")
		}
	}
	xff := fields[0][strings.LastIndexByte(fields[0], ',')+1:]
	e.ClientIP = strings.TrimSpace(xff)
	if fields[1] != "-" {
		e.UserAgent = fields[1]
	}
	if fields[3] != "-" {
		e.Host = fields[3]
	}
	return e, checkClient(e.ClientIP)
}

// isEnvoy reports a line that starts as Envoy's default format does:
// "[2016-04-15T".
func isEnvoy(line string) bool {
	return len(line) > 12 && line[0] == '[' && line[5] == '-' && line[8] == '-' && line[11] == 'T' && num(line[1:5]) >= 0
}
