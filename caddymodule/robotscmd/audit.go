package robotscmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/robotsguard/robotsguard/audit"
	"github.com/robotsguard/robotsguard/dashboard"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/sites"
)

// auditOpts are the flags of "caddy robots audit".
type auditOpts struct {
	robots  []string // FILE|URL[@DATE]
	history string   // a running Caddy's admin address
	site    string
	format  string
	config  string // a robots_guard JSON block
	offline bool
	asJSON  bool
	all     bool
	top     int
	html    string // a file for the page
	// licenses are the RSL documents given, URL=FILE.
	licenses []string
}

// auditCommand is "caddy robots audit".
func auditCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "audit [--robots <file|URL>[@DATE]]... [--history <admin address>] [--site <URL>] [--license <URL>=<file>]... [--config <json>] [--offline] [--json] <log>...",
		Short: "Finds the bots that ignored robots.txt in access logs",
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			var o auditOpts
			o.robots, _ = c.Flags().GetStringArray("robots")
			o.history, _ = c.Flags().GetString("history")
			o.site, _ = c.Flags().GetString("site")
			o.format, _ = c.Flags().GetString("format")
			o.config, _ = c.Flags().GetString("config")
			o.offline, _ = c.Flags().GetBool("offline")
			o.asJSON, _ = c.Flags().GetBool("json")
			o.all, _ = c.Flags().GetBool("all")
			o.top, _ = c.Flags().GetInt("top")
			o.html, _ = c.Flags().GetString("html")
			o.licenses, _ = c.Flags().GetStringArray("license")
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			code, err := runAudit(ctx, os.Stdout, os.Stderr, args, o)
			if err != nil {
				err = errors.New(termSafe(err.Error())) // it may quote a log
			}
			exit(code, err)
			return nil
		},
	}
	f := c.Flags()
	f.StringArray("robots", nil, "robots.txt file or URL to judge by (required); several, each with the date it came into force: --robots old.txt@2026-01-01 --robots robots.txt@2026-03-15T10:00:00Z")
	f.String("history", "", "admin API address of a running Caddy (localhost:2019): judge each site's requests by the robots.txt versions it has seen, each from when it was first seen (--robots for the times before)")
	f.String("site", "", "scheme and host of logs whose lines carry none (Common/Combined), e.g. https://example.com (default "+audit.DefaultSite+")")
	f.String("format", audit.FormatAuto, "log format: "+strings.Join(audit.Formats, ", "))
	f.String("config", "", "JSON file of a robots_guard block (bots, verify, crawl_delay, clients, traps, bans, ...): judge as that guard would")
	f.StringArray("license", nil, "the RSL document a License line of robots.txt names, from a file: --license https://example.com/license.xml=license.xml (the last = separates them; several: repeat it); without it the audit fetches each document once, at the start")
	f.Bool("offline", false, "check no crawler claim (no IP-range feed, no DNS): each is judged as the guard judges one it cannot check, unverifiable, by its group and *")
	f.Bool("json", false, "print the result as JSON")
	f.Bool("all", false, "list the compliant bots too")
	f.String("html", "", "also write the result as one self-contained HTML page, in the dashboard's style, to this file")
	f.Int("top", 50, "rows shown per site in the table, the most stopped first (0: all; --json has them all)")
	return c
}

// runAudit is "caddy robots audit": the result on out, warnings on
// errOut; it returns the exit code: 1 when a bot would have been
// stopped, 0 when none, 2 on an error.
func runAudit(ctx context.Context, out, errOut io.Writer, logs []string, o auditOpts) (int, error) {
	var cfg guard.Config
	if o.config != "" {
		b, err := os.ReadFile(o.config)
		if err != nil {
			return exitError, err
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return exitError, fmt.Errorf("--config %s: %w", o.config, err)
		}
	}
	if len(o.robots) == 0 && o.history == "" {
		return exitError, fmt.Errorf("give the robots.txt to judge by: --robots <file or URL>[@DATE], or --history <admin address> of the running Caddy")
	}
	var history map[string][]audit.Version
	if o.history != "" {
		var err error
		if history, err = loadHistory(o.history); err != nil {
			return exitError, err
		}
	}
	var versions []audit.Version
	for _, spec := range o.robots {
		v, err := readVersion(spec)
		if err != nil {
			return exitError, err
		}
		versions = append(versions, v)
	}
	licenses, err := readLicenses(o.licenses)
	if err != nil {
		return exitError, err
	}
	a, err := audit.New(cfg, audit.Options{Format: o.format, Site: o.site, Versions: versions, History: history, Offline: o.offline, Licenses: licenses})
	if err != nil {
		return exitError, err
	}
	defer a.Close()
	stop := showProgress(os.Stderr, a, logs)
	err = a.ReadFiles(ctx, logs)
	if stop != nil {
		stop() // before anything is printed
	}
	if err != nil {
		return exitError, err
	}
	res := a.Result()
	printWarnings(errOut, res.Warnings)
	if o.html != "" {
		if err := writeAuditHTML(o.html, res); err != nil {
			return exitError, err
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return exitError, err
		}
	} else {
		printAudit(out, res, o.all, o.top)
	}
	for _, s := range res.Sites {
		if len(s.Offenders) > 0 || s.Unlisted > 0 {
			return exitFinding, nil
		}
	}
	return exitOK, nil
}

// loadHistory reads the robots.txt histories of a running Caddy's sites
// from its admin API.
func loadHistory(addr string) (map[string][]audit.Version, error) {
	b, err := adminGet(addr, "/robots_guard/history")
	if err != nil {
		return nil, fmt.Errorf("--history: %w", err)
	}
	var h map[string][]sites.Version
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("--history: %w", err)
	}
	out := make(map[string][]audit.Version, len(h))
	for site, vs := range h {
		for _, v := range vs {
			av := audit.Version{Name: site + " (first seen " + v.FirstSeen.UTC().Format(time.RFC3339) + ")", Since: v.FirstSeen, Body: []byte(v.Text)}
			switch {
			case v.Outcome == "unavailable":
				av.Status = max(v.Status, http.StatusNotFound)
			case v.Outcome == "unreachable", v.Text == "" && v.Bytes > 0 && v.SHA256 != "":
				// No file in force then (on_unreachable decided), or one
				// whose text the history did not keep: not judged.
				av.Unknown = true
			}
			out[site] = append(out[site], av)
		}
	}
	return out, nil
}

// readVersion reads "FILE|URL[@DATE]".
func readVersion(spec string) (audit.Version, error) {
	v := audit.Version{Name: spec}
	src := spec
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		if t, ok := parseDate(spec[i+1:]); ok {
			src, v.Since, v.Name = spec[:i], t, spec[:i]
		}
	}
	var err error
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		v.Body, err = fetchRobots(src, io.Discard)
	} else {
		v.Body, err = os.ReadFile(src)
	}
	if err != nil {
		return v, fmt.Errorf("--robots %s: %w", spec, err)
	}
	return v, nil
}

// readLicenses reads the documents of --license URL=FILE; nil without
// one (the audit then fetches them).
func readLicenses(specs []string) (map[string][]byte, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	docs := make(map[string][]byte, len(specs))
	for _, spec := range specs {
		i := strings.LastIndexByte(spec, '=')
		if i < 0 || !(strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://")) {
			return nil, fmt.Errorf("--license %s: write it as URL=FILE (https://example.com/license.xml=license.xml)", spec)
		}
		b, err := os.ReadFile(spec[i+1:])
		if err != nil {
			return nil, fmt.Errorf("--license %s: %w", spec, err)
		}
		docs[spec[:i]] = b
	}
	return docs, nil
}

// parseDate reads an RFC 3339 time, or a date (midnight UTC).
func parseDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// printWarnings prints the audit's warnings, each line of one after the
// first indented.
func printWarnings(w io.Writer, warnings []string) {
	for _, x := range warnings {
		lines := strings.Split(x, "\n")
		for i, l := range lines {
			lines[i] = termSafe(l)
		}
		fmt.Fprintln(w, "warning:", strings.Join(lines, "\n  "))
	}
}

// printAudit prints the result as tables people read, every field of
// the logs made safe for a terminal (termSafe).
func printAudit(out io.Writer, res audit.Result, all bool, top int) {
	printFiles(out, res.Files)
	if res.BeforeHistory > 0 {
		fmt.Fprintf(out, "%d requests made before the first dated robots.txt were not judged\n", res.BeforeHistory)
	}
	if !res.From.IsZero() {
		fmt.Fprintf(out, "from %s to %s\n", res.From.Format(time.RFC3339), res.To.Format(time.RFC3339))
	}
	for _, s := range res.Sites {
		atLeast := ""
		if s.UnlistedAtLeast {
			atLeast = "at least "
		}
		fmt.Fprintf(out, "\n%s: %d requests, %d of bots; %s%d clients would have been stopped", termSafe(s.Site), s.Requests, s.BotRequests,
			atLeast, int64(len(s.Offenders))+s.Unlisted)
		if s.Unlisted > 0 {
			fmt.Fprintf(out, " (%d of them beyond the row bound, not listed)", s.Unlisted)
		}
		fmt.Fprintln(out)
		lic := s.Unlicensed+s.TokenUnchecked+s.TokenUnknown > 0
		if lic {
			fmt.Fprintln(out, licenseLine(s))
		}
		rows := s.Offenders
		if all {
			rows = append(rows, s.Compliant...)
		}
		if len(rows) > 0 {
			printRows(out, rows, top, res.Offline, lic)
		}
		if s.Others > 0 {
			fmt.Fprintf(out, "%d requests of clients beyond the row bound are not listed\n", s.Others)
		}
	}
}

// printFiles prints what each log held: its lines, each a request, a
// blank line, another logger's line or a malformed one (the first few
// shown, with their reasons).
func printFiles(out io.Writer, files []audit.FileResult) {
	for _, f := range files {
		fmt.Fprintf(out, "%s: %s, %d lines, %d requests", termSafe(f.Name), f.Format, f.Lines, f.Entries)
		if f.Blank > 0 {
			fmt.Fprintf(out, ", %d blank lines", f.Blank)
		}
		if f.Skipped > 0 {
			fmt.Fprintf(out, ", %d lines of other loggers skipped", f.Skipped)
		}
		if f.Malformed > 0 {
			fmt.Fprintf(out, ", %d malformed lines skipped", f.Malformed)
		}
		fmt.Fprintln(out)
		for _, m := range f.Examples {
			fmt.Fprintf(out, "  line %d: %s: %s\n", m.Line, termSafe(m.Reason), termSafe(m.Text))
		}
		if f.Entries > 0 && f.NoUserAgent == f.Entries {
			fmt.Fprintln(out, "  no request has a User-Agent "+noUserAgentHint(f.Format))
		}
	}
}

// noUserAgentHint says, for a log of format none of whose requests has a
// User-Agent, why and how to log it.
func noUserAgentHint(format string) string {
	const passes = ": every one passes as a browser's would; "
	switch format {
	case audit.FormatTraefik:
		return "(Traefik keeps no header unless told)" + passes + "set accessLog.fields.headers.names: User-Agent: keep to audit bots"
	case audit.FormatHAProxy:
		return "(HAProxy logs no header unless it captures it)" + passes + "add capture request header User-Agent len 256 (first) to audit bots"
	}
	return "(the Common Log Format has none)" + passes + "log in the Combined format to audit bots"
}

// tableUA is how many characters of a row's User-Agent the table shows.
const tableUA = 60

// licenseLine says what a site's bots did on licensed content: "licensed
// content (RSL): 3 requests of bots without a licence token or for a use
// no licence grants (the guard's 401, 402 or 403),
// ...", the counts that are not 0.
func licenseLine(s audit.SiteResult) string {
	var parts []string
	for _, p := range []struct {
		n    int64
		what string
	}{{s.Unlicensed, "without a licence token or for a use no licence grants (the guard's 401, 402 or 403)"}, {s.TokenUnchecked, "with a token the audit cannot check"},
		{s.TokenUnknown, "whose token the log does not show"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d requests of bots %s", p.n, p.what))
		}
	}
	return "licensed content (RSL): " + strings.Join(parts, ", ")
}

// printRows prints the rows of a site, at most top (0: all); offline
// marks the claims an offline audit could not check; lic adds the
// licence columns (a site with licence counts).
func printRows(out io.Writer, rows []audit.Row, top int, offline, lic bool) {
	hidden := 0
	if top > 0 && len(rows) > top {
		rows, hidden = rows[:top], len(rows)-top
	}
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	licHead := ""
	if lic {
		licHead = "UNLICENSED\tTOKEN UNCHECKED\tTOKEN UNKNOWN\t"
	}
	fmt.Fprintln(tw, "CLIENT\tGROUP\tVERIFICATION\tREQUESTS\tDISALLOWED\tTHROTTLED\tTRAPS\tSPOOFED\tBANNED\tOTHER\t"+licHead+"FIRST\tLAST\tEXAMPLE\tUSER-AGENT")
	for _, r := range rows {
		example := ""
		if len(r.Examples) > 0 {
			example = exampleText(r.Examples[0])
		}
		verification := r.Verification
		if offline && verification == identity.Unverifiable.String() {
			verification += " (offline)"
		}
		if r.Operator != "" {
			verification += " " + r.Operator
		}
		licCols := ""
		if lic {
			licCols = fmt.Sprintf("%d\t%d\t%d\t", r.Unlicensed, r.TokenUnchecked, r.TokenUnknown)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s%s\t%s\t%s\t%s\n", termSafe(r.Client), termSafe(groupOf(r)), termSafe(verification), r.Requests,
			r.Disallowed, r.Throttled, r.Traps, r.Spoofed, r.Banned, r.Other, licCols, r.First.Format(time.DateTime), r.Last.Format(time.DateTime), termSafe(example), termSafe(firstChars(r.UserAgent, tableUA)))
	}
	tw.Flush()
	if hidden > 0 {
		fmt.Fprintf(out, "%d more rows (--top 0 shows them all)\n", hidden)
	}
}

// exampleText is an example as the table and the page show it:
// "/private/x (disallowed, line 2)".
func exampleText(x audit.Example) string {
	e := x.Target + " (" + x.Reason
	if x.Line > 0 {
		e += fmt.Sprintf(", line %d", x.Line)
	}
	return e + ")"
}

// firstChars is s cut after n characters, with "…" when it was cut.
func firstChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i] + "…"
		}
		n--
	}
	return s
}

// termSafe is s with what a terminal would act on written as Go
// escapes: control characters (C0, DEL, C1: "\x1b" for ESC), bytes that
// are no UTF-8, and other characters that are not graphic (the line
// separators, the bidirectional-text controls: "\u202e"), so that a
// logged field cannot clear the screen, set the window's title or draw a
// link.
func termSafe(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && !unicode.IsGraphic(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsGraphic(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// groupOf is a row's group, with the class of an agent that fetches for
// a person ("* (unfurler)").
func groupOf(r audit.Row) string {
	if r.Class != "" {
		return r.Group + " (" + r.Class + ")"
	}
	return r.Group
}

// writeAuditHTML writes res as the audit's page (dashboard.WriteAudit).
func writeAuditHTML(path string, res audit.Result) error {
	p := dashboard.AuditPage{Title: "robots.txt audit", Generated: time.Now().UTC(), From: res.From, To: res.To, Notes: res.Warnings}
	if res.BeforeHistory > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d requests made when no robots.txt is known were not judged", res.BeforeHistory))
	}
	if res.Offline {
		p.Notes = append(p.Notes, "offline: no crawler claim was checked; each was judged as the guard judges one it cannot check (unverifiable: by its group and *)")
	}
	for _, f := range res.Files {
		p.Files = append(p.Files, fmt.Sprintf("%s: %s, %d lines: %d requests, %d blank, %d of other loggers, %d malformed", f.Name, f.Format, f.Lines, f.Entries, f.Blank, f.Skipped, f.Malformed))
	}
	for _, s := range res.Sites {
		ps := dashboard.AuditSite{Site: s.Site, Requests: s.Requests, BotRequests: s.BotRequests, Compliant: len(s.Compliant), Timeline: s.Timeline,
			Unlicensed: s.Unlicensed, TokenUnchecked: s.TokenUnchecked, TokenUnknown: s.TokenUnknown}
		switch span := res.To.Sub(res.From); {
		case s.SliceWidth < time.Hour && span < 20*time.Hour:
			ps.Layout = "15:04"
		case s.SliceWidth < time.Hour:
			ps.Layout = "Jan 2 15:04"
		case s.SliceWidth < 24*time.Hour:
			ps.Layout = "Jan 2 15h"
		default:
			ps.Layout = "Jan 2"
		}
		for _, l := range s.Lines {
			ps.Lines = append(ps.Lines, dashboard.LineCount{Line: l.Line, Rule: l.Rule, Count: l.Count})
		}
		for _, r := range s.Offenders {
			c := dashboard.AuditClient{Client: r.Client, Group: groupOf(r), Verification: r.Verification, Operator: r.Operator, UserAgent: r.UserAgent,
				Requests: r.Requests, Disallowed: r.Disallowed + r.Other, Throttled: r.Throttled, Traps: r.Traps, Spoofed: r.Spoofed, Banned: r.Banned,
				Unlicensed: r.Unlicensed, TokenUnchecked: r.TokenUnchecked, TokenUnknown: r.TokenUnknown, First: r.First, Last: r.Last}
			if res.Offline && r.Verification == identity.Unverifiable.String() {
				c.Operator = strings.TrimSpace(c.Operator + " (offline)")
			}
			for _, x := range r.Examples {
				c.Examples = append(c.Examples, exampleText(x))
			}
			ps.Offenders = append(ps.Offenders, c)
		}
		p.Sites = append(p.Sites, ps)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := dashboard.WriteAudit(f, p); err != nil {
		f.Close()
		return fmt.Errorf("--html: %w", err)
	}
	return f.Close()
}

// showProgress draws a progress line on w while a reads logs, when w is a
// terminal: the bytes read of the logs' total, lines per second and the
// time left. It returns the function that ends it, nil when w is no
// terminal.
func showProgress(w *os.File, a *audit.Auditor, logs []string) func() {
	if fi, err := w.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	var total int64
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
	}
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-tick.C:
				fmt.Fprint(w, "\r\033[K"+termSafe(progressLine(a, total, time.Since(start))))
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// progressLine says how far a is: "37% · 152 of 411 MB · 1.02M lines/s · 4s left".
func progressLine(a *audit.Auditor, total int64, elapsed time.Duration) string {
	bytes, lines := a.Progress()
	secs := max(elapsed.Seconds(), 0.001)
	line := fmt.Sprintf("%.1f MB · %.2fM lines/s", float64(bytes)/1e6, float64(lines)/secs/1e6)
	if total > 0 && bytes > 0 {
		left := time.Duration(float64(elapsed) * float64(total-bytes) / float64(bytes)).Round(time.Second)
		line = fmt.Sprintf("%3.0f%% · %.1f of %.1f MB · %.2fM lines/s · %s left", 100*float64(bytes)/float64(total),
			float64(bytes)/1e6, float64(total)/1e6, float64(lines)/secs/1e6, max(left, 0))
	}
	return line
}
