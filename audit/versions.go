package audit

import (
	"context"
	"net/http"
	"strconv"
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
}

// datedSource serves, for every site, the Version in force at the
// audit's current entry: the engine asks it at the first bot request of
// each site, and again when the Auditor crosses into the next Version
// (Engine.Refresh). Its ETag is the Version's index, so a refresh
// within one Version costs a 304 and no parse.
type datedSource struct {
	versions []Version
	current  atomic.Int32
}

func (s *datedSource) Fetch(_ context.Context, req sites.Request) (sites.Result, error) {
	i := int(s.current.Load())
	etag := `"` + strconv.Itoa(i) + `"`
	if req.IfNoneMatch == etag {
		return sites.Result{StatusCode: http.StatusNotModified}, nil
	}
	body := s.versions[i].Body
	return sites.Result{StatusCode: http.StatusOK, Body: body[:min(len(body), policy.MaxBodySize)], ETag: etag, ContentType: "text/plain"}, nil
}

// index returns the Version in force at (Unix ns), -1 before the first.
func (s *datedSource) index(at int64) int {
	i := -1
	for j, v := range s.versions {
		if v.Since.IsZero() || v.Since.UnixNano() <= at {
			i = j
		}
	}
	return i
}
