package robotscmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/robotsguard/robotsguard/audit"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// auditOpts are the flags of "caddy robots audit".
type auditOpts struct {
	robots  []string // FILE|URL[@DATE]
	site    string
	format  string
	config  string // a robots_guard JSON block
	offline bool
	asJSON  bool
	all     bool
	top     int
}

// auditCommand is "caddy robots audit".
func auditCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "audit --robots <file|URL>[@DATE]... [--site <URL>] [--config <json>] [--offline] [--json] <log>...",
		Short: "Finds the bots that ignored robots.txt in access logs",
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			var o auditOpts
			o.robots, _ = c.Flags().GetStringArray("robots")
			o.site, _ = c.Flags().GetString("site")
			o.format, _ = c.Flags().GetString("format")
			o.config, _ = c.Flags().GetString("config")
			o.offline, _ = c.Flags().GetBool("offline")
			o.asJSON, _ = c.Flags().GetBool("json")
			o.all, _ = c.Flags().GetBool("all")
			o.top, _ = c.Flags().GetInt("top")
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			exit(runAudit(ctx, os.Stdout, args, o))
			return nil
		},
	}
	f := c.Flags()
	f.StringArray("robots", nil, "robots.txt file or URL to judge by (required); several, each with the date it came into force: --robots old.txt@2026-01-01 --robots robots.txt@2026-03-15T10:00:00Z")
	f.String("site", "", "scheme and host of logs whose lines carry none (Common/Combined), e.g. https://example.com (default "+audit.DefaultSite+")")
	f.String("format", audit.FormatAuto, "log format: "+strings.Join(audit.Formats, ", "))
	f.String("config", "", "JSON file of a robots_guard block (bots, verify, crawl_delay, clients, traps, bans, ...): judge as that guard would")
	f.Bool("offline", false, "verify no crawler claim (no IP-range feed, no DNS)")
	f.Bool("json", false, "print the result as JSON")
	f.Bool("all", false, "list the compliant bots too")
	f.Int("top", 50, "rows shown per site in the table, the most stopped first (0: all; --json has them all)")
	return c
}

// runAudit is "caddy robots audit"; it returns the exit code: 1 when a
// bot would have been stopped, 0 when none, 2 on an error.
func runAudit(ctx context.Context, out io.Writer, logs []string, o auditOpts) (int, error) {
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
	if o.offline {
		cfg.Verify = &identity.VerifyConfig{Off: true}
	}
	if len(o.robots) == 0 {
		return exitError, fmt.Errorf("give the robots.txt to judge by: --robots <file or URL>[@DATE]")
	}
	var versions []audit.Version
	for _, spec := range o.robots {
		v, err := readVersion(spec)
		if err != nil {
			return exitError, err
		}
		versions = append(versions, v)
	}
	a, err := audit.New(cfg, audit.Options{Format: o.format, Site: o.site, Versions: versions})
	if err != nil {
		return exitError, err
	}
	defer a.Close()
	if err := a.ReadFiles(ctx, logs); err != nil {
		return exitError, err
	}
	res := a.Result()
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
		if len(s.Offenders) > 0 {
			return exitFinding, nil
		}
	}
	return exitOK, nil
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

// parseDate reads an RFC 3339 time, or a date (midnight UTC).
func parseDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// printAudit prints the result as tables people read.
func printAudit(out io.Writer, res audit.Result, all bool, top int) {
	for _, w := range res.Warnings {
		fmt.Fprintln(out, "warning:", w)
	}
	for _, f := range res.Files {
		fmt.Fprintf(out, "%s: %s, %d lines, %d requests", f.Name, f.Format, f.Lines, f.Entries)
		if f.Malformed > 0 {
			fmt.Fprintf(out, ", %d malformed lines skipped", f.Malformed)
		}
		fmt.Fprintln(out)
		for _, m := range f.Examples {
			fmt.Fprintf(out, "  line %d: %s: %s\n", m.Line, m.Reason, m.Text)
		}
		if f.Entries > 0 && f.NoUserAgent == f.Entries {
			fmt.Fprintln(out, "  no request has a User-Agent (the Common Log Format has none): every one passes as a browser's would; log in the Combined format to audit bots")
		}
	}
	if res.BeforeHistory > 0 {
		fmt.Fprintf(out, "%d requests made before the first dated robots.txt were not judged\n", res.BeforeHistory)
	}
	if !res.From.IsZero() {
		fmt.Fprintf(out, "from %s to %s\n", res.From.Format(time.RFC3339), res.To.Format(time.RFC3339))
	}
	for _, s := range res.Sites {
		fmt.Fprintf(out, "\n%s: %d requests, %d of bots; %d clients would have been stopped\n", s.Site, s.Requests, s.BotRequests, len(s.Offenders))
		rows := s.Offenders
		if all {
			rows = append(rows, s.Compliant...)
		}
		if len(rows) == 0 {
			continue
		}
		hidden := 0
		if top > 0 && len(rows) > top {
			rows, hidden = rows[:top], len(rows)-top
		}
		tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "CLIENT\tGROUP\tVERIFICATION\tREQUESTS\tDISALLOWED\tTHROTTLED\tTRAPS\tSPOOFED\tBANNED\tOTHER\tFIRST\tLAST\tEXAMPLE")
		for _, r := range rows {
			example := ""
			if len(r.Examples) > 0 {
				x := r.Examples[0]
				example = x.Target + " (" + x.Reason
				if x.Line > 0 {
					example += fmt.Sprintf(", line %d", x.Line)
				}
				example += ")"
			}
			verification := r.Verification
			if r.Operator != "" {
				verification += " " + r.Operator
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Client, r.Group, verification, r.Requests,
				r.Disallowed, r.Throttled, r.Traps, r.Spoofed, r.Banned, r.Other, r.First.Format(time.DateTime), r.Last.Format(time.DateTime), example)
		}
		tw.Flush()
		if hidden > 0 {
			fmt.Fprintf(out, "%d more rows (--top 0 shows them all)\n", hidden)
		}
		if s.Others > 0 {
			fmt.Fprintf(out, "%d requests of clients beyond the row bound are not listed\n", s.Others)
		}
	}
}
