package identity

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"
)

// whichFeed names the feed and prefix that contain addr, among the
// feeds that list no services (x.svcs has the others).
func (v *Verifier) whichFeed(op *opEntry, addr netip.Addr, x *rangeIndex) string {
	best, src := FeedPrefix{}, ""
	for _, f := range op.feeds {
		if slices.ContainsFunc(x.svcs, func(s *serviceIndex) bool { return s.src == f.src }) {
			continue // a feed with services: servicesVerdict said which entry admits
		}
		if d := f.data.Load(); d != nil {
			for _, e := range d.doc.Prefixes {
				if e.Prefix.Contains(addr) && (!best.Prefix.IsValid() || e.Prefix.Bits() > best.Prefix.Bits()) {
					best, src = e, f.src
				}
			}
		}
	}
	if !best.Prefix.IsValid() {
		return addr.String() + " is in " + op.Name + "'s IP ranges"
	}
	s := fmt.Sprintf("%s is in %s of the feed %s", addr, best.Prefix, src)
	if len(best.Services) > 0 {
		s += ", listed for " + strings.Join(best.Services, ", ")
	}
	return s
}

// Explanation is a verdict with the steps that reached it, for humans.
type Explanation struct {
	Result
	// Claimed lists the operators the header names.
	Claimed []string
	// Steps says how the verdict was reached, e.g. "66.249.66.1 is in
	// 66.249.66.0/27 of the feed https://...".
	Steps []string
	// SignatureError says why a Web Bot Auth signature that is present
	// did not verify (VerifyRequest's error), nil otherwise.
	SignatureError error `json:"-"`
}

// Explain is Verify with the steps that reached the verdict. It uses and
// fills the same caches.
func (v *Verifier) Explain(ctx context.Context, claims Claims, addr netip.Addr) Explanation {
	return v.ExplainRequest(ctx, "", claims, addr, nil)
}

// ExplainRequest is Explain for a request that may carry a Web Bot Auth
// signature (see VerifyRequest).
func (v *Verifier) ExplainRequest(ctx context.Context, ua string, claims Claims, addr netip.Addr, sr *SignedRequest) Explanation {
	var x Explanation
	signed, err := v.verifySignature(ctx, sr, addr, &x.Steps)
	x.SignatureError = err
	if claims == 0 {
		x.Result = signed
		if signed.Verdict == Verified {
			x.Claimed = []string{signed.Operator}
		}
		return x
	}
	addr = addr.Unmap().WithZone("")
	b := budget{parent: ctx, d: v.cfg.DNSTimeout}
	defer b.release()
	for i, op := range v.ops {
		if claims&op.bit == 0 {
			continue
		}
		x.Claimed = append(x.Claimed, op.Name)
		var how []string
		var r Result
		if signed.Verdict == Verified && signed.Operator == op.Name {
			r = signed
		} else {
			r = v.verifyOne(&b, op, i, addr, ua, &how)
		}
		for _, s := range how {
			x.Steps = append(x.Steps, op.Name+": "+s)
		}
		if x.Verdict == None || r.Verdict.severity() > x.Verdict.severity() {
			x.Result = r
		}
	}
	return x
}

// FeedStatus describes one feed, for status pages and the admin API.
type FeedStatus struct {
	Source       string    `json:"source"`
	Operators    []string  `json:"operators"`
	Loaded       bool      `json:"loaded"`
	Prefixes     int       `json:"prefixes"`
	CreationTime string    `json:"creation_time,omitempty"`
	Fetched      time.Time `json:"fetched,omitzero"`
	FromStorage  bool      `json:"from_storage,omitempty"`
	LastError    string    `json:"last_error,omitempty"`
	// Idle marks a feed of a Verifier with Config.OnDemand that no claim
	// has needed yet: it is not loaded, and nothing was asked for.
	Idle bool `json:"idle,omitempty"`
	// SyncToken is the loaded copy's synctoken (JAFAR), if any.
	SyncToken string `json:"sync_token,omitempty"`
	// WithServices counts the loaded copy's prefixes that list services
	// (JAFAR); Ignored its entries not read, and ServicesUnread those
	// whose services were not read (see FeedDocument).
	WithServices   int `json:"with_services,omitempty"`
	Ignored        int `json:"ignored,omitempty"`
	ServicesUnread int `json:"services_unread,omitempty"`
}

// Feeds reports the state of every feed, sorted by source.
func (v *Verifier) Feeds() []FeedStatus {
	out := make([]FeedStatus, 0, len(v.feeds))
	for _, f := range v.feeds {
		s := FeedStatus{Source: f.src, Idle: !f.started.Load() && f.data.Load() == nil}
		for _, op := range f.ops {
			s.Operators = append(s.Operators, op.Name)
		}
		if d := f.data.Load(); d != nil {
			s.Loaded, s.Prefixes, s.CreationTime, s.Fetched, s.FromStorage = true, len(d.doc.Prefixes), d.created, d.fetched, d.stored
			s.SyncToken, s.Ignored, s.ServicesUnread = d.doc.SyncToken, d.doc.Ignored, d.doc.UnreadServices
			for _, e := range d.doc.Prefixes {
				if e.Services != nil {
					s.WithServices++
				}
			}
		}
		if e := f.lastErr.Load(); e != nil {
			s.LastError = *e
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}

// RefreshFeeds fetches every feed now (conditionally), and returns the
// errors of those that failed; their last good copies stay in force.
func (v *Verifier) RefreshFeeds(ctx context.Context) error {
	var errs []error
	for _, f := range v.feeds {
		_, err := v.fetch(ctx, f)
		f.settle()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
