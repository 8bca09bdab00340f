package audit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
)

// Version is one robots.txt as it was in force from Since on (until the
// next Version's Since).
type Version struct {
	// Name says where it came from (a file or URL), for the output.
	Name string
	// Since is when it came into force; zero means "always", which only
	// the first Version (in time) may say.
	Since time.Time
	// Body is the file.
	Body []byte
	// Status is the status of a version that was no file (a 4xx: no
	// rules apply); 0 for a file.
	Status int
	// Unknown marks a version whose text is not known (a site's history
	// kept only its hash): the requests of its time are not judged.
	Unknown bool
}

// datedSource serves, for every site, the Version in force at the
// audit's current entry: the engine asks it at the first bot request of
// each site, and again when the Auditor crosses into the next Version
// (Engine.Refresh). Its ETag is the Version's index, so a refresh
// within one Version costs a 304 and no parse.
type datedSource struct {
	versions []Version
	current  atomic.Int32
	// perSite are the sites' own histories (Options.History), by site
	// name, and the index of the one in force for each (-1: the
	// global versions'); guarded by mu, since the engine fetches from
	// its own goroutines.
	perSite map[string][]Version
	mu      sync.Mutex
	siteCur map[string]int
}

func (s *datedSource) Fetch(_ context.Context, req sites.Request) (sites.Result, error) {
	name := siteName(req.Site.Scheme, req.Site.Host)
	s.mu.Lock()
	i, own := s.siteCur[name]
	hist := s.perSite[name]
	s.mu.Unlock()
	var v Version
	etag := ""
	if own && i >= 0 {
		v, etag = hist[i], `"site-`+strconv.Itoa(i)+`"`
	} else {
		if i = int(s.current.Load()); i >= len(s.versions) {
			return sites.Result{}, errors.New("no robots.txt known for " + name)
		}
		v, etag = s.versions[i], `"`+strconv.Itoa(i)+`"`
	}
	if req.IfNoneMatch == etag {
		return sites.Result{StatusCode: http.StatusNotModified}, nil
	}
	if v.Status >= 400 { // a version that was no file: no rules
		return sites.Result{StatusCode: v.Status}, nil
	}
	body := v.Body
	return sites.Result{StatusCode: http.StatusOK, Body: body[:min(len(body), policy.MaxBodySize)], ETag: etag, ContentType: "text/plain"}, nil
}

// siteName is the engine's name of the site of a request with this
// scheme and Host ("https://example.com"): the Host's port is the
// server's (as the guard took it, from the connection), the scheme's
// default without one.
func siteName(scheme, host string) string {
	_, port := sites.SplitHost(host)
	return sites.MakeKey(scheme, host, port).Name()
}

// index returns the Version of vs in force at (Unix ns), -1 before the
// first.
func index(vs []Version, at int64) int {
	i := -1
	for j, v := range vs {
		if v.Since.IsZero() || v.Since.UnixNano() <= at {
			i = j
		}
	}
	return i
}
