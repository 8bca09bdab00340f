package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/license"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
)

// LicenseObserver is the part of an Observer that counts the fetches of
// RSL documents, by outcome: "ok", "not_modified" (a 304 to a
// revalidation: the copy stands), "error" (the last good copy, or none,
// stays: enforcement is weaker until a fetch succeeds) and "invalid".
type LicenseObserver interface {
	ObserveLicenseFetch(outcome string)
}

// maxLicenseDocs bounds the RSL documents held, all sites together.
const maxLicenseDocs = 1000

// licenses holds the RSL documents that the sites' License lines name
// (Config.Licenses), each compiled for its site, fetched when a bot first
// asks for a page of a site that names one, and again after Refresh by
// the first bot after it (which does not wait); a failed fetch keeps the
// last good copy and leaves a WARN and a metric.
type licenses struct {
	cfg      license.Config
	client   *http.Client
	verifier *license.Verifier
	log      *zap.Logger
	obs      LicenseObserver // nil: none
	now      func() time.Time
	docs     *lru.Cache[docKey, *licenseDoc]
	// self: the guard reads robots.txt from the site's own handler, and
	// so a document on the site.
	self bool
	// given gives the documents of WithOfflineLicenses, by URL (nil:
	// they are fetched); then none is fetched, none is due again, and no
	// licence server is asked.
	given func(url string) ([]byte, bool)
}

// docKey is a document of a site: the same URL compiles per site.
type docKey struct{ site, url string }

// licenseDoc is one site's copy of an RSL document.
type licenseDoc struct {
	mu      sync.Mutex // held by the fetch
	matcher *license.Matcher
	due     time.Time // when it is fetched again
	tried   bool
	// etag and lastModified are the validators of the answer the copy
	// came from: a refresh asks with them, and a 304 keeps the copy.
	etag, lastModified string
}

// newLicenses returns the licences of an Engine of cfg, fetching through
// rt (nil: the guard's own transport, which reaches public addresses only
// where a site's file chose the URL).
func newLicenses(cfg license.Config, rt http.RoundTripper, log *zap.Logger, obs Observer, now func() time.Time) *licenses {
	timeout := time.Duration(cfg.FetchTimeout)
	client := sites.NewHTTPClient(rt, timeout)
	docs, _ := lru.New[docKey, *licenseDoc](maxLicenseDocs)
	l := &licenses{cfg: cfg, client: client, log: log, now: now, docs: docs,
		verifier: license.NewVerifier(license.VerifierConfig{Client: client, Now: now, CacheSize: cfg.TokenCacheSize})}
	l.obs, _ = obs.(LicenseObserver)
	return l
}

// content returns the licensed content of site that target is, and the
// URL of its document: the first of the License lines of r (at most
// MaxDocuments) whose document covers it; nil for none.
func (l *licenses) content(ctx context.Context, site string, origin http.Handler, r *policy.Robots, target string) (*license.Content, string) {
	urls := r.Licenses()
	for _, u := range urls {
		if isDocument(site, u, target) {
			// The terms themselves: every crawler may read them (and
			// the guard's own fetch of them, through a proxy, must not
			// wait for itself).
			return nil, ""
		}
	}
	for i, u := range urls {
		if i == l.cfg.MaxDocuments {
			break
		}
		if c := l.matcher(ctx, site, u, origin).Match(target); c != nil {
			return c, u
		}
	}
	return nil, ""
}

// matcher returns site's copy of the document at u, fetching it when it
// was never fetched (the request waits, at most FetchTimeout) or is due
// (in the background; the request uses the copy it has).
func (l *licenses) matcher(ctx context.Context, site, u string, origin http.Handler) *license.Matcher {
	k := docKey{site, u}
	d, ok := l.docs.Get(k)
	if !ok {
		d = &licenseDoc{}
		if prev, found, _ := l.docs.PeekOrAdd(k, d); found {
			d = prev
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case !d.tried:
		d.tried = true
		l.fetch(ctx, site, u, origin, d)
	case l.given == nil && l.now().After(d.due): // given documents do not change
		d.due = l.now().Add(time.Duration(l.cfg.Refresh))
		go func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			l.fetch(context.Background(), site, u, origin, d)
		}()
	}
	return d.matcher
}

// fetch fetches the document at u for site into d (d.mu held).
func (l *licenses) fetch(ctx context.Context, site, u string, origin http.Handler, d *licenseDoc) {
	d.due = l.now().Add(time.Duration(l.cfg.Refresh))
	doc, err := l.get(ctx, site, u, origin, d)
	outcome := "ok"
	switch {
	case errors.Is(err, errNotModified) && d.matcher != nil:
		if l.obs != nil {
			l.obs.ObserveLicenseFetch("not_modified")
		}
		return // the copy in force stands
	case errors.Is(err, errNotModified):
		err = fmt.Errorf("%s answered 304 Not Modified to a request for a copy the guard does not hold", u)
		outcome = "error"
	case errors.Is(err, errInvalidDoc):
		outcome = "invalid"
	case err != nil:
		outcome = "error"
	}
	if l.obs != nil {
		l.obs.ObserveLicenseFetch(outcome)
	}
	if err != nil {
		kept := "none is known: its content is not enforced until a fetch succeeds"
		if d.matcher != nil {
			kept = "the last good copy is kept"
		}
		l.log.Warn("robots_guard: licenses: the RSL document of a License line could not be read; "+kept,
			zap.String("site", site), zap.String("url", u), zap.Error(err))
		return
	}
	d.matcher = doc.For(site)
}

// errInvalidDoc marks a document that was fetched but could not be read.
var errInvalidDoc = errors.New("not an RSL document")

// notModified reports whether status answers a revalidation of d's copy
// with 304 (a 304 to a request without validators is not one).
func (d *licenseDoc) notModified(status int) bool {
	return status == http.StatusNotModified && (d.etag != "" || d.lastModified != "")
}

// errNotModified is a 304 to a revalidation: the copy in force stands.
var errNotModified = errors.New("not modified")

// errNotGiven is the error of a document WithOfflineLicenses lacks.
var errNotGiven = errors.New("not given (offline licences: nothing is fetched)")

// get fetches and parses the document at u for site: from the documents
// of WithOfflineLicenses when given (and then only), else from the site's
// own handler (origin, in-process, as its robots.txt) when u is on the
// site and the guard reads robots.txt so, else over the network, where a
// host other than the site's is reached on public addresses only (a
// site's file chose the URL: sites.Foreign). It asks with d's validators,
// and records the answer's in d; a 304 is errNotModified.
func (l *licenses) get(ctx context.Context, site, u string, origin http.Handler, d *licenseDoc) (*license.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(l.cfg.FetchTimeout))
	defer cancel()
	var body []byte
	var etag, lastModified string
	du, err := url.Parse(u)
	su, serr := url.Parse(site)
	if l.given != nil {
		var ok bool
		if body, ok = l.given(u); !ok {
			return nil, errNotGiven
		}
	} else if err == nil && serr == nil && origin != nil && l.self && strings.EqualFold(du.Scheme+"://"+du.Host, site) {
		res, err := sites.SelfSource().Fetch(ctx, sites.Request{Site: su, URL: du, Origin: origin, IfNoneMatch: d.etag, IfModifiedSince: d.lastModified})
		switch {
		case err != nil:
			return nil, err
		case d.notModified(res.StatusCode):
			return nil, errNotModified
		case res.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("%s answered %d", u, res.StatusCode)
		}
		body, etag, lastModified = res.Body, res.ETag, res.LastModified
	} else if body, etag, lastModified, err = l.download(ctx, site, u, d); err != nil {
		return nil, err
	}
	doc, err := license.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidDoc, err)
	}
	// The validators of a copy in force only: a document that could not
	// be read is fetched whole again, and warned about again.
	d.etag, d.lastModified = etag, lastModified
	return doc, nil
}

// download fetches u over the network, bounded, with d's validators (a
// 304 is errNotModified), and returns the body and its validators.
func (l *licenses) download(ctx context.Context, site, u string, d *licenseDoc) (body []byte, etag, lastModified string, err error) {
	req, err := http.NewRequestWithContext(sites.Foreign(ctx, hostOf(site), u), http.MethodGet, u, nil)
	if err != nil {
		return nil, "", "", err
	}
	req.Header.Set("Accept", "application/rsl+xml, application/xml;q=0.9, text/xml;q=0.8")
	req.Header.Set("User-Agent", "robotsguard (licence fetch)")
	if d.etag != "" {
		req.Header.Set("If-None-Match", d.etag)
	}
	if d.lastModified != "" {
		req.Header.Set("If-Modified-Since", d.lastModified)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, "", "", err
	}
	defer resp.Body.Close()
	switch {
	case d.notModified(resp.StatusCode):
		return nil, "", "", errNotModified
	case resp.StatusCode != http.StatusOK:
		return nil, "", "", fmt.Errorf("%s answered %d", u, resp.StatusCode)
	}
	etag, lastModified = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	body, err = io.ReadAll(io.LimitReader(resp.Body, license.MaxDocumentBytes+1))
	if err != nil {
		return nil, "", "", err
	}
	if len(body) > license.MaxDocumentBytes {
		return nil, "", "", fmt.Errorf("%w: longer than %d bytes", errInvalidDoc, license.MaxDocumentBytes)
	}
	return body, etag, lastModified, nil
}

// checkLicense judges a bot's request that robots.txt lets pass against
// the licences its site's robots.txt names: content a licence covers
// gets the document's URL (v.License, for the Link header of every
// answer); a crawler whose documented purpose no licence of the content
// grants is refused (403); content with a licence server needs a valid token from it
// (RSL's Crawler Authorization Protocol), else 401 (402 where the licence
// asks payment, 503 when the token cannot be checked now). An Engine of
// WithOfflineLicenses lets any token pass unchecked, with v.License and
// v.LicenseServer set.
func (e *Engine) checkLicense(ctx context.Context, req *Request, v *Verdict, r *policy.Robots, target string, targetOK bool) {
	// A request that only content_signals report would stop is the
	// licences' to judge too: one setting's dry run weakens no other.
	signalDryRun := v.Reason == ReasonContentSignal && e.signalsReport
	if e.lic == nil || v.Action != Allow && !signalDryRun || !targetOK || r == nil {
		return
	}
	c, doc := e.lic.content(ctx, v.Site, req.Origin, r, target)
	if c == nil {
		return
	}
	v.License = doc
	var purpose policy.Purpose
	if v.Crawler != nil {
		purpose = v.Crawler.Purpose
	}
	terms, granted := c.TermsFor(purpose)
	switch {
	case !granted:
		// No licence of the content grants the crawler's documented
		// use: no token could (SEMANTICS.md §8b).
		e.licenseStops(v, ReasonLicenseUsage)
		return
	case c.Server == "":
		return // terms only: nobody issues tokens
	}
	v.LicenseServer = c.Server
	switch {
	case req.LicenseToken == "":
		e.licenseStops(v, ReasonLicense)
		v.LicensePayment = terms.Paid()
	case e.lic.given != nil:
		return // offline: a token is not checked (nor its server asked)
	default:
		err := e.lic.verify(ctx, v.Site, c.Server, target, req.LicenseToken)
		switch {
		case err == nil:
			return
		case errors.Is(err, license.ErrInvalidToken):
			e.licenseStops(v, ReasonLicense)
			v.LicenseError = "invalid_token"
			v.LicenseDetail = strings.TrimPrefix(err.Error(), license.ErrInvalidToken.Error()+": ")
		default:
			e.licenseStops(v, ReasonLicenseUnavailable)
			v.LicenseError = "server_error"
			v.LicenseDetail = "the licence server could not be asked: " + err.Error()
		}
	}
}

// licenseStops makes v a licence's refusal for reason, in dry run under
// licenses report or dry_run (whatever dry run a content signal's verdict
// it replaces had).
func (e *Engine) licenseStops(v *Verdict, reason Reason) {
	v.Action, v.Reason = Deny, reason
	v.DryRun = e.cfg.DryRun || e.cfg.Licenses.Mode == license.ModeReport
}

// isDocument reports whether target, on site, is the document at u.
func isDocument(site, u, target string) bool {
	rest, ok := strings.CutPrefix(u, site)
	if !ok || rest == "" || rest[0] != '/' {
		return false
	}
	path, _, _ := strings.Cut(target, "?")
	docPath, _, _ := strings.Cut(rest, "?")
	return path == docPath
}

// hostOf is the host name of a site name ("https://example.com:8443").
func hostOf(site string) string {
	_, host, _ := strings.Cut(site, "://")
	name, _ := sites.SplitHost(host)
	return name
}

// verify checks token for site's target at server: from the verifier's
// cache, or, on a miss only, with the outbound call's address rules
// (sites.Foreign, which may look the site's own host up in DNS: never
// once per request).
func (l *licenses) verify(ctx context.Context, site, server, target, token string) error {
	if ok, err := l.verifier.Cached(server, site+target, token); ok {
		return err
	}
	return l.verifier.Verify(sites.Foreign(ctx, hostOf(site), server), server, site+target, token)
}
