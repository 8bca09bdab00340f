package report

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/identity"
)

// Report is the violations report: per site, who broke its robots.txt
// and which lines stopped whom.
type Report struct {
	// Since is when the Recorder started counting.
	Since time.Time    `json:"since"`
	Sites []SiteReport `json:"sites"`
}

// SiteReport is the report of one site.
type SiteReport struct {
	Site string `json:"site"`
	// LastHour and LastDay list the top clients by stopped requests (and
	// then by licensed ones).
	LastHour []ClientReport `json:"last_hour"`
	LastDay  []ClientReport `json:"last_day"`
	// Lines lists the robots.txt lines that denied requests, the busiest
	// first.
	Lines []LineReport `json:"lines"`
	// Traffic counts the site's bot requests, and the browsers' that a
	// trap or a ban stopped, over time.
	Traffic Traffic `json:"traffic"`
}

// Traffic is a site's requests over the last hour, in twelve five-minute
// slices, and over the last day, in 24 hourly slices; oldest first, the
// last slice the current one. Its counts are exact.
type Traffic struct {
	LastHour []Slice `json:"last_hour"`
	LastDay  []Slice `json:"last_day"`
}

// Slice counts a site's requests in one slice of time by what happened to
// them and the verification verdict of their claim to be a known crawler.
type Slice struct {
	// Start is when the slice starts.
	Start time.Time `json:"start"`
	// Allowed counts bot requests that passed (a dry run's included: they
	// count where they would have been stopped), licensed ones too.
	Allowed ByVerification `json:"allowed"`
	// Denied counts robots.txt denials and spoofed claims refused, and the
	// other refusals of a bot (content signals, licences).
	Denied ByVerification `json:"denied"`
	// Throttled counts requests faster than the Crawl-delay.
	Throttled ByVerification `json:"throttled"`
	// Trapped counts requests for a trap path (with the client's own link
	// token or without).
	Trapped ByVerification `json:"trapped"`
	// Banned counts requests refused by a ban.
	Banned ByVerification `json:"banned"`
}

// Total returns the slice's requests.
func (s Slice) Total() int64 {
	return s.Allowed.Total() + s.Denied.Total() + s.Throttled.Total() + s.Trapped.Total() + s.Banned.Total()
}

// ByVerification splits a count by verification verdict.
type ByVerification struct {
	None         int64 `json:"none"`
	Verified     int64 `json:"verified"`
	Spoofed      int64 `json:"spoofed"`
	Unverifiable int64 `json:"unverifiable"`
}

// Total returns the sum over the verdicts.
func (b ByVerification) Total() int64 { return b.None + b.Verified + b.Spoofed + b.Unverifiable }

// add adds the totals of a bucket to the slice.
func (s *Slice) add(t *[kinds][verdicts]int64) {
	for k := range t {
		var to *ByVerification
		switch Kind(k) {
		case Allowed:
			to = &s.Allowed
		case Denial:
			to = &s.Denied
		case Throttle:
			to = &s.Throttled
		case Trap, TrapUnattributed:
			to = &s.Trapped
		case Banned:
			to = &s.Banned
		default:
			continue
		}
		to.None += t[k][identity.None]
		to.Verified += t[k][identity.Verified]
		to.Spoofed += t[k][identity.Spoofed]
		to.Unverifiable += t[k][identity.Unverifiable]
	}
}

// traffic adds a shard's buckets to the slices of tr, whose slices start
// at the five-minute and hourly boundaries before now.
func (sh *reportShard) traffic(tr *Traffic, now int64) {
	const five, hour = int64(5 * time.Minute), int64(time.Hour)
	lastMinute, lastHour := now-now%five, now-now%hour
	firstMinute := lastMinute - int64(len(tr.LastHour)-1)*five
	firstHour := lastHour - int64(len(tr.LastDay)-1)*hour
	for i := range sh.minutes {
		b := &sh.minutes[i]
		if b.start == 0 {
			continue
		}
		if b.start >= firstMinute && b.start <= lastMinute {
			tr.LastHour[(b.start-firstMinute)/five].add(&b.totals)
		}
		// A five-minute bucket not folded yet counts in its hour.
		if hs := b.start - b.start%hour; hs >= firstHour && hs <= lastHour {
			tr.LastDay[(hs-firstHour)/hour].add(&b.totals)
		}
	}
	for i := range sh.hours {
		b := &sh.hours[i]
		if b.start != 0 && b.start >= firstHour && b.start <= lastHour {
			tr.LastDay[(b.start-firstHour)/hour].add(&b.totals)
		}
	}
}

// newTraffic returns empty slices ending with those of now.
func newTraffic(now int64) Traffic {
	const five, hour = int64(5 * time.Minute), int64(time.Hour)
	tr := Traffic{LastHour: make([]Slice, reportMinutes), LastDay: make([]Slice, reportHours)}
	for i := range tr.LastHour {
		tr.LastHour[i].Start = time.Unix(0, now-now%five-int64(reportMinutes-1-i)*five).UTC()
	}
	for i := range tr.LastDay {
		tr.LastDay[i].Start = time.Unix(0, now-now%hour-int64(reportHours-1-i)*hour).UTC()
	}
	return tr
}

// ClientReport is one client's row: its address prefix, the group its
// header chose and the verification verdict.
type ClientReport struct {
	Client       string `json:"client"`
	Group        string `json:"group"`
	Verification string `json:"verification"`
	// Class is "unfurler" or "fetcher" for an agent that fetches for a
	// person (a link preview, a user-triggered fetch).
	Class string `json:"class,omitempty"`
	// UserAgent is the User-Agent header of the row's latest request (its
	// first 200 bytes; "" for none).
	UserAgent string `json:"user_agent"`
	Denials   int64  `json:"denials"`
	Throttles int64  `json:"throttles"`
	Traps     int64  `json:"traps"`
	Banned    int64  `json:"banned"`
	// UnattributedTraps counts requests under a trap path without the
	// client's own link token (trap_links client): refused, not banned.
	UnattributedTraps int64 `json:"unattributed_traps,omitempty"`
	// The licence decisions (RSL) on the row's requests for content whose
	// licence server issues tokens: Licensed counts those that passed
	// with a valid token, Unlicensed those refused without a token (401,
	// or 402 where the licence asks payment), InvalidTokens those refused
	// with a token the server did not accept (401 invalid_token),
	// LicenseUnavailable those whose token could not be checked (503
	// server_error: the licence server's failure, not the client's); with
	// licenses report, the refusals that would have been. None of them is
	// a robots.txt denial (Denials).
	Licensed           int64 `json:"licensed,omitempty"`
	Unlicensed         int64 `json:"unlicensed,omitempty"`
	InvalidTokens      int64 `json:"invalid_tokens,omitempty"`
	LicenseUnavailable int64 `json:"license_unavailable,omitempty"`
	// Error is how many of this row's requests may be missing: the row
	// took over a slot of the space-saving counters, and counts only what
	// came since (the true total is at most the row's plus Error); 0
	// means exact.
	Error int64 `json:"error,omitempty"`
}

// LineReport is one robots.txt line's row.
type LineReport struct {
	Line  int         `json:"line"`
	Rule  string      `json:"rule"`
	Count int64       `json:"count"`
	Whom  []WhomCount `json:"whom"`
}

// WhomCount says how often a line denied a group (and verdict).
type WhomCount struct {
	Group        string `json:"group"`
	Verification string `json:"verification"`
	Count        int64  `json:"count"`
}

// Report returns the violations report: per site (the 100 busiest), the
// top clients by denials, throttles, trap hits, banned requests and
// licence refusals (then by licensed requests) over the last hour and
// day, the lines that denied whom, and the site's traffic over time.
// Every record made before the call is counted.
func (r *Recorder) Report() Report {
	r.drain()
	now := r.now().UnixNano()
	out := Report{Since: r.startedAt, Sites: []SiteReport{}}
	for _, site := range r.sites.Keys() {
		sr, ok := r.sites.Peek(site)
		if !ok {
			continue
		}
		hour, day := map[reportKey]*reportCounts{}, map[reportKey]*reportCounts{}
		lines := map[lineKey]*LineReport{}
		traffic := newTraffic(now)
		for i := range sr.shards {
			sh := &sr.shards[i]
			// The buckets' maps are summed under the lock: flushes
			// write them.
			sh.mu.Lock()
			// The last day: the hourly buckets (folded five-minute
			// ones) and the five-minute buckets not folded yet.
			sum(hour, sh.minutes[:], now-int64(time.Hour))
			sum(day, sh.hours[:], now-int64(24*time.Hour))
			sum(day, sh.minutes[:], now-int64(24*time.Hour))
			sh.traffic(&traffic, now)
			for lk, ls := range sh.lines {
				lr := lines[lk]
				if lr == nil {
					lr = &LineReport{Line: lk.line, Rule: ls.text}
					lines[lk] = lr
				}
				lr.Count += ls.count
				for k, c := range ls.whom.m {
					lr.Whom = addWhom(lr.Whom, WhomCount{Group: k.group, Verification: k.verification.String(), Count: c.count - c.err})
				}
			}
			sh.mu.Unlock()
		}
		rep := SiteReport{Site: site,
			LastHour: r.rows(hour),
			LastDay:  r.rows(day),
			Traffic:  traffic,
		}
		for _, lr := range lines {
			slices.SortFunc(lr.Whom, func(a, b WhomCount) int {
				return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Group, b.Group), strings.Compare(a.Verification, b.Verification))
			})
			rep.Lines = append(rep.Lines, *lr)
		}
		slices.SortFunc(rep.Lines, func(a, b LineReport) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Line, b.Line), strings.Compare(a.Rule, b.Rule))
		})
		if len(rep.Lines) > reportTop {
			rep.Lines = rep.Lines[:reportTop]
		}
		out.Sites = append(out.Sites, rep)
	}
	slices.SortFunc(out.Sites, func(a, b SiteReport) int { return strings.Compare(a.Site, b.Site) })
	return out
}

// sum adds the counts of the buckets that end after since to to.
func sum(to map[reportKey]*reportCounts, bs []bucket, since int64) {
	for i := range bs {
		b := &bs[i]
		if b.clients.m == nil || b.start+b.len <= since {
			continue
		}
		for k, c := range b.clients.m {
			t := to[k]
			if t == nil {
				t = &reportCounts{}
				to[k] = t
			}
			t.merge(c)
		}
	}
}

// rows returns the top rows of summed counts.
func (r *Recorder) rows(sum map[reportKey]*reportCounts) []ClientReport {
	rows := make([]ClientReport, 0, len(sum))
	for k, c := range sum {
		rows = append(rows, ClientReport{
			Client: k.client.Format(r.v4, r.v6), Group: k.group, Verification: k.verification.String(), Class: k.class, UserAgent: c.ua,
			Denials: c.n[Denial] - c.err, Throttles: c.n[Throttle], Traps: c.n[Trap], Banned: c.n[Banned],
			UnattributedTraps: c.n[TrapUnattributed],
			Licensed:          c.n[Licensed], Unlicensed: c.n[Unlicensed], InvalidTokens: c.n[InvalidToken], LicenseUnavailable: c.n[LicenseUnavailable],
			Error: c.err,
		})
	}
	// The most stopped requests first, then the most licensed ones (a row
	// of licensed requests only is last: the report is of violations);
	// a client's rows of several groups or verdicts in a fixed order.
	slices.SortFunc(rows, func(a, b ClientReport) int {
		return cmp.Or(cmp.Compare(stopped(&b), stopped(&a)), cmp.Compare(b.Licensed, a.Licensed), strings.Compare(a.Client, b.Client),
			strings.Compare(a.Group, b.Group), strings.Compare(a.Verification, b.Verification), strings.Compare(a.Class, b.Class))
	})
	if len(rows) > reportTop {
		rows = rows[:reportTop]
	}
	return rows
}

// stopped is the requests a row counts that were stopped (or, in dry run,
// would have been): all but the licensed ones.
func stopped(c *ClientReport) int64 {
	return c.Denials + c.Throttles + c.Traps + c.Banned + c.UnattributedTraps + c.Unlicensed + c.InvalidTokens + c.LicenseUnavailable
}

// addWhom adds w to ws, summing the counts of the same group and verdict.
func addWhom(ws []WhomCount, w WhomCount) []WhomCount {
	for i := range ws {
		if ws[i].Group == w.Group && ws[i].Verification == w.Verification {
			ws[i].Count += w.Count
			return ws
		}
	}
	return append(ws, w)
}

// Handler returns an http.Handler that serves Report as JSON, for a
// net/http program to mount where only its operators reach it.
func (r *Recorder) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(r.Report())
	})
}
