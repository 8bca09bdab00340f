package caddymodule

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robotsguard/robotsguard/middleware"
)

// maxGroupLabels caps the distinct values of the group label; later groups
// are counted as "_other", so a site that lists thousands of agents cannot
// blow up the metrics.
const maxGroupLabels = 50

// The collectors are built once and registered on every config's registry
// (Caddy makes a new one per load), so counts survive reloads.
var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "robots_guard",
		Name:      "requests_total",
		Help:      "Requests decided by robots_guard, by action (allow, deny, throttle, and dry_run_deny, dry_run_throttle under dry_run), reason and robots.txt group.",
	}, []string{"action", "reason", "group"})
	fetchesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "robots_guard",
		Name:      "robots_fetches_total",
		Help:      "robots.txt fetches by outcome (ok, html, not_modified, unavailable, unreachable, postponed).",
	}, []string{"outcome"})
)

// registerMetrics registers the collectors on reg; registering them again
// on the same registry is not an error.
func registerMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{requestsTotal, fetchesTotal} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// groupLabels bounds the group label values (see maxGroupLabels).
var groupLabels = struct {
	sync.RWMutex
	seen map[string]bool
}{seen: make(map[string]bool)}

func groupLabel(group string) string {
	if group == "" {
		return "_none"
	}
	groupLabels.RLock()
	ok := groupLabels.seen[group]
	n := len(groupLabels.seen)
	groupLabels.RUnlock()
	if ok {
		return group
	}
	if n >= maxGroupLabels {
		return "_other"
	}
	groupLabels.Lock()
	defer groupLabels.Unlock()
	if len(groupLabels.seen) >= maxGroupLabels {
		return "_other"
	}
	groupLabels.seen[group] = true
	return group
}

// metricsObserver feeds the Enforcer's decisions and fetches into the
// collectors. Browsers (not_bot) are counted too, under group "_none".
type metricsObserver struct{}

func (metricsObserver) ObserveDecision(_, group string, action middleware.Action, reason middleware.Reason, dryRun bool) {
	v := middleware.Verdict{Action: action, DryRun: dryRun}
	requestsTotal.WithLabelValues(v.ActionName(), reason.String(), groupLabel(group)).Inc()
}

func (metricsObserver) ObserveFetch(_ string, outcome middleware.FetchOutcome) {
	fetchesTotal.WithLabelValues(outcome.String()).Inc()
}
