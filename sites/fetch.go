package sites

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"weak"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/robotsguard/robotsguard/policy"
)

// fetchGen fetches e and records the generation it was asked for.
func (c *Cache) fetchGen(e *Site, origin http.Handler) *State {
	g := c.wanted(e)
	if origin == nil {
		if o := e.origin.Load(); o != nil {
			origin = o.h
		}
	}
	st := c.fetch(e, origin)
	for {
		have := e.have.Load()
		if have >= g || e.have.CompareAndSwap(have, g) {
			return st
		}
	}
}

// fetch fetches a site's robots.txt, following redirects, and stores the
// resulting state (RFC 9309 §2.3.1). A copy from a 2xx answer is
// revalidated with its ETag and Last-Modified: 304 keeps it.
func (c *Cache) fetch(e *Site, origin http.Handler) *State {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	prev := e.state.Load()
	req := Request{Site: e.siteURL, URL: robotsURL(e.siteURL), Origin: origin}
	if prev != nil && !prev.Unreachable && prev.Status >= 200 && prev.Status < 300 {
		req.IfNoneMatch, req.IfModifiedSince = prev.ETag, prev.LastModified
	}
	var (
		res Result
		err error
	)
	for {
		res, err = c.src.Fetch(ctx, req)
		if err != nil || res.StatusCode < 300 || res.StatusCode >= 400 || res.StatusCode == http.StatusNotModified {
			break
		}
		if res.Location == nil {
			err = errNoLocation
			break
		}
		if req.Redirects == maxRedirects {
			err = errTooManyRedirects
			break
		}
		req.Redirects++
		req.URL = res.Location
	}
	now := c.now()
	e.checked.Store(now.UnixNano())
	e.failed.Store(false)
	var st *State
	switch {
	case err == nil && res.StatusCode == http.StatusNotModified && req.IfNoneMatch+req.IfModifiedSince != "":
		c.reportState(e, prev) // the source may have failed in between
		c.touchVersion(e, now)
		c.observe(e, NotModified)
		c.setDue(e, now, c.refresh)
		c.confirm(e, prev)
		return prev
	case err == nil && policy.StatusAccess(res.StatusCode) == policy.Rules:
		sum := sha256.Sum256(res.Body)
		st = &State{Robots: c.parse(sum, res.Body), Outcome: OK, Status: res.StatusCode, Fetched: now,
			ETag: res.ETag, LastModified: res.LastModified, ContentType: res.ContentType, Size: len(res.Body), sum: sum}
		// A web page where robots.txt should be: by its body, or by its
		// type when it has no rule (a real file sent as text/html by a
		// misconfigured server keeps its rules and outcome ok).
		if st.Robots.HTML() || isHTMLType(res.ContentType) && !st.Robots.Restricts() {
			st.Outcome = HTML
		}
	case errors.Is(err, errTooManyRedirects), errors.Is(err, errNoLocation),
		err == nil && policy.StatusAccess(res.StatusCode) == policy.Unavailable:
		st = &State{Robots: c.empty, Outcome: Unavailable, Status: res.StatusCode, Fetched: now, Err: err}
	default:
		if err == nil {
			err = errors.New("status " + http.StatusText(res.StatusCode))
			if res.StatusCode < 100 || res.StatusCode > 599 || http.StatusText(res.StatusCode) == "" || res.StatusCode == http.StatusNotModified {
				err = fmt.Errorf("unexpected status %d", res.StatusCode)
			}
		}
		kept := prev != nil && !prev.Unreachable
		e.failed.Store(true)
		c.logChange(e, "unreachable", zapcore.WarnLevel, "robots_guard: robots.txt unreachable",
			zap.String("site", e.site), zap.Int("status", res.StatusCode), zap.Error(err), zap.Bool("kept_last_copy", kept),
			zap.String("meanwhile", c.unreachableMeans(kept)))
		c.observe(e, Unreachable)
		if kept {
			c.setDue(e, now, c.retry)
			return prev
		}
		st = &State{Robots: c.empty, Outcome: Unreachable, Unreachable: true, Status: res.StatusCode, Fetched: now}
		c.setState(e, st)
		c.setDue(e, now, c.retry)
		c.recordVersion(e, st, nil, now) // a time without a file in force: an audit judges none of it
		return st
	}
	c.reportState(e, st)
	c.observe(e, st.Outcome)
	c.setState(e, st)
	c.setDue(e, now, c.refresh)
	c.recordVersion(e, st, res.Body, now)
	c.confirm(e, st)
	return st
}

// confirm calls Config.OnConfirm for a copy a fetch confirmed.
func (c *Cache) confirm(e *Site, st *State) {
	if c.onConfirm != nil && st != nil && !st.Unreachable {
		c.onConfirm(e, st.Robots)
	}
}

// robotsURL is the URL of a site's robots.txt.
func robotsURL(site *url.URL) *url.URL {
	return &url.URL{Scheme: site.Scheme, Host: site.Host, Path: "/robots.txt"}
}

// isHTMLType reports whether a Content-Type names an HTML document.
func isHTMLType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	return strings.EqualFold(mt, "text/html") || strings.EqualFold(mt, "application/xhtml+xml")
}

func (c *Cache) observe(e *Site, o Outcome) {
	if c.obs != nil {
		label := OtherSites
		if e.named {
			label = e.site
		}
		c.obs.ObserveFetch(label, o)
	}
}

func (c *Cache) unreachableMeans(kept bool) string {
	switch {
	case kept:
		return "the last good copy stays in force"
	case c.allowUnreachable:
		return "every bot may fetch everything (robots_txt.on_unreachable allow)"
	}
	return "bots are refused everything (robots_txt.on_unreachable disallow)"
}

// reportState logs, once per change of what it means for bots, the state
// of a site after a fetch that got an answer: a file with rules (Debug,
// or Info after a state without rules), a file without rules, an HTML page,
// or no file at all. "Why is nothing blocked?" has an answer in the log.
func (c *Cache) reportState(e *Site, st *State) {
	if c.onRules != nil && e.rulesSeen != st.Robots && !st.Unreachable {
		e.rulesSeen = st.Robots
		c.onRules(e, st.Robots)
	}
	site := zap.String("site", e.site)
	switch {
	case st.Outcome == HTML && st.Robots.Restricts():
		c.logChange(e, "html_rules", zapcore.WarnLevel, "robots_guard: robots.txt is an HTML page, not a robots.txt; the rule lines found in it apply",
			site, zap.String("content_type", st.ContentType), zap.Int("bytes", st.Size))
	case st.Outcome == HTML:
		c.logChange(e, "html", zapcore.WarnLevel, "robots_guard: robots.txt is an HTML page, not a robots.txt; no rule applies and every bot may fetch everything",
			site, zap.String("content_type", st.ContentType), zap.Int("bytes", st.Size))
	case st.Outcome == Unavailable:
		f := []zap.Field{site, zap.Int("status", st.Status)}
		if st.Err != nil {
			f = append(f, zap.Error(st.Err))
		}
		// The rule stays RFC 9309's, but the guard then enforces nothing
		// on the site, which its operator wants to hear of: a WARN, once
		// per site and status.
		c.logChange(e, "unavailable:"+strconv.Itoa(st.Status), zapcore.WarnLevel, unavailableMessage(st.Status), f...)
	case st.Outcome == OK && st.Size == 0:
		// What a misrouted fetch often gets: Caddy answers a Host no
		// site matches with an empty 200.
		c.logChange(e, "empty", zapcore.WarnLevel, "robots_guard: an empty robots.txt: every bot may fetch everything; is the upstream's site address right?",
			site, zap.Int("status", st.Status))
	case !st.Robots.Restricts():
		c.logChange(e, "no_rules", zapcore.InfoLevel, "robots_guard: robots.txt has no Disallow and no Crawl-delay; every bot may fetch everything",
			site, zap.Int("bytes", st.Size))
	default:
		lvl := zapcore.InfoLevel
		if e.class == "" || e.class == "rules" {
			lvl = zapcore.DebugLevel
		}
		c.logChange(e, "rules", lvl, "robots_guard: robots.txt rules in force", site, zap.Int("bytes", st.Size))
	}
}

// unavailableMessage is the WARN of a robots.txt answered 4xx: what it
// means, and for a 401 or 403, the likely mistake.
func unavailableMessage(status int) string {
	const means = "every bot may fetch everything, and the guard enforces nothing on this site (RFC 9309 §2.3.1.3)"
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "robots_guard: robots.txt answered " + strconv.Itoa(status) + ", which counts as no robots.txt: " + means +
			"; is the file behind authentication or a firewall by mistake? Let everyone fetch /robots.txt"
	}
	return "robots_guard: no robots.txt (status " + strconv.Itoa(status) + "): " + means
}

// logChange writes a line when a site's class differs from the last one
// logged for it. Fetches of one site never run at once, so e.class needs no
// lock.
func (c *Cache) logChange(e *Site, class string, lvl zapcore.Level, msg string, fields ...zap.Field) {
	if e.class == class {
		return
	}
	e.class = class
	if ce := c.log.Check(lvl, msg); ce != nil {
		ce.Write(fields...)
	}
}

// setDue records that e is due for a refresh after d. A timer marks it
// stale then; a timer of an earlier setDue that fires before the new due
// time does nothing.
func (c *Cache) setDue(e *Site, now time.Time, d time.Duration) {
	due := now.Add(d).UnixNano()
	e.due.Store(due)
	e.stale.Store(false)
	if c.timers {
		// One timer per entry, reset at each setDue and stopped when the
		// cache drops the entry; it holds the entry weakly, so a dropped
		// entry is garbage at once and a flood of sites leaves no queue of
		// pending timers behind.
		e.timerMu.Lock()
		if e.timer == nil {
			wp := weak.Make(e)
			e.timer = time.AfterFunc(d, func() {
				if e := wp.Value(); e != nil && time.Now().UnixNano() >= e.due.Load() {
					e.stale.Store(true)
				}
			})
		} else if !e.evicted.Load() {
			e.timer.Reset(d)
		}
		e.timerMu.Unlock()
	}
}

// isDue reports whether e is due for a refresh.
func (c *Cache) isDue(e *Site) bool {
	if c.timers {
		return e.stale.Load()
	}
	return c.now().UnixNano() >= e.due.Load()
}

var (
	errTooManyRedirects = errors.New("more than 5 redirects")
	errNoLocation       = errors.New("redirect without a usable Location")
)
