package robotscmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/traps"
	"github.com/spf13/cobra"
)

// lintCommand is "caddy robots lint".
func lintCommand() *cobra.Command {
	lint := &cobra.Command{
		Use:   "lint [--only <category|code>,...] [--ignore <category|code>,...] [--all] [--strict] [--trap <path>]... [--address <admin>] <file|URL>",
		Short: "Lints a robots.txt",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			traps, _ := c.Flags().GetStringArray("trap")
			addr, _ := c.Flags().GetString("address")
			var o lintOpts
			o.traps = traps
			o.only, _ = c.Flags().GetStringSlice("only")
			o.ignore, _ = c.Flags().GetStringSlice("ignore")
			o.all, _ = c.Flags().GetBool("all")
			o.strict, _ = c.Flags().GetBool("strict")
			code, err := runLint(os.Stdout, args[0], o)
			if err == nil && addr != "" && len(traps) > 0 {
				var c2 int
				if c2, err = runTrapStates(os.Stdout, addr, traps); c2 > code {
					code = c2
				}
			}
			exit(code, err)
			return nil
		},
	}
	lint.Flags().StringArray("trap", nil, "a trap path pattern to check (repeatable)")
	lint.Flags().StringSlice("only", nil, "show only these categories (syntax, rules, compat, file) or codes (comma-separated or repeated)")
	lint.Flags().StringSlice("ignore", nil, "hide these categories or codes")
	lint.Flags().Bool("all", false, "show info findings too (match-order, harmless agent cuts, ...)")
	lint.Flags().Bool("strict", false, "exit 1 on warnings too, not only on errors")
	lint.Flags().String("address", "", "with --trap: also print each trap's state in the running Caddy whose admin API is here (e.g. localhost:2019)")
	return lint
}

// lintOpts are the options of "caddy robots lint".
type lintOpts struct {
	traps        []string
	only, ignore []string // categories or codes
	all          bool     // show info findings too
	strict       bool     // warnings fail too
}

// shows reports whether a diagnostic passes the options' filters.
func (o lintOpts) shows(d policy.Diagnostic) bool {
	match := func(list []string) bool {
		return slices.ContainsFunc(list, func(v string) bool { return v == d.Code || v == d.Category() })
	}
	switch {
	case len(o.only) > 0 && !match(o.only), match(o.ignore):
		return false
	case d.Severity == policy.Info:
		return o.all || len(o.only) > 0 && match(o.only)
	}
	return true
}

// lintNames are the categories and codes --only and --ignore take.
var lintNames = []string{policy.CategorySyntax, policy.CategoryRules, policy.CategoryCompat, policy.CategoryFile}

// checkLintNames refuses a value of --only or --ignore that names no
// category and no code.
func checkLintNames(flag string, vals []string) error {
	for _, v := range vals {
		if !slices.Contains(lintNames, v) && !policy.IsLintCode(v) {
			return fmt.Errorf("%s: %q is neither a category (%s) nor a diagnostic code", flag, v, strings.Join(lintNames, ", "))
		}
	}
	return nil
}

// runLint is "caddy robots lint"; it returns the exit code: 1 when a
// finding shown is an error (or, with strict, a warning), or a trap is not
// armed.
func runLint(out io.Writer, src string, o lintOpts) (int, error) {
	for _, t := range o.traps {
		if err := traps.Check(t); err != nil {
			return exitError, fmt.Errorf("--trap: %w", err)
		}
	}
	if err := checkLintNames("--only", o.only); err != nil {
		return exitError, err
	}
	if err := checkLintNames("--ignore", o.ignore); err != nil {
		return exitError, err
	}
	var body []byte
	var err error
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		body, err = fetchRobots(src, out)
	} else {
		body, err = os.ReadFile(src)
	}
	if err != nil {
		return exitError, err
	}
	code := exitOK
	r := policy.Parse(body)
	counts := map[policy.Severity]int{}
	hidden := 0
	for _, d := range r.Lint() {
		if !o.shows(d) {
			hidden++
			continue
		}
		fmt.Fprintln(out, d)
		counts[d.Severity]++
		if d.Severity == policy.Error || o.strict && d.Severity == policy.Warning {
			code = exitFinding
		}
	}
	switch shown := counts[policy.Error] + counts[policy.Warning] + counts[policy.Info]; {
	case shown == 0 && hidden == 0:
		fmt.Fprintln(out, "no findings")
	default:
		fmt.Fprintf(out, "%d errors, %d warnings, %d info", counts[policy.Error], counts[policy.Warning], counts[policy.Info])
		if hidden > 0 {
			fmt.Fprintf(out, "; %d more not shown (info: --all; or --only/--ignore)", hidden)
		}
		fmt.Fprintln(out)
	}
	for _, t := range o.traps {
		if ok, by := traps.Armed(r, t); ok {
			fmt.Fprintf(out, "trap %s: disallowed for every group (robots_guard arms it once that has held for traps.grace; --address shows a running Caddy's state)\n", t)
		} else {
			code = exitFinding
			fmt.Fprintf(out, "trap %s: NOT armed: allowed for %s; robots_guard will not ban for it (it could catch a compliant crawler)\n", t, by)
		}
	}
	return code, nil
}

// runTrapStates prints the state of each of traps in every site of the
// running Caddy at addr (its admin API); it returns exitFinding when one is
// not armed.
func runTrapStates(out io.Writer, addr string, traps []string) (int, error) {
	body, err := adminGet(addr, "/robots_guard/sites")
	if err != nil {
		return exitError, err
	}
	var sites []guard.SiteStatus
	if err := json.Unmarshal(body, &sites); err != nil {
		return exitError, fmt.Errorf("%s/robots_guard/sites: %w", addr, err)
	}
	code, seen := exitOK, false
	for _, s := range sites {
		for _, ts := range s.Traps {
			if !slices.Contains(traps, ts.Trap) {
				continue
			}
			seen = true
			switch ts.State {
			case "armed":
				fmt.Fprintf(out, "trap %s at %s: armed\n", ts.Trap, s.Site)
			case "waiting":
				fmt.Fprintf(out, "trap %s at %s: waiting until %s (traps.grace)\n", ts.Trap, s.Site, ts.ArmsAt.Format(time.RFC3339))
			default:
				code = exitFinding
				fmt.Fprintf(out, "trap %s at %s: NOT armed: allowed for %s\n", ts.Trap, s.Site, ts.AllowedFor)
			}
		}
	}
	if !seen {
		fmt.Fprintf(out, "no site of the Caddy at %s has these traps, or none has been visited since it started\n", addr)
	}
	return code, nil
}

// fetchRobots GETs a robots.txt for lint, following redirects, and reads
// at most policy.MaxBodySize bytes. Its status means what it means to the
// guard (policy.FromStatus): no robots.txt (a 4xx other than 429) yields
// an empty file and a note, an unreachable one an error.
func fetchRobots(url string, note io.Writer) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "caddy-robots (robotsguard)")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch policy.StatusAccess(resp.StatusCode) {
	case policy.Rules:
		return io.ReadAll(io.LimitReader(resp.Body, policy.MaxBodySize+1))
	case policy.Unavailable:
		fmt.Fprintf(note, "# %s answered %s: no robots.txt, everything is allowed (RFC 9309 §2.3.1.3)\n", url, resp.Status)
		return nil, nil
	}
	return nil, fmt.Errorf("%s answered %s: robots.txt unreachable", url, resp.Status)
}
