package sites

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/robotsguard/robotsguard/policy"
)

// maxRedirects is the number of redirects followed for one robots.txt fetch
// (RFC 9309 §2.3.1.2: at least five).
const maxRedirects = 5

// Request describes one robots.txt request of a fetch.
type Request struct {
	// Site is the protected site, scheme and host, e.g.
	// "https://example.com:8443".
	Site *url.URL
	// URL is the URL to fetch: the site's /robots.txt on the first attempt,
	// then each redirect's target.
	URL *url.URL
	// Redirects is the number of redirects followed so far.
	Redirects int
	// Origin is the handler that serves the site (Request.Origin); nil when
	// unknown.
	Origin http.Handler
	// IfNoneMatch and IfModifiedSince are the validators of the copy in
	// use (the ETag and Last-Modified of the answer it came from), empty
	// when there is none. A source that can tell that the file has not
	// changed answers 304 Not Modified, which keeps the copy and costs no
	// parse.
	IfNoneMatch, IfModifiedSince string
}

// Result is the answer to one robots.txt request.
type Result struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Location is the absolute target of a 3xx answer, nil otherwise.
	Location *url.URL
	// Body holds at most policy.MaxBodySize bytes of a 2xx answer.
	Body []byte
	// ContentType is the Content-Type of a 2xx answer, if any.
	ContentType string
	// ETag and LastModified are the validators of a 2xx answer, if any;
	// the next fetch sends them back as IfNoneMatch and IfModifiedSince.
	ETag, LastModified string
}

// Source fetches robots.txt files. A Cache calls it at most once at a
// time per site, with a context that carries the fetch timeout, and follows
// redirects itself: Fetch must not follow them. An error means the file is
// unreachable (like a 5xx answer).
type Source interface {
	Fetch(ctx context.Context, req Request) (Result, error)
}

// Outcome classifies a completed robots.txt fetch (RFC 9309 §2.3.1).
type Outcome uint8

// The outcomes of a fetch.
const (
	// OK: a 2xx answer was parsed.
	OK Outcome = iota
	// Unavailable: 4xx other than 429, or too many redirects: no rules
	// apply, everything is allowed.
	Unavailable
	// Unreachable: 5xx, 429, a network error or a timeout: the last
	// good copy is kept, or the site is Unreachable (State.Unreachable:
	// the enforcer's on_unreachable decides).
	Unreachable
	// HTML: a 2xx answer that is an HTML page (Content-Type
	// text/html, or a body that starts like an HTML document), as a
	// single-page app or a catch-all route serves for every path. It is
	// parsed as RFC 9309 says, which usually leaves no rule, and logged
	// at Warn level.
	HTML
	// NotModified: a revalidation answered 304 Not Modified, so the
	// copy in use was kept. It is reported to the Observer only; the copy
	// keeps the outcome of the fetch it came from.
	NotModified
	// Postponed: the first fetch of a new site was put off because
	// too many new sites came at once (a flood of Host names). Reported to
	// the Observer only.
	Postponed
)

// String returns "ok", "unavailable", "unreachable", "html" or
// "not_modified".
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Unavailable:
		return "unavailable"
	case Unreachable:
		return "unreachable"
	case HTML:
		return "html"
	case NotModified:
		return "not_modified"
	case Postponed:
		return "postponed"
	}
	return "fetch_outcome(" + fmt.Sprint(uint8(o)) + ")"
}

// internalKey marks the context of a Cache's own robots.txt requests, so
// that the enforcer lets them through.
type internalKey struct{}

// IsInternal reports whether ctx belongs to a robots.txt request that a
// Cache sends to the site itself (SelfSource). Front ends that do not
// decide every request can use it to let those requests pass.
func IsInternal(ctx context.Context) bool {
	return ctx.Value(internalKey{}) != nil
}

// IsSelfFetch is IsInternal for a request whose client address is
// remoteAddr ("" when the front end has none): the context, a walk of its
// whole chain, is looked at only when remoteAddr is SelfFetchAddr, which no
// TCP connection has, so a request from a connection costs a string
// comparison, and a client can neither reach the check nor pass it.
func IsSelfFetch(ctx context.Context, remoteAddr string) bool {
	return (remoteAddr == "" || remoteAddr == SelfFetchAddr) && IsInternal(ctx)
}

// SelfSource returns the default source: the site's own /robots.txt, sent
// as a virtual GET to Request.Origin (the handler that serves the
// site) with a private response writer and a fresh header set, so no
// header of a real client leaks in or out; its context is marked so that
// the enforcer lets it pass. Redirects are followed the same way, inside
// the origin handler (a redirect to another host reaches that host's site
// only if the same server serves it): the Host header is the client's
// choice, so this source never opens a connection, and a client cannot
// make the guard connect to a host it names. Without an Origin the file
// counts as unreachable.
func SelfSource() Source { return siteSource{} }

type siteSource struct{}

func (siteSource) Fetch(ctx context.Context, req Request) (Result, error) {
	if req.Origin == nil {
		return Result{}, errors.New("no origin handler to fetch the site's robots.txt from")
	}
	return virtualGet(ctx, req.Origin, req)
}

// SelfFetchAddr is the client address of virtual fetches: loopback, port 0,
// so that access logs show an internal request and no real peer (see
// IsSelfFetch).
const SelfFetchAddr = "127.0.0.1:0"

// virtualGet sends GET req.URL to h in-process and captures the answer.
func virtualGet(ctx context.Context, h http.Handler, req Request) (res Result, err error) {
	u := req.URL
	ctx = context.WithValue(ctx, internalKey{}, true)
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return res, err
	}
	r.RequestURI = u.RequestURI()
	r.RemoteAddr = SelfFetchAddr
	r.Header = http.Header{
		"User-Agent":      {"robotsguard (robots.txt self-fetch)"},
		"Accept":          {"text/plain"},
		"Accept-Encoding": {"identity"},
	}
	setValidators(r.Header, req)
	if u.Scheme == "https" {
		r.TLS = &tls.ConnectionState{HandshakeComplete: true, ServerName: u.Hostname()}
	}
	w := &virtualWriter{header: make(http.Header)}
	defer func() {
		if p := recover(); p != nil {
			switch {
			case p == http.ErrAbortHandler && ctx.Err() != nil:
				// reverse_proxy aborts a body it cannot finish copying.
				err = fmt.Errorf("the fetch timed out while reading the robots.txt body: %w", ctx.Err())
			default:
				err = fmt.Errorf("handler panicked while serving robots.txt: %v", p)
			}
		}
	}()
	h.ServeHTTP(w, r)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("the fetch timed out: %w", err)
	}
	res.StatusCode = w.status
	if res.StatusCode == 0 {
		res.StatusCode = http.StatusOK
	}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		res.Location = resolveLocation(u, w.header.Get("Location"))
	}
	res.Body = w.body
	readValidators(&res, w.header)
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if res.Body, err = decodeBody(w.header.Get("Content-Encoding"), res.Body); err != nil {
			return res, err
		}
	}
	return res, nil
}

// decodeBody undoes the Content-Encoding of a robots.txt body that a
// handler sent although the virtual request asked for identity (some
// upstreams always gzip): gzip is decoded, at most policy.MaxBodySize bytes
// of it; an encoding that cannot be decoded is an error (the file counts
// as unreachable), never compressed bytes parsed as rules.
func decodeBody(ce string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(ce)) {
	case "", "identity":
		return body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("robots.txt sent with Content-Encoding gzip: %w", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, policy.MaxBodySize))
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("robots.txt sent with Content-Encoding gzip: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("robots.txt sent with Content-Encoding %q, which robots_guard cannot decode", ce)
}

// setValidators adds the conditional headers of a revalidation.
func setValidators(h http.Header, req Request) {
	if req.IfNoneMatch != "" {
		h.Set("If-None-Match", req.IfNoneMatch)
	}
	if req.IfModifiedSince != "" {
		h.Set("If-Modified-Since", req.IfModifiedSince)
	}
}

// readValidators copies Content-Type and the validators of a 2xx answer.
func readValidators(res *Result, h http.Header) {
	if res.StatusCode < 200 || res.StatusCode >= 300 {
		return
	}
	res.ContentType = h.Get("Content-Type")
	res.ETag = h.Get("ETag")
	res.LastModified = h.Get("Last-Modified")
}

// virtualWriter is the private http.ResponseWriter of a virtual fetch. It
// keeps at most policy.MaxBodySize bytes.
type virtualWriter struct {
	header http.Header
	status int
	body   []byte
}

func (w *virtualWriter) Header() http.Header { return w.header }

func (w *virtualWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx answers are informational
		w.status = code
	}
}

func (w *virtualWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if room := policy.MaxBodySize - len(w.body); room > 0 {
		w.body = append(w.body, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Flush does nothing; it lets handlers that stream work unchanged.
func (w *virtualWriter) Flush() {}

func resolveLocation(base *url.URL, loc string) *url.URL {
	if loc == "" {
		return nil
	}
	u, err := base.Parse(loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	return u
}

// URLSource returns a source that fetches robots.txt from one fixed URL for
// every site, with client (which must not follow redirects itself;
// NewHTTPClient's does not). Redirects are followed by the Cache; with NewHTTPClient's
// client, a redirect to another host never connects to a loopback,
// private or link-local address unless the configured URL's host is one
// itself (an intranet robots.txt may redirect within the intranet).
func URLSource(u *url.URL, client *http.Client) Source {
	return &urlSource{fixed: u, client: client}
}

type urlSource struct {
	fixed  *url.URL
	client *http.Client
}

func (s *urlSource) Fetch(ctx context.Context, req Request) (Result, error) {
	if req.Redirects == 0 && s.fixed != nil {
		req.URL = s.fixed
	}
	// A redirect away from the configured host may not lead into the
	// private network, unless the configured URL is in it itself.
	if req.Redirects > 0 && s.fixed != nil && !strings.EqualFold(req.URL.Host, s.fixed.Host) && !privateHost(ctx, s.fixed.Hostname()) {
		ctx = context.WithValue(ctx, publicOnlyKey{}, true)
	}
	return s.get(ctx, req)
}

func (s *urlSource) get(ctx context.Context, req Request) (Result, error) {
	return fetchURL(ctx, s.client, req, req.URL)
}

// fetchURL sends GET to dial with client, with req.URL's host as its Host
// header, and reads the answer; a redirect's Location is resolved against
// req.URL, the URL the answer stands for.
func fetchURL(ctx context.Context, client *http.Client, req Request, dial *url.URL) (Result, error) {
	var res Result
	u := req.URL
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, dial.String(), nil)
	if err != nil {
		return res, err
	}
	r.Host = u.Host
	r.Header.Set("User-Agent", "robotsguard (robots.txt fetch)")
	if site, ok := ctx.Value(forwardedKey{}).(*url.URL); ok {
		// Asked of an origin: say which scheme and host the answer is
		// for, as a proxy in front of it would.
		r.Header.Set("X-Forwarded-Proto", site.Scheme)
		r.Header.Set("X-Forwarded-Host", site.Host)
	}
	setValidators(r.Header, req)
	resp, err := client.Do(r)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Location = resolveLocation(u, resp.Header.Get("Location"))
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		res.Body, err = io.ReadAll(io.LimitReader(resp.Body, policy.MaxBodySize))
		if err != nil {
			return res, fmt.Errorf("reading robots.txt body: %w", err)
		}
		readValidators(&res, resp.Header)
	}
	return res, nil
}

// OriginSource returns the source of Config.Origin: each site's
// /robots.txt asked of origin (scheme and host only) with the site's own
// Host header and X-Forwarded-Proto and X-Forwarded-Host naming the site,
// with client (NewHTTPClient's). A redirect that sends the file back to
// the same URL (an upstream that forces https and does not read
// X-Forwarded-Proto) makes it unreachable, not a redirect loop, which RFC
// 9309 would read as "no rules". A redirect within the site
// is asked of origin too; one to another host is fetched there, from
// public addresses only, so that neither a client nor the origin can make
// the guard connect into the private network beyond origin itself. Which
// sites are fetched at all is the Cache's choice (Config.SiteNames).
func OriginSource(origin *url.URL, client *http.Client) Source {
	return &originSource{origin: &url.URL{Scheme: origin.Scheme, Host: origin.Host}, client: client}
}

type originSource struct {
	origin *url.URL
	client *http.Client
}

func (s *originSource) Fetch(ctx context.Context, req Request) (Result, error) {
	if req.Site != nil && !strings.EqualFold(req.URL.Host, req.Site.Host) {
		return fetchURL(context.WithValue(ctx, publicOnlyKey{}, true), s.client, req, req.URL)
	}
	dial := *req.URL
	dial.Scheme, dial.Host = s.origin.Scheme, s.origin.Host
	res, err := fetchURL(context.WithValue(ctx, forwardedKey{}, req.URL), s.client, req, &dial)
	if err == nil && req.Redirects > 0 && res.Location != nil && res.Location.Path == req.URL.Path &&
		strings.EqualFold(res.Location.Host, req.URL.Host) {
		// The origin sends the site's robots.txt back to itself (an
		// upstream that forces https and ignores X-Forwarded-Proto): it
		// cannot be asked for it. Unreachable, not "too many redirects",
		// which would leave the site without rules.
		return Result{}, fmt.Errorf("the origin %s redirects %s to itself again (%s): it cannot be asked for it; "+
			"make the upstream honour X-Forwarded-Proto, or give robots_txt origin as the address that serves it", s.origin, req.URL, res.Location)
	}
	return res, err
}

// forwardedKey carries, in the context of an origin fetch, the site's own
// URL, which fetchURL names in X-Forwarded-Proto and X-Forwarded-Host.
type forwardedKey struct{}

// FileSource returns a source that reads robots.txt from a file for every
// site. A refresh first compares the file's size and modification time with
// those of the copy in use and reads the file only when they differ, so a
// short refresh interval costs one stat call. A file that is missing or
// cannot be read counts as unreachable: the last good copy stays in force
// (a deploy that replaces the file does not open the site to every bot),
// and the failure is logged.
func FileSource(path string) Source { return fileSource(path) }

type fileSource string

func (p fileSource) Fetch(_ context.Context, req Request) (Result, error) {
	f, err := os.Open(string(p))
	if err != nil {
		return Result{}, fmt.Errorf("robots.txt file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Result{}, fmt.Errorf("robots.txt file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Result{}, fmt.Errorf("robots.txt file %s is not a regular file", p)
	}
	etag := fileETag(fi)
	if req.IfNoneMatch == etag {
		return Result{StatusCode: http.StatusNotModified}, nil
	}
	body, err := io.ReadAll(io.LimitReader(f, policy.MaxBodySize))
	if err != nil {
		return Result{}, fmt.Errorf("robots.txt file: %w", err)
	}
	return Result{StatusCode: http.StatusOK, Body: body, ETag: etag, ContentType: "text/plain"}, nil
}

// fileETag is the validator of a file: its size and modification time.
func fileETag(fi fs.FileInfo) string {
	return `"` + strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16) + `"`
}

// BytesSource returns a source that serves the same robots.txt body for
// every site, for tests and for rules compiled into a program.
func BytesSource(body []byte) Source {
	return bytesSource(body[:min(len(body), policy.MaxBodySize):min(len(body), policy.MaxBodySize)])
}

type bytesSource []byte

func (b bytesSource) Fetch(context.Context, Request) (Result, error) {
	return Result{StatusCode: http.StatusOK, Body: b}, nil
}
