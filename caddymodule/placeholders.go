package caddymodule

// Placeholders: the values of {http.robots_guard.*} for each request.

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/policy"
)

// Placeholder names set for every request the module sees.
const (
	phGroup        = "http.robots_guard.group"
	phRule         = "http.robots_guard.rule"
	phAction       = "http.robots_guard.action"
	phVerification = "http.robots_guard.verification"
	phOperator     = "http.robots_guard.operator"
	phTrapLink     = "http.robots_guard.trap_link"
)

// phPrefix begins the name of every placeholder the module provides.
const phPrefix = "http.robots_guard."

// phNames are the placeholders a verdict gives (all but trap_link), in the
// order of placeholderValues.
var phNames = [...]string{phGroup, phRule, phAction, phVerification, phOperator}

// actionBoxes and verdictBoxes hold the placeholder values of the fixed
// sets (actions, verification verdicts) as interface values made once,
// so that setting them does not allocate.
var (
	actionBoxes = func() (b [guard.Throttle + 1][2]any) {
		for a := range b {
			for d := range b[a] {
				b[a][d] = guard.Verdict{Action: guard.Action(a), DryRun: d == 1}.ActionName()
			}
		}
		return b
	}()
	verdictBoxes = func() (b [identity.Unverifiable + 1]any) {
		for v := range b {
			b[v] = identity.Verdict(v).String()
		}
		return b
	}()
)

// actionBox returns v's action placeholder value.
func actionBox(v *guard.Verdict) any {
	if int(v.Action) < len(actionBoxes) {
		d := 0
		if v.DryRun {
			d = 1
		}
		return actionBoxes[v.Action][d]
	}
	return v.ActionName()
}

// verdictBox returns a verification verdict's placeholder value.
func verdictBox(v identity.Verdict) any {
	if int(v) < len(verdictBoxes) {
		return verdictBoxes[v]
	}
	return v.String()
}

// ruleText is the rule placeholder's value: "12: Disallow: /private/" (a
// string, as CEL expressions and log filters expect), "" without a rule.
func ruleText(r *policy.Rule) string {
	if r == nil {
		return ""
	}
	return strconv.Itoa(r.Line) + ": " + r.String()
}

// placeholderValues returns v's placeholder values in phNames' order; with
// verify false (crawler verification off), the verification and operator
// values are nil: those placeholders stay unknown.
func placeholderValues(v *guard.Verdict, verify bool) (vals [len(phNames)]any) {
	vals[0], vals[1], vals[2] = v.Group, ruleText(v.Rule), actionBox(v)
	if verify {
		vals[3], vals[4] = verdictBox(v.Verification), v.Operator
	}
	return vals
}

// setPlaceholders sets v's placeholder values in repl one by one: for a
// bot's verdict, and for a second robots_guard of one request, whose
// values must replace the first's (set values come before every
// provider's).
func setPlaceholders(repl *caddy.Replacer, v *guard.Verdict, verify bool) {
	for i, val := range placeholderValues(v, verify) {
		if val != nil {
			repl.Set(phNames[i], val)
		}
	}
}

// fixedProviders are the placeholders of the verdicts with no group, rule
// or operator (every browser's), one provider per action, dry run,
// verification verdict and verification setting, made once: such a request
// hands its replacer one of them (Replacer.Map) instead of setting five
// values, each a lock and a map write.
var fixedProviders = func() (p [guard.Throttle + 1][2][identity.Unverifiable + 1][2]caddy.ReplacerFunc) {
	for a := range p {
		for d := range p[a] {
			for ver := range p[a][d] {
				for vf := range p[a][d][ver] {
					v := guard.Verdict{Action: guard.Action(a), DryRun: d == 1, Verification: identity.Verdict(ver)}
					vals := placeholderValues(&v, vf == 1)
					p[a][d][ver][vf] = func(key string) (any, bool) { return phValue(&vals, key) }
				}
			}
		}
	}
	return p
}()

// phValue is the value of one {http.robots_guard.*} name of vals.
func phValue(vals *[len(phNames)]any, key string) (any, bool) {
	if !strings.HasPrefix(key, phPrefix) {
		return nil, false
	}
	for i, name := range phNames {
		if name == key {
			return vals[i], vals[i] != nil
		}
	}
	return nil, false
}

// fixedProvider returns the provider of v's placeholders when v is one of
// the fixed verdicts (no group, rule or operator), nil otherwise.
func fixedProvider(v *guard.Verdict, verify bool) caddy.ReplacerFunc {
	if v.Group != "" || v.Rule != nil || v.Operator != "" || int(v.Action) >= len(fixedProviders) || int(v.Verification) > int(identity.Unverifiable) {
		return nil
	}
	d, vf := 0, 0
	if v.DryRun {
		d = 1
	}
	if verify {
		vf = 1
	}
	return fixedProviders[v.Action][d][v.Verification][vf]
}
