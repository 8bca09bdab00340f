package caddymodule

import (
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// freshGroupLabels starts a test below the group label cap, which is
// process-wide, whatever ran before (-shuffle), and puts it back as it was.
func freshGroupLabels(t *testing.T) {
	groupLabels.Lock()
	saved := groupLabels.seen
	groupLabels.seen = map[string]bool{}
	groupLabels.Unlock()
	t.Cleanup(func() {
		groupLabels.Lock()
		groupLabels.seen = saved
		groupLabels.Unlock()
	})
}

// requests_total counts every decision exactly, under concurrency, with the
// verification label.
func TestRequestsTotal(t *testing.T) {
	freshGroupLabels(t)
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
				metricsObserver{}.ObserveDecision(guard.Verdict{Action: guard.Deny, Reason: guard.ReasonSpoofed, Group: "MetricsTestBot", Verification: identity.Spoofed})
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
	freshGroupLabels(t)
	c := &decisionCollector{desc: prometheus.NewDesc("x", "x", []string{"action", "reason", "group", "verification", "site"}, nil)}
	sum := func() map[[5]string]uint64 {
		ch := make(chan prometheus.Metric, 1000)
		c.Collect(ch)
		close(ch)
		out := map[[5]string]uint64{}
		c.counters.Range(func(_, v any) bool {
			cc := v.(*cellCounter)
			for i := range cc.cells {
				out[cc.labels] += cc.cells[i].n.Load()
			}
			return true
		})
		return out
	}
	vs := []guard.Verdict{
		{Action: guard.Allow, Reason: guard.ReasonNotBot},
		{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: "GPTBot"},
		{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: "*"},
		{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: "*", DryRun: true},
		{Action: guard.Allow, Reason: guard.Reason(200), Group: "odd"}, // out of range: the sync.Map alone
		{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: "*", SiteLabel: "http://a.example"},
		{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: "*", SiteLabel: "http://b.example", DryRun: true},
	}
	for i := range 100 {
		for j, v := range vs {
			if i%(j+1) == 0 {
				c.inc(v)
			}
		}
	}
	got := sum()
	want := map[[5]string]uint64{
		{"allow", "not_bot", "_none", "none", ""}:                       100,
		{"deny", "disallowed", "GPTBot", "none", ""}:                    50,
		{"deny", "disallowed", "*", "none", ""}:                         34,
		{"dry_run_deny", "disallowed", "*", "none", ""}:                 25,
		{"allow", "reason(200)", "odd", "none", ""}:                     20,
		{"deny", "disallowed", "*", "none", "http://a.example"}:         17,
		{"dry_run_deny", "disallowed", "*", "none", "http://b.example"}: 15,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v: %d, want %d (all %v)", k, got[k], n, got)
		}
	}
	// Past maxFastGroups groups, a tuple's index stops growing; the
	// counts stay exact.
	for i := range maxFastGroups + 10 {
		c.inc(guard.Verdict{Action: guard.Allow, Reason: guard.ReasonAllowed, Group: "g" + strconv.Itoa(i)})
	}
	i, _ := fastIndex(&guard.Verdict{Action: guard.Allow, Reason: guard.ReasonAllowed})
	if n := c.fast[i].Load().n; n != maxFastGroups {
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

// A new config generation lets the groups that had no request since the
// previous one leave, with their series, and gives their places to new
// names; the groups still in use keep their counts; the same generation
// (a second handler of the config) changes nothing.
func TestGroupLabelsRetire(t *testing.T) {
	freshGroupLabels(t)
	c := &decisionCollector{desc: prometheus.NewDesc("x", "x", []string{"action", "reason", "group", "verification", "site"}, nil)}
	deny := func(group string, n int) {
		for range n {
			c.inc(guard.Verdict{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: group})
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	series := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "group" {
						out[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
		return out
	}
	retire := func() {
		groupLabels.Lock()
		c.retireGroups()
		groupLabels.Unlock()
	}
	deny("", 1)
	for i := range maxGroupLabels {
		deny("old"+strconv.Itoa(i), 2)
	}
	deny("new", 3)
	if s := series(); s["new"] != 0 || s["_other"] != 3 || len(s) != maxGroupLabels+2 {
		t.Fatalf("over the cap: %v", s)
	}
	retire() // every group had requests in the first generation: all stay
	if s := series(); len(s) != maxGroupLabels+2 {
		t.Fatalf("after the first reload: %d series, want %d: %v", len(s), maxGroupLabels+2, s)
	}
	for i := range 10 {
		deny("old"+strconv.Itoa(i), 1)
	}
	retire() // only old0 … old9 had requests in the second
	deny("new", 4)
	s := series()
	for i := range maxGroupLabels {
		g := "old" + strconv.Itoa(i)
		switch {
		case i < 10 && s[g] != 3:
			t.Errorf("%s = %v, want 3 (kept whole)", g, s[g])
		case i >= 10 && s[g] != 0:
			t.Errorf("%s = %v, want no series (retired)", g, s[g])
		}
	}
	if s["new"] != 4 || s["_other"] != 3 || s["_none"] != 1 {
		t.Errorf("new %v (want 4), _other %v (want 3), _none %v (want 1)", s["new"], s["_other"], s["_none"])
	}
	groupLabels.RLock()
	n := len(groupLabels.seen)
	groupLabels.RUnlock()
	if n != 11 || len(s)-2 > maxGroupLabels {
		t.Errorf("%d group labels in use (want 11), %d group series", n, len(s)-2)
	}

	// One generation per registry: a second handler of the same config
	// does not retire anything.
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	if !newGeneration(regA) || newGeneration(regA) || !newGeneration(regB) || newGeneration(nil) {
		t.Error("newGeneration: want a new generation for each new registry only")
	}
}

// Retiring groups while requests are counted: no race (go test -race), and
// a group that has requests all along keeps one series that never goes
// back.
func TestGroupLabelsRetireConcurrently(t *testing.T) {
	freshGroupLabels(t)
	c := &decisionCollector{desc: prometheus.NewDesc("x", "x", []string{"action", "reason", "group", "verification", "site"}, nil)}
	total := func(group string) uint64 {
		var n uint64
		c.counters.Range(func(k, v any) bool {
			if k.(counterKey).group == group {
				n += v.(*cellCounter).total()
			}
			return true
		})
		return n
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c.inc(guard.Verdict{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: "steady"})
				c.inc(guard.Verdict{Action: guard.Deny, Reason: guard.ReasonDisallowed, Group: "g" + strconv.Itoa(w*1000+i%100)})
			}
		})
	}
	for range 200 {
		// Once "steady" has had a request in this generation, a new
		// one must keep its counter.
		for before := total("steady"); total("steady") == before; {
			runtime.Gosched()
		}
		before := total("steady")
		groupLabels.Lock()
		c.retireGroups()
		groupLabels.Unlock()
		if n := total("steady"); n < before {
			t.Fatalf("steady went back from %d to %d", before, n)
		}
	}
	close(stop)
	wg.Wait()
	groupLabels.RLock()
	n := len(groupLabels.seen)
	groupLabels.RUnlock()
	if n > maxGroupLabels {
		t.Errorf("%d group labels, cap %d", n, maxGroupLabels)
	}
}
