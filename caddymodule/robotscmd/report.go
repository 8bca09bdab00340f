package robotscmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/robotsguard/robotsguard/report"
	"github.com/spf13/cobra"
)

// reportCommand is "caddy robots report".
func reportCommand() *cobra.Command {
	report := &cobra.Command{
		Use:   "report [--address <admin address>]",
		Short: "Prints who broke robots.txt, from a running Caddy",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			addr, _ := c.Flags().GetString("address")
			exit(runReport(os.Stdout, addr))
			return nil
		},
	}
	report.Flags().String("address", "localhost:2019", "the admin API address of the running Caddy")
	return report
}

// adminGet returns the body of GET path from the admin API at addr.
func adminGet(addr, path string) ([]byte, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(addr, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Origin", addr) // Caddy's admin API checks it when origins are enforced
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w (is Caddy running with its admin API at %s? see --address)", err, addr)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s: %s", req.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// runReport is "caddy robots report"; it returns the exit code.
func runReport(out io.Writer, addr string) (int, error) {
	body, err := adminGet(addr, "/robots_guard/report")
	if err != nil {
		return exitError, err
	}
	var rep report.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		return exitError, fmt.Errorf("%s/robots_guard/report: %w", addr, err)
	}
	printReport(out, rep)
	return exitOK, nil
}

// printReport writes a report as readable tables; a site's tables have
// the columns of licence decisions (RSL) only when some row of the site
// counts one.
func printReport(out io.Writer, rep report.Report) {
	fmt.Fprintf(out, "robots.txt violations since %s\n", rep.Since.UTC().Format(time.RFC3339))
	if len(rep.Sites) == 0 {
		fmt.Fprintln(out, "\nno violations")
		return
	}
	for _, s := range rep.Sites {
		fmt.Fprintf(out, "\n%s\n", s.Site)
		lic := licences(s.LastHour) || licences(s.LastDay)
		for _, part := range []struct {
			title string
			rows  []report.ClientReport
		}{{"last hour", s.LastHour}, {"last day", s.LastDay}} {
			fmt.Fprintf(out, "  %s:\n", part.title)
			if len(part.rows) == 0 {
				fmt.Fprintln(out, "    none")
				continue
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			head := "    CLIENT\tGROUP\tVERIFICATION\tDENIALS\tTHROTTLES\tTRAPS\tBANNED\tUNATTRIBUTED"
			if lic {
				head += "\tLICENSED\tUNLICENSED\tINVALID TOKEN\tLICENSE UNAVAILABLE"
			}
			fmt.Fprintln(tw, head)
			for _, c := range part.rows {
				den := strconv.FormatInt(c.Denials, 10)
				if c.Error > 0 {
					den += fmt.Sprintf(" (+≤%d)", c.Error)
				}
				group := c.Group
				if group == "" {
					group = "(browser)"
				}
				if c.Class != "" {
					group += " (" + c.Class + ")"
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d", c.Client, group, c.Verification, den, c.Throttles, c.Traps, c.Banned, c.UnattributedTraps)
				if lic {
					fmt.Fprintf(tw, "\t%d\t%d\t%d\t%d", c.Licensed, c.Unlicensed, c.InvalidTokens, c.LicenseUnavailable)
				}
				fmt.Fprintln(tw)
			}
			tw.Flush()
		}
		fmt.Fprintln(out, "  lines that denied:")
		if len(s.Lines) == 0 {
			fmt.Fprintln(out, "    none")
			continue
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "    LINE\tRULE\tDENIALS\tWHOM")
		for _, l := range s.Lines {
			var whom []string
			for _, w := range l.Whom {
				whom = append(whom, fmt.Sprintf("%s (%s) %d", w.Group, w.Verification, w.Count))
			}
			fmt.Fprintf(tw, "    %d\t%s\t%d\t%s\n", l.Line, l.Rule, l.Count, strings.Join(whom, ", "))
		}
		tw.Flush()
	}
}

// licences reports whether some row counts licence decisions.
func licences(rows []report.ClientReport) bool {
	for _, c := range rows {
		if c.Licensed+c.Unlicensed+c.InvalidTokens+c.LicenseUnavailable != 0 {
			return true
		}
	}
	return false
}
