package dashboard

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/report"
)

// series is one stacked part of a chart's bars.
type series struct {
	name, class string
	value       func(report.Slice) int64
}

var actionSeries = []series{
	{"allowed", "s-allow", func(s report.Slice) int64 { return s.Allowed.Total() }},
	{"denied", "s-deny", func(s report.Slice) int64 { return s.Denied.Total() }},
	{"throttled", "s-throttle", func(s report.Slice) int64 { return s.Throttled.Total() }},
	{"trapped", "s-trap", func(s report.Slice) int64 { return s.Trapped.Total() }},
	{"banned", "s-ban", func(s report.Slice) int64 { return s.Banned.Total() }},
}

// verdicts sums a verdict over every action of a slice.
func verdicts(f func(report.ByVerification) int64) func(report.Slice) int64 {
	return func(s report.Slice) int64 {
		return f(s.Allowed) + f(s.Denied) + f(s.Throttled) + f(s.Trapped) + f(s.Banned)
	}
}

var verificationSeries = []series{
	{"verified", "s-verified", verdicts(func(b report.ByVerification) int64 { return b.Verified })},
	{"unverifiable", "s-unverifiable", verdicts(func(b report.ByVerification) int64 { return b.Unverifiable })},
	{"spoofed", "s-spoofed", verdicts(func(b report.ByVerification) int64 { return b.Spoofed })},
}

// Chart geometry, in SVG user units. A chart is drawn as wide as the
// page's content column (1,060 pixels at most), so a unit is about a
// pixel there and its labels (12 units) are read at the size of the
// page's small print; a narrower window scales it down.
const (
	chartW, chartH = 1000, 180
	padL, padB     = 48, 20
)

// dayChart draws the bot requests of every site of rep over the last day,
// by action, for the overview; "" when rep has no site.
func dayChart(rep report.Report) template.HTML {
	if len(rep.Sites) == 0 {
		return ""
	}
	day := slices.Clone(rep.Sites[0].Traffic.LastDay)
	at := make(map[time.Time]int, len(day))
	for i, s := range day {
		at[s.Start] = i
	}
	for _, sr := range rep.Sites[1:] {
		for _, s := range sr.Traffic.LastDay {
			if i, ok := at[s.Start]; ok {
				day[i] = total([]report.Slice{day[i], s})
				day[i].Start = s.Start
			}
		}
	}
	return actionChart(day, dayLayout, dayLabels, "Bot requests, last day, all sites (hours, UTC)")
}

// The labels of a day's chart: every third hour, as "15:00".
const (
	dayLayout = "15:04"
	dayLabels = 3
)

// actionChart draws bot requests per slice, stacked by action.
func actionChart(ss []report.Slice, layout string, labelEvery int, title string) template.HTML {
	return chart(ss, actionSeries, layout, labelEvery, title)
}

// verificationChart draws crawler claims per slice, stacked by verdict
// (claims of no known crawler, "none", are left out).
func verificationChart(ss []report.Slice, layout string, labelEvery int, title string) template.HTML {
	return chart(ss, verificationSeries, layout, labelEvery, title)
}

// chart draws a stacked bar chart of ss with a legend; each bar has a
// title (shown on hover) with its counts. Colours come from the page's
// stylesheet, by class.
func chart(ss []report.Slice, ser []series, layout string, labelEvery int, title string) template.HTML {
	var max int64
	for _, s := range ss {
		var t int64
		for _, se := range ser {
			t += se.value(s)
		}
		max = maxI(max, t)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class=chart><figcaption>%s</figcaption><svg viewBox="0 0 %d %d" role=img aria-label="%s">`,
		template.HTMLEscapeString(title), chartW, chartH, template.HTMLEscapeString(title))
	plotH := chartH - padB - 6
	fmt.Fprintf(&b, `<line class=axis x1=%d y1=%d x2=%d y2=%d />`, padL, 6, padL, 6+plotH)
	fmt.Fprintf(&b, `<line class=axis x1=%d y1=%d x2=%d y2=%d />`, padL, 6+plotH, chartW, 6+plotH)
	fmt.Fprintf(&b, `<text class=tick x=%d y=%d text-anchor=end>%s</text>`, padL-4, 16, group3(max))
	fmt.Fprintf(&b, `<text class=tick x=%d y=%d text-anchor=end>0</text>`, padL-4, 6+plotH)
	if len(ss) > 0 {
		slot := float64(chartW-padL) / float64(len(ss))
		for i, s := range ss {
			x := float64(padL) + float64(i)*slot + slot*0.12
			w := slot * 0.76
			y := float64(6 + plotH)
			var tip strings.Builder
			tip.WriteString(s.Start.UTC().Format("2006-01-02 15:04 UTC"))
			for _, se := range ser {
				n := se.value(s)
				fmt.Fprintf(&tip, ", %s %s", se.name, group3(n))
				if n == 0 || max == 0 {
					continue
				}
				h := float64(plotH) * float64(n) / float64(max)
				y -= h
				fmt.Fprintf(&b, `<rect class=%s x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`,
					se.class, x, y, w, h, se.name, group3(n))
			}
			// A transparent bar over the whole slot carries its title.
			fmt.Fprintf(&b, `<rect class=hover x="%.1f" y="6" width="%.1f" height="%d"><title>%s</title></rect>`,
				float64(padL)+float64(i)*slot, slot, plotH, template.HTMLEscapeString(tip.String()))
			if i%labelEvery == 0 {
				fmt.Fprintf(&b, `<text class=tick x="%.1f" y=%d text-anchor=middle>%s</text>`,
					float64(padL)+float64(i)*slot+slot/2, chartH-4, s.Start.UTC().Format(layout))
			}
		}
	}
	b.WriteString(`</svg><p class=legend>`)
	for _, se := range ser {
		fmt.Fprintf(&b, `<span class="key %s"></span>%s `, se.class, se.name)
	}
	b.WriteString(`</p></figure>`)
	return template.HTML(b.String()) //nolint:gosec // every value written is escaped or a number
}

// spark draws a small chart of a day's bot requests for the overview: all
// of them, and in front those stopped, as two areas (two paths, so that a
// hundred sites keep the page small).
func spark(ss []report.Slice) template.HTML {
	const w, h = 168, 28
	var max int64
	for _, s := range ss {
		max = maxI(max, s.Total())
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class=spark viewBox="0 0 %d %d" width=%d height=%d role=img aria-label="bot requests over the last day, and those stopped">`, w, h, w, h)
	if max > 0 && len(ss) > 0 {
		step := float64(w) / float64(len(ss))
		area := func(class string, v func(report.Slice) int64) {
			fmt.Fprintf(&b, `<path class=%s d="M0 %d`, class, h)
			for i, s := range ss {
				y := h - int(float64(h)*float64(v(s))/float64(max)+0.5)
				fmt.Fprintf(&b, `V%dH%d`, y, int(float64(i+1)*step+0.5))
			}
			fmt.Fprintf(&b, `V%dZ"/>`, h)
		}
		area("s-allow", report.Slice.Total)
		area("s-deny", func(s report.Slice) int64 { return s.Total() - s.Allowed.Total() })
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers only
}

func maxI(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
