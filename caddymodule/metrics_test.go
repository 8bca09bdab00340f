package caddymodule

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/middleware"
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
