package audit

import (
	"sort"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/report"
)

// timelineSteps are the slice widths of a timeline, finest first: it
// starts with minutes and moves to the next width when it holds more
// than maxSlices slices, so that its memory is bounded whatever the log
// spans (the last width holds minTime to maxTime in fewer).
var timelineSteps = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 84 * 24 * time.Hour}

const maxSlices = 2048

// timeline counts a site's bot requests over the log's time, by what the
// guard would have done and the verification of their claim.
type timeline struct {
	step   int // index in timelineSteps
	slices map[int64]*report.Slice
}

// add counts one bot request at (Unix ns; a time outside minTime to
// maxTime, which no entry has, counts at the nearest of them).
func (tl *timeline) add(at int64, v *guard.Verdict) {
	if tl.slices == nil {
		tl.slices = make(map[int64]*report.Slice)
	}
	at = min(max(at, minTime), maxTime)
	w := int64(timelineSteps[tl.step])
	k := at - at%w
	s := tl.slices[k]
	if s == nil {
		for len(tl.slices) >= maxSlices && tl.step < len(timelineSteps)-1 {
			tl.coarsen()
			w = int64(timelineSteps[tl.step])
			k = at - at%w
		}
		if s = tl.slices[k]; s == nil {
			s = &report.Slice{Start: time.Unix(0, k).UTC()}
			tl.slices[k] = s
		}
	}
	var b *report.ByVerification
	switch {
	case v.Action == guard.Allow:
		b = &s.Allowed
	case v.Reason == guard.ReasonCrawlDelay:
		b = &s.Throttled
	case v.Reason == guard.ReasonTrap || v.Reason == guard.ReasonTrapUnattributed:
		b = &s.Trapped
	case v.Reason == guard.ReasonBanned:
		b = &s.Banned
	default:
		b = &s.Denied
	}
	switch v.Verification {
	case identity.Verified:
		b.Verified++
	case identity.Spoofed:
		b.Spoofed++
	case identity.Unverifiable:
		b.Unverifiable++
	default:
		b.None++
	}
}

// coarsen moves the timeline to the next slice width.
func (tl *timeline) coarsen() {
	tl.step++
	w := int64(timelineSteps[tl.step])
	m := make(map[int64]*report.Slice, len(tl.slices)/2)
	for k, s := range tl.slices {
		nk := k - k%w
		if t := m[nk]; t != nil {
			addSlice(t, s)
		} else {
			s.Start = time.Unix(0, nk).UTC()
			m[nk] = s
		}
	}
	tl.slices = m
}

// merge adds o's counts to tl (another shard's timeline of the site),
// at the coarser of their widths.
func (tl *timeline) merge(o *timeline) {
	if tl.slices == nil {
		tl.slices = make(map[int64]*report.Slice)
	}
	for tl.step < o.step {
		tl.coarsen()
	}
	w := int64(timelineSteps[tl.step])
	for k, s := range o.slices {
		nk := k - k%w
		t := tl.slices[nk]
		if t == nil {
			t = &report.Slice{Start: time.Unix(0, nk).UTC()}
			tl.slices[nk] = t
		}
		addSlice(t, s)
	}
	for len(tl.slices) > maxSlices && tl.step < len(timelineSteps)-1 {
		tl.coarsen()
	}
}

// addSlice adds b's counts to a.
func addSlice(a, b *report.Slice) {
	for _, p := range [...][2]*report.ByVerification{{&a.Allowed, &b.Allowed}, {&a.Denied, &b.Denied}, {&a.Throttled, &b.Throttled},
		{&a.Trapped, &b.Trapped}, {&a.Banned, &b.Banned}} {
		p[0].None += p[1].None
		p[0].Verified += p[1].Verified
		p[0].Spoofed += p[1].Spoofed
		p[0].Unverifiable += p[1].Unverifiable
	}
}

// Slices returns the timeline, oldest first, in at most bars slices of
// equal width (empty ones included), and that width.
func (tl *timeline) Slices(bars int) ([]report.Slice, time.Duration) {
	if len(tl.slices) == 0 {
		return nil, 0
	}
	w := timelineSteps[tl.step]
	keys := make([]int64, 0, len(tl.slices))
	for k := range tl.slices {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	first, last := keys[0], keys[len(keys)-1]
	n := int((last-first)/int64(w)) + 1
	per := (n + bars - 1) / bars // source slices per bar
	width := time.Duration(per) * w
	out := make([]report.Slice, (n+per-1)/per)
	for i := range out {
		out[i].Start = time.Unix(0, first+int64(i)*int64(width)).UTC()
	}
	for _, k := range keys {
		addSlice(&out[int((k-first)/int64(width))], tl.slices[k])
	}
	return out, width
}
