package audit

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// This file reads the logs of AWS's CDN and load balancer: CloudFront's
// standard logs and the Application Load Balancer's access logs.

// CloudFront's standard log fields the audit reads, by their place in
// the documented order (#Fields: date time x-edge-location sc-bytes c-ip
// cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent)
// cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id
// x-host-header cs-protocol ...).
const (
	cfDate, cfTime, cfClient, cfMethod, cfHost, cfStem, cfStatus = 0, 1, 4, 5, 6, 7, 8
	cfUserAgent, cfQuery, cfHostHeader, cfProtocol               = 10, 11, 15, 16
)

// parseCloudFront reads a line of CloudFront's standard (legacy) log:
// tab-separated fields in the documented order; the "#Version" and
// "#Fields" lines are skipped. The site is the Host the viewer sent
// (x-host-header, else the distribution's cs(Host)); the User-Agent is
// URL-encoded in the log and decoded here.
func parseCloudFront(line string) (Entry, error) {
	var e Entry
	if strings.HasPrefix(line, "#") {
		return e, errSkip
	}
	f := strings.Split(line, "\t")
	if len(f) <= cfProtocol {
		return e, errors.New("fewer tab-separated fields than CloudFront's standard log's")
	}
	at, err := parseRFC3339(f[cfDate] + "T" + f[cfTime] + "Z")
	if err != nil {
		return e, err
	}
	e.At, e.ClientIP, e.Method = at, f[cfClient], f[cfMethod]
	if e.Status, _ = strconv.Atoi(f[cfStatus]); e.Status < 100 || e.Status > 999 {
		return e, errors.New("no status")
	}
	if e.Target = f[cfStem]; e.Method == "" || !strings.HasPrefix(e.Target, "/") {
		return e, errors.New("no method or cs-uri-stem")
	}
	if q := f[cfQuery]; q != "-" && q != "" {
		e.Target += "?" + q
	}
	if e.Host = f[cfHostHeader]; e.Host == "-" || e.Host == "" {
		e.Host = f[cfHost]
	}
	e.HTTPS = f[cfProtocol] == "https" || f[cfProtocol] == "wss"
	if ua := f[cfUserAgent]; ua != "-" {
		e.UserAgent = ua
		if dec, err := url.PathUnescape(ua); err == nil {
			e.UserAgent = dec
		}
	}
	return e, checkClient(e.ClientIP)
}

// isCloudFront reports a line of a CloudFront standard log: its header,
// or a tab-separated line that starts with a date.
func isCloudFront(line string) bool {
	if strings.HasPrefix(line, "#Version:") || strings.HasPrefix(line, "#Fields: date") {
		return true
	}
	return len(line) > 11 && line[4] == '-' && line[7] == '-' && line[10] == '\t' && strings.Count(line, "\t") >= cfProtocol
}

// The Application Load Balancer's fields the audit reads, by their place
// (type time elb client:port target:port request_processing_time
// target_processing_time response_processing_time elb_status_code
// target_status_code received_bytes sent_bytes "request" "user_agent"
// ... request_creation_time ...).
const (
	albType, albTime, albClient, albStatus, albRequest, albUserAgent, albCreated = 0, 1, 3, 8, 12, 13, 21
)

// parseALB reads a line of an Application Load Balancer's access log. The
// request's absolute URL gives the site and scheme; the time is
// request_creation_time (when the request came), else time (when the
// answer went).
func parseALB(line string) (Entry, error) {
	var e Entry
	f, ok := albFields(line)
	if !ok || len(f) <= albUserAgent {
		return e, errors.New("fewer fields than an ALB log's")
	}
	when := f[albTime]
	if len(f) > albCreated && f[albCreated] != "-" {
		when = f[albCreated]
	}
	at, err := parseRFC3339(when)
	if err != nil {
		return e, err
	}
	e.At = at
	client := f[albClient]
	colon := strings.LastIndexByte(client, ':')
	if colon <= 0 {
		return e, errors.New("no client address:port")
	}
	e.ClientIP = strings.Trim(client[:colon], "[]")
	if e.Status, _ = strconv.Atoi(f[albStatus]); e.Status < 100 || e.Status > 999 {
		return e, errors.New("no elb_status_code")
	}
	m, t, ok := requestLine(f[albRequest])
	scheme, rest, abs := strings.Cut(t, "://")
	if !ok || !abs {
		return e, errors.New("request " + strconv.Quote(f[albRequest][:min(len(f[albRequest]), 80)]) + " is not METHOD URL PROTOCOL")
	}
	e.Method, e.HTTPS = m, scheme == "https" || scheme == "wss"
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		slash = len(rest)
	}
	e.Host, e.Target = rest[:slash], rest[slash:]
	if e.Target == "" {
		e.Target = "/"
	}
	if ua := f[albUserAgent]; ua != "-" {
		e.UserAgent = unescape(ua)
	}
	return e, checkClient(e.ClientIP)
}

// albFields splits an ALB log line at its spaces, a quoted field (its
// backslash escapes kept) being one.
func albFields(line string) ([]string, bool) {
	var f []string
	for line = strings.TrimLeft(line, " "); line != ""; line = strings.TrimLeft(line, " ") {
		if line[0] == '"' {
			q, rest, ok := quoted(line)
			if !ok {
				return f, false
			}
			f, line = append(f, q), rest
			continue
		}
		sp := strings.IndexByte(line, ' ')
		if sp < 0 {
			sp = len(line)
		}
		f, line = append(f, line[:sp]), line[sp:]
	}
	return f, true
}

// isALB reports a line that starts as an ALB log's: its type, then an
// RFC 3339 time.
func isALB(line string) bool {
	typ, rest, ok := strings.Cut(line, " ")
	switch typ {
	case "http", "https", "h2", "grpcs", "ws", "wss":
	default:
		return false
	}
	return ok && len(rest) > 11 && rest[4] == '-' && rest[7] == '-' && rest[10] == 'T'
}
