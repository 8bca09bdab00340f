package middleware

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/robotsguard/robotsguard/policy"
)

// maxRedirects is the number of redirects followed for one robots.txt fetch
// (RFC 9309 §2.3.1.2: at least five).
const maxRedirects = 5

// FetchRequest describes one robots.txt request of a fetch.
type FetchRequest struct {
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
}

// FetchResult is the answer to one robots.txt request.
type FetchResult struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Location is the absolute target of a 3xx answer, nil otherwise.
	Location *url.URL
	// Body holds at most policy.MaxBodySize bytes of a 2xx answer.
	Body []byte
}

// Source fetches robots.txt files. The Enforcer calls it at most once at a
// time per site, with a context that carries the fetch timeout, and follows
// redirects itself: Fetch must not follow them. An error means the file is
// unreachable (like a 5xx answer).
type Source interface {
	Fetch(ctx context.Context, req FetchRequest) (FetchResult, error)
}

// FetchOutcome classifies a completed robots.txt fetch (RFC 9309 §2.3.1).
type FetchOutcome uint8

// The outcomes of a fetch.
const (
	// FetchOK: a 2xx answer was parsed.
	FetchOK FetchOutcome = iota
	// FetchUnavailable: 4xx other than 429, or too many redirects: no rules
	// apply, everything is allowed.
	FetchUnavailable
	// FetchUnreachable: 5xx, 429, a network error or a timeout: the last
	// good copy is kept, or bots are disallowed (Config.OnUnreachable).
	FetchUnreachable
)

// String returns "ok", "unavailable" or "unreachable".
func (o FetchOutcome) String() string {
	switch o {
	case FetchOK:
		return "ok"
	case FetchUnavailable:
		return "unavailable"
	case FetchUnreachable:
		return "unreachable"
	}
	return "fetch_outcome(" + fmt.Sprint(uint8(o)) + ")"
}

// internalKey marks the context of the Enforcer's own robots.txt requests, so
// that the Enforcer lets them through.
type internalKey struct{}

// IsInternalFetch reports whether ctx belongs to a robots.txt request that an
// Enforcer sends to the site itself. Front ends that do not call Decide for
// every request can use it to let those requests pass.
func IsInternalFetch(ctx context.Context) bool {
	return ctx.Value(internalKey{}) != nil
}

// SiteSource returns the default source: the site's own /robots.txt. A
// same-site request is sent as a virtual GET to FetchRequest.Origin with a
// private response writer and a fresh header set, so no header of a real
// client leaks in or out; its context is marked so that the Enforcer lets it
// pass. A redirect to another site is followed over the network with client.
// Without an Origin, the site is not fetched over the network (the Host
// header is client-controlled) and the file counts as unreachable.
func SiteSource(client *http.Client) Source {
	return &siteSource{net: &urlSource{client: client}}
}

type siteSource struct {
	net *urlSource
}

func (s *siteSource) Fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	if req.URL.Scheme != req.Site.Scheme || req.URL.Host != req.Site.Host {
		return s.net.get(ctx, req.URL)
	}
	if req.Origin == nil {
		return FetchResult{}, errors.New("no origin handler to fetch the site's robots.txt from")
	}
	return virtualGet(ctx, req.Origin, req.URL)
}

// virtualGet sends GET u to h in-process and captures the answer.
func virtualGet(ctx context.Context, h http.Handler, u *url.URL) (res FetchResult, err error) {
	ctx = context.WithValue(ctx, internalKey{}, true)
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return res, err
	}
	r.RequestURI = u.RequestURI()
	r.RemoteAddr = "127.0.0.1:10000" // a valid address, as Caddy's templates do
	r.Header = http.Header{
		"User-Agent":      {"robotsguard (robots.txt self-fetch)"},
		"Accept":          {"text/plain"},
		"Accept-Encoding": {"identity"},
	}
	if u.Scheme == "https" {
		r.TLS = &tls.ConnectionState{HandshakeComplete: true, ServerName: u.Hostname()}
	}
	w := &virtualWriter{header: make(http.Header)}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked while serving robots.txt: %v", p)
		}
	}()
	h.ServeHTTP(w, r)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.StatusCode = w.status
	if res.StatusCode == 0 {
		res.StatusCode = http.StatusOK
	}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		res.Location = resolveLocation(u, w.header.Get("Location"))
	}
	res.Body = w.body
	return res, nil
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
// every site, with client (which must not follow redirects itself; New's
// client does not). Redirects are followed by the Enforcer.
func URLSource(u *url.URL, client *http.Client) Source {
	return &urlSource{fixed: u, client: client}
}

type urlSource struct {
	fixed  *url.URL
	client *http.Client
}

func (s *urlSource) Fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	u := req.URL
	if req.Redirects == 0 && s.fixed != nil {
		u = s.fixed
	}
	return s.get(ctx, u)
}

func (s *urlSource) get(ctx context.Context, u *url.URL) (FetchResult, error) {
	var res FetchResult
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return res, err
	}
	r.Header.Set("User-Agent", "robotsguard (robots.txt fetch)")
	resp, err := s.client.Do(r)
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
	}
	return res, nil
}

// newHTTPClient returns the client of URL sources: it never follows
// redirects (the Enforcer does, counting them) and gives up after timeout.
func newHTTPClient(rt http.RoundTripper, timeout time.Duration) *http.Client {
	if rt == nil {
		rt = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       time.Minute,
		}
	}
	return &http.Client{
		Transport: rt,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// FileSource returns a source that reads robots.txt from a file for every
// site, again at every refresh. A missing file counts as 404 (no rules);
// other read errors count as unreachable.
func FileSource(path string) Source { return fileSource(path) }

type fileSource string

func (p fileSource) Fetch(context.Context, FetchRequest) (FetchResult, error) {
	f, err := os.Open(string(p))
	if errors.Is(err, fs.ErrNotExist) {
		return FetchResult{StatusCode: http.StatusNotFound}, nil
	}
	if err != nil {
		return FetchResult{}, err
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, policy.MaxBodySize))
	if err != nil {
		return FetchResult{}, err
	}
	return FetchResult{StatusCode: http.StatusOK, Body: body}, nil
}

// BytesSource returns a source that serves the same robots.txt body for
// every site, for tests and for rules compiled into a program.
func BytesSource(body []byte) Source {
	return bytesSource(body[:min(len(body), policy.MaxBodySize):min(len(body), policy.MaxBodySize)])
}

type bytesSource []byte

func (b bytesSource) Fetch(context.Context, FetchRequest) (FetchResult, error) {
	return FetchResult{StatusCode: http.StatusOK, Body: b}, nil
}
