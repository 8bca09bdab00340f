// Package robotscmd is the "caddy robots" command: test (through the
// engine's explain, the one judge), lint and report. It registers itself
// with Caddy's command line when imported, as cmd/caddy does.
package robotscmd

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	neturl "net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "robots",
		Usage: "test --ua <header> [--file <robots.txt> | --url <URL>] [--ip <addr>] <path>... | lint [--trap <path>]... <file|URL> | report [--address <admin>] | audit --robots <file|URL>[@DATE]... <log>...",
		Short: "Tests paths against a robots.txt the way robots_guard reads it, or lints one",
		Long: `
"caddy robots test" prints, for each path, whether the given User-Agent may
fetch it under a robots.txt, the group that applies, the deciding line and
the Crawl-delay: the job of Google's retired robots.txt tester, answered by
the same engine call a running robots_guard makes (the same reading of the
header, of the path's views such as /a/../private/ and /private%2Fx, and of
the fetch's status), so the two never disagree. A header that is not a
bot's (a browser's) passes untouched, as it would. The robots.txt comes from --file or
--url (standard input when neither is given); an HTML page given as
robots.txt is warned about, as lint does. --ua takes a bare product
token or a whole User-Agent header. With --ip, the crawler operator the
header names is verified for that client address the way "verify" does
(the operator's IP-range feeds are fetched, reverse DNS is looked up), and
the verdict and how it was reached are printed first; a claim that is not
verified is judged as robots_guard would: a spoofed one with --on-spoofed
deny has every path disallowed, and any other (unverifiable, or spoofed
with star) is judged by its group and "*" together (on_dns_error header is
not modelled). Without --ip the header is believed. Exit status: 0 when
every path is allowed, 1 when
some path is disallowed, 2 on a usage or fetch error.

"caddy robots lint" prints the diagnostics of a robots.txt file or URL:
ignored or misspelt lines, rules before any user-agent, patterns that never
match, Crawl-delay lines that glue groups together, and rule pairs that
longest-match parsers (RFC 9309, Google) and first-match parsers read
differently, each an error, a warning or (shown with --all) info, in a
category (syntax, rules, compat, file) that --only and --ignore take, as
they take codes. With --trap, it also says whether each trap path is
disallowed for every group, "*" included, as robots_guard requires before
it bans anyone for fetching it (for trap_grace without a break); with
--address, each site's trap state in a running Caddy: armed, waiting until
when, or not armed and who may fetch it. Exit status: 1 when an error is
shown (with --strict, a warning too) or a trap is not disallowed for every
group, 2 on a usage or fetch error, else 0.

"caddy robots report" prints the violations report of a running Caddy
(from its admin API, --address, default localhost:2019): per site, the top
clients by robots.txt denials, throttles, trap hits and banned requests in
the last hour and day, and the lines that denied whom.

"caddy robots audit" reads access logs a site already has (Caddy's JSON
access log, the Common and Combined Log Formats of nginx and Apache and
Apache's vhost_combined, Traefik's JSON access log, HAProxy's httplog,
Envoy's default format, Cloudflare Logpush's HTTP requests, CloudFront's
standard logs and ALB logs, each file's format told by --format or its
first line; gzip-compressed rotations, several files in any order or standard input as
"-") and judges every request with the same engine call robots_guard makes,
at the request's own time: per client, the disallowed paths it fetched, the
Crawl-delays it broke (the same clocks and tolerance), the traps it hit and
the crawler claims that did not hold (--offline: none can be checked, and
each is judged as the guard judges an unverifiable one, by its group and
"*"). --robots names the robots.txt to judge by; several, each with the date it came into
force (FILE@2026-01-31), judge each request by the one in force when it was
made, and requests older than all of them are counted apart. A bot's
requests for content that a License line's RSL document licenses with a
licence server are counted too: without a token (Caddy's log shows its
Authorization header), with one (never checked), or with one the log does
not show; --license URL=FILE gives a document, else it is fetched once.
--config takes a robots_guard block in JSON, to judge as that guard would. Exit status: 1
when a bot would have been stopped, 2 on an error, else 0.
`,
		CobraFunc: func(cmd *cobra.Command) {
			test, lint, report, audit := testCommand(), lintCommand(), reportCommand(), auditCommand()
			for _, c := range []*cobra.Command{test, lint, report, audit} {
				c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
					exit(exitError, err) // an unknown or malformed flag
					return nil
				})
			}
			cmd.AddCommand(test, lint, report, audit)
		},
	})
}

// testCommand is "caddy robots test".
func testCommand() *cobra.Command {
	test := &cobra.Command{
		Use:   "test --ua <header> [--file <robots.txt> | --url <URL>] [--ip <addr>] <path>...",
		Short: "Decides paths for a User-Agent",
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			ua, _ := c.Flags().GetString("ua")
			file, _ := c.Flags().GetString("file")
			url, _ := c.Flags().GetString("url")
			var vo verifyOpts
			vo.ip, _ = c.Flags().GetString("ip")
			vo.resolver, _ = c.Flags().GetString("resolver")
			vo.operators, _ = c.Flags().GetString("operators")
			vo.builtin, _ = c.Flags().GetBool("builtin")
			vo.onSpoofed, _ = c.Flags().GetString("on-spoofed")
			vo.headers, _ = c.Flags().GetStringArray("header")
			vo.authority, _ = c.Flags().GetString("authority")
			vo.allowPrivate, _ = c.Flags().GetBool("allow-private-directories")
			exit(runTest(os.Stdout, os.Stdin, ua, file, url, args, vo))
			return nil
		},
	}
	test.Flags().String("ua", "", "User-Agent header or product token (required)")
	test.Flags().String("file", "", "robots.txt file to read")
	test.Flags().String("url", "", "robots.txt URL to fetch")
	test.Flags().String("ip", "", "client address: verify the crawler the User-Agent names (IP-range feeds, reverse DNS)")
	test.Flags().String("resolver", "", "with --ip: DNS server host:port (default: the system resolver)")
	test.Flags().String("operators", "", "with --ip: JSON file of operators to add to the registry (the shape of verify.operators)")
	test.Flags().Bool("builtin", true, "with --ip: use the built-in registry of operators")
	test.Flags().String("on-spoofed", "deny", "with --ip: what a spoofed claim gets, deny or star")
	test.Flags().StringArray("header", nil, "with --ip: a request header 'Name: value' (repeatable), e.g. the Signature, Signature-Input and Signature-Agent of a Web Bot Auth request")
	test.Flags().String("authority", "", "with --header: the host[:port] the signed request was sent to (default: --url's host)")
	test.Flags().Bool("allow-private-directories", false, "with --header: fetch key directories from private addresses too")
	return test
}

// usageArgs wraps an argument check so that a usage error exits with
// status 2, as documented, instead of the 1 that caddy gives any error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			exit(exitError, fmt.Errorf("%w\nusage: caddy robots %s", err, c.Use))
		}
		return nil
	}
}

// exit ends the process with code, after printing err.
func exit(code int, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "caddy robots:", err)
	}
	if code != 0 {
		os.Exit(code)
	}
}

// Exit codes of the robots command.
const (
	exitOK      = 0
	exitFinding = 1 // a path is disallowed, or lint found warnings
	exitError   = 2
)

// verifyOpts are the verification flags of "caddy robots test".
type verifyOpts struct {
	ip, resolver, operators, onSpoofed string
	builtin                            bool
	headers                            []string // "Name: value"
	authority                          string
	path                               string // the first path, for a signature's @path
	allowPrivate                       bool
	tls                                *tls.Config // tests: trust a loopback directory
}

// runTest is "caddy robots test"; it returns the exit code. It builds an
// Engine over the given robots.txt and asks it, for each path, what a
// request would get (Engine.Explain): the same classification, request
// views, status mapping and verification as a running robots_guard, so
// that the tester and the guard can never disagree.
func runTest(out io.Writer, stdin io.Reader, ua, file, url string, paths []string, vo verifyOpts) (int, error) {
	if ua == "" {
		return exitError, errors.New("--ua is required (a User-Agent header or a product token)")
	}
	if file != "" && url != "" {
		return exitError, errors.New("give --file or --url, not both")
	}
	cfg := guard.Config{Verify: &identity.VerifyConfig{Off: true}}
	var opts []guard.Option
	scheme, host, src := "https", "robots-test.invalid", "standard input"
	switch {
	case url != "":
		u, err := neturl.Parse(url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return exitError, fmt.Errorf("--url: %q is not an http:// or https:// URL", url)
		}
		cfg.RobotsTxt.Source, scheme, host, src = url, u.Scheme, u.Host, url
	default:
		var body []byte
		var err error
		if file != "" {
			body, err = os.ReadFile(file)
			src = file
		} else {
			body, err = io.ReadAll(io.LimitReader(stdin, policy.MaxBodySize+1))
		}
		if err != nil {
			return exitError, err
		}
		opts = append(opts, guard.WithSource(sites.BytesSource(body)))
	}
	var signed *identity.SignedRequest
	if vo.ip != "" {
		if len(paths) > 0 {
			vo.path = paths[0]
		}
		if vo.authority == "" && url != "" {
			vo.authority = host
		}
		v, sr, err := testVerifier(out, ua, vo)
		if err != nil {
			return exitError, err
		}
		defer v.Close()
		signed = sr
		cfg.Verify = &identity.VerifyConfig{OnSpoofed: vo.onSpoofed}
		opts = append(opts, guard.WithVerifier(v))
	}
	e, err := guard.New(cfg, opts...)
	if err != nil {
		return exitError, err
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	xs := make([]guard.Explanation, len(paths))
	for i, p := range paths {
		req := guard.Request{Scheme: scheme, Host: host, Target: p, UserAgent: ua, ClientIP: vo.ip, Signed: signed}
		if xs[i], err = e.Explain(ctx, req); err != nil {
			return exitError, err
		}
	}
	if len(xs) == 0 {
		return exitOK, nil
	}
	if code, err := printSource(out, src, xs[0]); err != nil {
		return code, err
	}
	printPreamble(out, xs[0])
	return printVerdicts(out, paths, xs)
}

// printSource says where the robots.txt came from when that changes how
// to read the verdicts: an HTML page, no robots.txt at all (4xx), or none
// reachable, which is an error here (the guard would refuse every bot).
func printSource(out io.Writer, src string, x guard.Explanation) (int, error) {
	st := x.RobotsTxt
	if st == nil {
		return exitOK, nil
	}
	switch st.Outcome {
	case sites.HTML.String():
		fmt.Fprintln(out, "# warning: this is an HTML page, not a robots.txt: it binds no bot, whatever it holds")
	case sites.Unavailable.String():
		fmt.Fprintf(out, "# %s answered %d %s: no robots.txt, everything is allowed (RFC 9309 §2.3.1.3)\n", src, st.Status, http.StatusText(st.Status))
	}
	if st.Unreachable {
		why := st.Error
		if st.Status != 0 {
			why = fmt.Sprintf("%d %s", st.Status, http.StatusText(st.Status))
		}
		return exitError, fmt.Errorf("%s: robots.txt unreachable (%s): robots_guard would refuse bots everything (robots_txt.on_unreachable disallow) until a copy arrives", src, why)
	}
	return exitOK, nil
}

// printPreamble prints what the verdicts rest on: whether the header is a
// bot's at all, the verification of its claim, and its documented purpose.
func printPreamble(out io.Writer, x guard.Explanation) {
	if !x.Bot {
		fmt.Fprintln(out, "# not a bot by robots_guard's reading of the header (a browser, or an HTTP tool without bots { http_tools }): it passes untouched")
	}
	if vx := x.Verification; vx != nil {
		line := "# verification: " + vx.Verdict + " (" + vx.Operator
		if vx.Method != "" && vx.Method != identity.MethodNone.String() {
			line += ", " + vx.Method
		}
		fmt.Fprintln(out, line+")")
		for _, s := range vx.Steps {
			fmt.Fprintln(out, "#   "+s)
		}
		if vx.AlsoStar {
			fmt.Fprintln(out, "# not verified: judged by its group and \"*\" together")
		}
	}
	if cs := x.ContentSignal; cs != nil {
		fmt.Fprintf(out, "# %s is %s (purpose %s, %s)\n", cs.Crawler, cs.Kind, cs.Purpose, cs.Source)
	}
}

// printVerdicts prints one row per path and returns exitFinding when a
// path is refused.
func printVerdicts(out io.Writer, paths []string, xs []guard.Explanation) (int, error) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	signals := xs[0].ContentSignal != nil
	if signals {
		fmt.Fprintln(tw, "PATH\tVERDICT\tGROUP\tRULE\tCRAWL-DELAY\tCONTENT-SIGNAL")
	} else {
		fmt.Fprintln(tw, "PATH\tVERDICT\tGROUP\tRULE\tCRAWL-DELAY")
	}
	code := exitOK
	for i, x := range xs {
		verdict := "allowed"
		if x.Action != "allow" {
			verdict, code = "DISALLOWED", exitFinding
		}
		if x.Reason == guard.ReasonContentSignal.String() {
			verdict = "DENIED (content_signal)"
		}
		group := x.Group
		if group == "" {
			group = "(none)"
		}
		rule := "-"
		switch {
		case x.Reason == guard.ReasonRobotsTxt.String():
			rule = "/robots.txt is always allowed"
		case x.Reason == guard.ReasonSpoofed.String():
			rule = "spoofed: not an address of " + x.Verification.Operator
		case x.Rule != nil:
			rule = fmt.Sprintf("line %d: %s", x.Rule.Line, x.Rule.Text)
		case x.Reason == guard.ReasonCrawlDelay.String():
			rule = fmt.Sprintf("Crawl-delay (line %d): retry after %s", x.CrawlDelayLine, time.Duration(x.RetryAfter))
		}
		delay := "-"
		if x.CrawlDelay > 0 {
			delay = time.Duration(x.CrawlDelay).String()
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", paths[i], verdict, group, rule, delay)
		if signals {
			row += "\t" + signalCell(x.ContentSignal)
		}
		fmt.Fprintln(tw, row)
	}
	return code, tw.Flush()
}

// signalCell is the CONTENT-SIGNAL column: what the deciding
// Content-Signal or Content-Usage line says of the crawler's purpose.
func signalCell(cs *guard.ExplainSignal) string {
	switch {
	case cs == nil, cs.Signal == "not_checked":
		return "-"
	case cs.Line == 0:
		return cs.Purpose + " " + cs.Signal
	}
	return fmt.Sprintf("line %d: %s", cs.Line, cs.Text)
}

// testVerifier builds the verifier of "caddy robots test --ip": the
// registry (built-in unless --builtin=false, plus --operators), with the
// feeds of the operators the header claims loaded now and no others (the
// rest keep their tokens and signature agents, so a signature by any of
// them is still checked), and the signed request that --header describes.
func testVerifier(out io.Writer, ua string, vo verifyOpts) (*identity.Verifier, *identity.SignedRequest, error) {
	if _, err := netip.ParseAddr(vo.ip); err != nil {
		return nil, nil, fmt.Errorf("--ip: %q is not an IP address", vo.ip)
	}
	switch vo.onSpoofed {
	case identity.SpoofedDeny, identity.SpoofedStar:
	default:
		return nil, nil, fmt.Errorf("--on-spoofed: want deny or star, got %q", vo.onSpoofed)
	}
	if err := identity.CheckResolver(vo.resolver); err != nil {
		return nil, nil, fmt.Errorf("--resolver: %w", err)
	}
	var base, extra []identity.Operator
	if vo.builtin {
		base = identity.Builtin()
	}
	if vo.operators != "" {
		b, err := os.ReadFile(vo.operators)
		if err != nil {
			return nil, nil, fmt.Errorf("--operators: %w", err)
		}
		if err := json.Unmarshal(b, &extra); err != nil {
			return nil, nil, fmt.Errorf("--operators: %s: want a JSON array of operators: %w", vo.operators, err)
		}
	}
	ops := identity.Merge(base, extra)
	if err := identity.Validate(ops); err != nil {
		return nil, nil, fmt.Errorf("--operators: %w", err)
	}
	sr, err := signedRequest(vo)
	if err != nil {
		return nil, nil, err
	}
	claimed := map[string]bool{}
	for _, op := range identity.ClaimedBy(ops, ua) {
		claimed[op.Name] = true
	}
	for i := range ops {
		if !claimed[ops[i].Name] {
			ops[i].IPRanges = nil // nothing fetched that this claim does not need
		}
	}
	ic := identity.Config{Operators: ops, Resolver: vo.resolver, NoBackground: true}
	if sr != nil {
		ic.WebBotAuth = &identity.WebBotAuthConfig{AllowPrivate: vo.allowPrivate, TLS: vo.tls}
	}
	v, err := identity.New(ic)
	if err != nil {
		return nil, nil, err
	}
	if len(claimed) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := v.RefreshFeeds(ctx); err != nil {
			fmt.Fprintf(out, "# feeds not loaded (claims they would prove stay unverifiable): %v\n", err)
		}
	} else if sr == nil {
		fmt.Fprintln(out, "# verification: none (the User-Agent names no registered crawler operator)")
	}
	return v, sr, nil
}

// signedRequest is the request --header describes when it carries a Web
// Bot Auth signature (Signature-Input), sent to --authority; nil without
// one.
func signedRequest(vo verifyOpts) (*identity.SignedRequest, error) {
	h := http.Header{}
	for _, hv := range vo.headers {
		k, val, ok := strings.Cut(hv, ":")
		if !ok {
			return nil, fmt.Errorf("--header: %q: want 'Name: value'", hv)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(val))
	}
	if h.Get("Signature-Input") == "" {
		return nil, nil
	}
	if vo.authority == "" {
		return nil, errors.New("--authority (or --url) is needed to check a signature: the host[:port] it was sent to")
	}
	path, query, _ := strings.Cut(vo.path, "?")
	return &identity.SignedRequest{Method: "GET", Scheme: "https", Authority: vo.authority, Path: path, Query: query, Header: h}, nil
}
