package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// exportedSeries returns every series name the module exports, with its
// labels (a histogram's _bucket, _sum and _count too).
func exportedSeries(t *testing.T) map[string][]string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 16)
	for _, c := range []prometheus.Collector{requestsTotal, fetchesTotal, feedFetchesTotal, lookupsTotal, lookupSeconds, storeCallsTotal, storeCallSeconds, bansTotal} {
		c.Describe(ch)
	}
	close(ch)
	descRE := regexp.MustCompile(`fqName: "([a-z_]+)".*variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("unreadable %s", d)
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		out[m[1]] = labels
		if strings.HasSuffix(m[1], "_seconds") {
			out[m[1]+"_bucket"] = append(slices.Clone(labels), "le")
			out[m[1]+"_sum"], out[m[1]+"_count"] = labels, labels
		}
	}
	return out
}

var (
	seriesRE  = regexp.MustCompile(`\b(caddy_robots_guard_[a-z_]+)(\{[^}]*\})?`)
	matcherRE = regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`)
	groupRE   = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
	valuesRE  = regexp.MustCompile(`label_values\(\s*(caddy_robots_guard_[a-z_]+)\s*,\s*([a-z_]+)\s*\)`)
)

// checkExpr reports the series and labels of expr that the module does not
// export; every expression must name at least one series.
func checkExpr(exported map[string][]string, expr string) []string {
	var bad []string
	var labels []string
	found := seriesRE.FindAllStringSubmatch(expr, -1)
	if len(found) == 0 {
		return []string{"names no caddy_robots_guard_ series"}
	}
	for _, m := range found {
		ls, ok := exported[m[1]]
		if !ok {
			bad = append(bad, "unknown series "+m[1])
			continue
		}
		labels = append(labels, ls...)
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(ls, mm[1]) && mm[1] != "__name__" {
				bad = append(bad, fmt.Sprintf("%s has no label %q", m[1], mm[1]))
			}
		}
	}
	for _, m := range groupRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(labels, l) {
				bad = append(bad, fmt.Sprintf("grouping by %q, a label of none of its series", l))
			}
		}
	}
	for _, m := range valuesRE.FindAllStringSubmatch(expr, -1) {
		if !slices.Contains(exported[m[1]], m[2]) {
			bad = append(bad, fmt.Sprintf("label_values of %s by %q, not one of its labels", m[1], m[2]))
		}
	}
	return bad
}

// ruleExprs returns the expr of every rule in a Prometheus rules file: the
// text after "expr:" up to the rule's next key.
func ruleExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "expr:"):
			cur = &strings.Builder{}
			out = append(out, "")
			cur.WriteString(strings.TrimPrefix(strings.TrimPrefix(trim, "expr:"), " |"))
		case cur != nil && regexp.MustCompile(`^(for|labels|annotations|- alert|- record|alert|record):`).MatchString(trim):
			out[len(out)-1], cur = cur.String(), nil
		case cur != nil:
			cur.WriteString(" " + trim)
		}
	}
	if cur != nil {
		out[len(out)-1] = cur.String()
	}
	return out
}

// grafanaExprs returns the expressions of a Grafana dashboard: every
// target's expr and every templating query.
func grafanaExprs(t *testing.T, dash map[string]any) []string {
	t.Helper()
	var out []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, k)
			}
		case []any:
			for _, x := range v {
				walk(x, key)
			}
		case string:
			if key == "expr" || key == "definition" {
				out = append(out, v)
			}
		}
	}
	walk(dash, "")
	return out
}

// TestMonitoringUsesExportedSeries: the alert rules and the Grafana
// dashboard in docs/ use only the series and labels the module exports;
// the dashboard has the shape Grafana imports (panels with ids, grid
// positions, targets and the datasource variable); and, where promtool is
// installed (CI installs it), every Grafana expression is valid PromQL.
func TestMonitoringUsesExportedSeries(t *testing.T) {
	exported := exportedSeries(t)
	rules := ruleExprs(t, "../docs/prometheus/robots_guard.rules.yml")
	if len(rules) < 6 {
		t.Fatalf("%d rule expressions read", len(rules))
	}
	for _, e := range rules {
		for _, b := range checkExpr(exported, e) {
			t.Errorf("rule %q: %s", e, b)
		}
	}
	raw, err := os.ReadFile("../docs/grafana/robots_guard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana JSON: %v", err)
	}
	for _, k := range []string{"title", "uid", "schemaVersion", "panels", "templating"} {
		if dash[k] == nil {
			t.Errorf("grafana JSON lacks %q", k)
		}
	}
	ids := map[float64]bool{}
	panels, _ := dash["panels"].([]any)
	for i, p := range panels {
		p, _ := p.(map[string]any)
		id, _ := p["id"].(float64)
		gp, _ := p["gridPos"].(map[string]any)
		targets, _ := p["targets"].([]any)
		ds, _ := p["datasource"].(map[string]any)
		if id == 0 || ids[id] || p["type"] == nil || p["title"] == nil || gp["w"] == nil || gp["h"] == nil || len(targets) == 0 || ds["uid"] != "${datasource}" {
			t.Errorf("panel %d: id %v (unique, non-zero), type, title, gridPos, targets and the datasource variable: %v", i, id, p)
		}
		ids[id] = true
	}
	exprs := grafanaExprs(t, dash)
	if len(exprs) < len(panels) {
		t.Fatalf("%d expressions in %d panels", len(exprs), len(panels))
	}
	for _, e := range exprs {
		for _, b := range checkExpr(exported, e) {
			t.Errorf("grafana %q: %s", e, b)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed: .ci/run installs Debian's prometheus package")
		}
		t.Log("promtool is not installed (apt-get install prometheus): Grafana expressions not parsed")
		return
	}
	var rf strings.Builder
	rf.WriteString("groups:\n  - name: grafana\n    rules:\n")
	macros := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$site", ".*")
	for i, e := range exprs {
		if strings.HasPrefix(e, "label_values(") {
			continue
		}
		q, _ := json.Marshal(macros.Replace(e))
		fmt.Fprintf(&rf, "      - record: grafana:expr%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "grafana.rules.yml")
	if err := os.WriteFile(path, []byte(rf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the Grafana expressions: %v\n%s", err, out)
	}
}

// TestCheckExprCatches: the checker itself finds a wrong series, a wrong
// label and a grouping by a label no series has.
func TestCheckExprCatches(t *testing.T) {
	exported := exportedSeries(t)
	for expr, want := range map[string]string{
		`rate(caddy_robots_guard_request_total[5m])`:                           "unknown series",
		`rate(caddy_robots_guard_requests_total{client="1.2.3.4"}[5m])`:        `no label "client"`,
		`sum by (feed) (rate(caddy_robots_guard_requests_total[5m]))`:          `grouping by "feed"`,
		`sum(rate(http_requests_total[5m]))`:                                   "names no caddy_robots_guard_ series",
		`label_values(caddy_robots_guard_bans_total, site)`:                    `not one of its labels`,
		`sum by (le) (rate(caddy_robots_guard_store_call_seconds_bucket[5m]))`: "",
	} {
		got := strings.Join(checkExpr(exported, expr), "; ")
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}
