package caddymodule

import (
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/middleware"

	"github.com/robotsguard/robotsguard/internal/stripe"
)

// requests_total counts every decision exactly, under concurrency, with the
// verification label.
func TestRequestsTotal(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := registerMetrics(reg); err != nil {
		t.Fatal(err)
	}
	count := func(action, reason, group, verification string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "caddy_robots_guard_requests_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				if l["action"] == action && l["reason"] == reason && l["group"] == group && l["verification"] == verification {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	before := count("deny", "spoofed", "MetricsTestBot", "spoofed")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				metricsObserver{}.ObserveDecision(middleware.Verdict{Action: middleware.Deny, Reason: middleware.ReasonSpoofed, Group: "MetricsTestBot", Verification: identity.Spoofed})
			}
		})
	}
	wg.Wait()
	if got := count("deny", "spoofed", "MetricsTestBot", "spoofed") - before; got != 8000 {
		t.Fatalf("counted %v, want 8000", got)
	}
}

// The fast index finds the same counters as the full tuple: browsers
// (group "") and several groups of one tuple, dry runs apart, and a tuple
// out of the index's range, all count exactly; a tuple remembers at most
// maxFastGroups groups and counts the others all the same.
func TestRequestsTotalFastIndex(t *testing.T) {
	// The group label cap is process-wide: start this test below it, and
	// put it back as it was.
	groupLabels.Lock()
	saved := groupLabels.seen
	groupLabels.seen = map[string]bool{}
	groupLabels.Unlock()
	t.Cleanup(func() {
		groupLabels.Lock()
		groupLabels.seen = saved
		groupLabels.Unlock()
	})
	c := &decisionCollector{desc: prometheus.NewDesc("x", "x", []string{"action", "reason", "group", "verification"}, nil), stripes: stripe.New(counterCells)}
	sum := func() map[[4]string]uint64 {
		ch := make(chan prometheus.Metric, 1000)
		c.Collect(ch)
		close(ch)
		out := map[[4]string]uint64{}
		c.counters.Range(func(_, v any) bool {
			cc := v.(*cellCounter)
			for i := range cc.cells {
				out[cc.labels] += cc.cells[i].n.Load()
			}
			return true
		})
		return out
	}
	vs := []middleware.Verdict{
		{Action: middleware.Allow, Reason: middleware.ReasonNotBot},
		{Action: middleware.Deny, Reason: middleware.ReasonDisallowed, Group: "GPTBot"},
		{Action: middleware.Deny, Reason: middleware.ReasonDisallowed, Group: "*"},
		{Action: middleware.Deny, Reason: middleware.ReasonDisallowed, Group: "*", DryRun: true},
		{Action: middleware.Allow, Reason: middleware.Reason(200), Group: "odd"}, // out of range: the sync.Map alone
	}
	for i := range 100 {
		for j, v := range vs {
			if i%(j+1) == 0 {
				c.inc(v)
			}
		}
	}
	got := sum()
	want := map[[4]string]uint64{
		{"allow", "not_bot", "_none", "none"}:       100,
		{"deny", "disallowed", "GPTBot", "none"}:    50,
		{"deny", "disallowed", "*", "none"}:         34,
		{"dry_run_deny", "disallowed", "*", "none"}: 25,
		{"allow", "reason(200)", "odd", "none"}:     20,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v: %d, want %d (all %v)", k, got[k], n, got)
		}
	}
	// Past maxFastGroups groups, a tuple's index stops growing; the
	// counts stay exact.
	for i := range maxFastGroups + 10 {
		c.inc(middleware.Verdict{Action: middleware.Allow, Reason: middleware.ReasonAllowed, Group: "g" + strconv.Itoa(i)})
	}
	i, _ := fastIndex(&middleware.Verdict{Action: middleware.Allow, Reason: middleware.ReasonAllowed})
	if n := len(c.fast[i].Load().groups); n != maxFastGroups {
		t.Errorf("%d groups remembered, want %d", n, maxFastGroups)
	}
	var total uint64
	for k, n := range sum() {
		if k[1] == "allowed" {
			total += n
		}
	}
	if total != maxFastGroups+10 {
		t.Errorf("%d allowed counted, want %d", total, maxFastGroups+10)
	}
}
