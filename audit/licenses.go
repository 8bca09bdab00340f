package audit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/license"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
)

// This file gives the audit's engines the RSL documents that the License
// lines of the robots.txt versions name (RSL 1.0, docs/licensing.md), so
// that a bot's request for licensed content is judged as the guard judges
// it, without the network: the engines fetch no document and ask no
// licence server (guard.WithOfflineLicenses). A log's tokens are long
// expired, and were not ours to check: a request that carried one is
// counted apart (Row.TokenUnchecked), never as refused.

// maxLicenseFetches bounds the documents fetched at once at the start.
const maxLicenseFetches = 8

// Stand-ins for the licence token of a request, which the audit's engines
// never check (tokenOf).
const (
	// tokenLogged: the log shows an Authorization header.
	tokenLogged = "(logged, not checked)"
	// tokenNotLogged: the log carries no request headers.
	tokenNotLogged = "(not logged)"
)

// licenseURL is a document that a License line names, and the host name
// of the site whose robots.txt names it (a document on another host is
// fetched from public addresses only, as the guard fetches it).
type licenseURL struct {
	url, siteHost string
}

// loadLicenses sets the documents the engines judge licences by
// (a.licenses): given (Options.Licenses) when it is not nil, else each
// document of the versions' License lines fetched once, now (none when
// offline). What cannot be had, or read, is a warning: the content it
// licenses is not judged. With licenses off nothing is read.
func (a *Auditor) loadLicenses(cfg guard.Config, given map[string][]byte, offline bool) error {
	lc, err := cfg.Licenses.WithDefaults()
	if err != nil {
		return fmt.Errorf("robots_guard: audit: %w", err)
	}
	a.licenses = make(map[string][]byte)
	if lc.Mode == license.ModeOff {
		return nil
	}
	named := a.licenseURLs(lc.MaxDocuments)
	switch {
	case given != nil:
		isNamed := make(map[string]bool, len(named))
		for _, n := range named {
			isNamed[n.url] = true
		}
		urls := make([]string, 0, len(given))
		for u := range given {
			urls = append(urls, u)
		}
		sort.Strings(urls)
		for _, u := range urls {
			if !isNamed[u] {
				a.warn("licences: --license " + u + ": no License line of the robots.txt judged by names it")
			}
			a.addLicense(u, given[u], "--license "+u)
		}
		for _, n := range named {
			if _, ok := given[n.url]; !ok {
				a.warn("licences: robots.txt names the RSL document " + n.url + ", and no --license gives it: " +
					"requests for the content it licenses are not judged")
			}
		}
	case len(named) == 0:
	case offline:
		urls := make([]string, len(named))
		for i, n := range named {
			urls[i] = n.url
		}
		a.warn("licences: --offline read no RSL document (" + strings.Join(urls, ", ") + "): requests for licensed content " +
			"are not judged (--license URL=FILE gives a document without the network)")
	default:
		a.fetchLicenses(named, time.Duration(lc.FetchTimeout))
	}
	return nil
}

// licenseURLs returns the documents that the License lines of the
// versions and the sites' histories name (the first maxDocs of each file, as
// the guard reads them), each once, in order of URL.
func (a *Auditor) licenseURLs(maxDocs int) []licenseURL {
	seen := make(map[string]bool)
	var out []licenseURL
	add := func(vs []Version, siteHost string) {
		for _, v := range vs {
			if v.Unknown || v.Status != 0 {
				continue
			}
			urls := policy.Parse(v.Body).Licenses()
			for _, u := range urls[:min(len(urls), maxDocs)] {
				if !seen[u] {
					seen[u] = true
					out = append(out, licenseURL{u, siteHost})
				}
			}
		}
	}
	add(a.versions, strings.TrimPrefix(hostOnly(a.scheme+"://"+a.host), a.scheme+"://"))
	sitesNamed := make([]string, 0, len(a.perSite))
	for site := range a.perSite {
		sitesNamed = append(sitesNamed, site)
	}
	sort.Strings(sitesNamed)
	for _, site := range sitesNamed {
		_, host, _ := strings.Cut(hostOnly(site), "://")
		add(a.perSite[site], host)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].url < out[j].url })
	return out
}

// fetchLicenses fetches the documents named, maxLicenseFetches at once,
// each bounded by timeout, and keeps those that can be read.
func (a *Auditor) fetchLicenses(named []licenseURL, timeout time.Duration) {
	client := sites.NewHTTPClient(nil, timeout)
	defer client.CloseIdleConnections()
	bodies := make([][]byte, len(named))
	errs := make([]error, len(named))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxLicenseFetches)
	for i, n := range named {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			bodies[i], errs[i] = fetchLicense(ctx, client, n)
		})
	}
	wg.Wait()
	for i, n := range named {
		if errs[i] != nil {
			a.warn("licences: the RSL document " + n.url + " could not be fetched: requests for the content it licenses " +
				"are not judged (--license URL=FILE gives it without the network):\n" + errs[i].Error())
			continue
		}
		a.addLicense(n.url, bodies[i], n.url)
	}
}

// fetchLicense fetches the document n names, bounded, as the guard does:
// from public addresses only when it is on another host than its site's
// (sites.Foreign).
func fetchLicense(ctx context.Context, client *http.Client, n licenseURL) ([]byte, error) {
	req, err := http.NewRequestWithContext(sites.Foreign(ctx, n.siteHost, n.url), http.MethodGet, n.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/rsl+xml, application/xml;q=0.9, text/xml;q=0.8")
	req.Header.Set("User-Agent", "robotsguard (licence fetch)")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", n.url, resp.StatusCode)
	}
	// license.Parse refuses a document longer than MaxDocumentBytes.
	return io.ReadAll(io.LimitReader(resp.Body, license.MaxDocumentBytes+1))
}

// addLicense keeps the document at u (from, for a warning) when it can
// be read.
func (a *Auditor) addLicense(u string, body []byte, from string) {
	if _, err := license.Parse(body); err != nil {
		a.warn("licences: " + from + " is no RSL document that can be read: requests for the content it licenses are not judged:\n" + err.Error())
		return
	}
	a.licenses[u] = body
}

// licenseDoc is the document at u that the engines judge by
// (guard.WithOfflineLicenses); a.licenses does not change once the
// shards run.
func (a *Auditor) licenseDoc(u string) ([]byte, bool) {
	b, ok := a.licenses[u]
	return b, ok
}

// warn adds a warning to the result.
func (a *Auditor) warn(msg string) { a.res.Warnings = append(a.res.Warnings, msg) }

// tokenOf is the licence token the engines are given for en, which they
// never check: a stand-in where the log shows an Authorization header
// (counted as TokenUnchecked) or carries no request headers (the token
// is unknown: TokenUnknown), none where the log's headers show there was
// none (a bot on licensed content is then Unlicensed).
func tokenOf(en *Entry) string {
	switch {
	case !en.Evidence.Read:
		return tokenNotLogged
	case en.Authorization:
		return tokenLogged
	}
	return ""
}
