package caddymodule

// Placeholders: the values of {http.robots_guard.*} for each request.

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

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

// actionBoxes and verdictBoxes hold the placeholder values of the fixed
// sets (actions, verification verdicts) as interface values made once,
// found by index: setting a placeholder then neither allocates nor hashes
// a name.
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

// nameBoxes holds group and operator names as interface values, made once
// per name, for their placeholders. A name is looked for first in a small
// direct-mapped table whose slot the address of its bytes picks (names come
// from the sites' parsed robots.txt files and the verifier's operators,
// whose strings stay put, so a name keeps its slot without being hashed),
// then in a map (at most maxNameBoxes names). Both hold copies: a name
// that is part of a robots.txt file's text does not keep the file alive.
type nameBoxes struct {
	slots [nameSlots]atomic.Pointer[nameBox]
	m     sync.Map // string → any
	n     atomic.Int32
}

type nameBox struct {
	name string // a copy
	box  any    // name, boxed
}

const (
	nameSlots    = 64
	maxNameBoxes = 1000
)

// box returns name as an interface value, made once per name.
func (t *nameBoxes) box(name string) any {
	if name == "" {
		return ""
	}
	slot := &t.slots[(uintptr(unsafe.Pointer(unsafe.StringData(name)))>>4)%nameSlots]
	if b := slot.Load(); b != nil && b.name == name {
		return b.box
	}
	b, ok := t.m.Load(name)
	if !ok {
		key := strings.Clone(name)
		b = any(key)
		if t.n.Load() < maxNameBoxes {
			if v, loaded := t.m.LoadOrStore(key, b); loaded {
				b = v
			} else {
				t.n.Add(1)
			}
		}
	}
	// A taken slot changes hands now and then only: two names that share
	// one would otherwise make a nameBox each time.
	if cur := slot.Load(); cur == nil || rand.Uint32()%nameSlots == 0 {
		slot.Store(&nameBox{name: b.(string), box: b})
	}
	return b
}

// ruleTexts holds the values of the rule placeholder ("3: Disallow:
// /private/", a string, as CEL expressions and log filters expect), boxed
// once per rule so that a denial does not allocate. Entries are keyed by
// the rule's address and hold it weakly: a rule of a robots.txt copy that
// was replaced is not kept alive, and its address, once reused, does not
// match. At most maxRuleTexts entries; the table starts again when full.
type ruleTexts struct {
	m sync.Map // uintptr → *ruleTextEntry
	n atomic.Int32
}

type ruleTextEntry struct {
	rule weak.Pointer[policy.Rule]
	text any // string
}

const maxRuleTexts = 4096

// text returns the placeholder value of r, boxed.
func (t *ruleTexts) text(r *policy.Rule) any {
	k := uintptr(unsafe.Pointer(r))
	if v, ok := t.m.Load(k); ok {
		if e := v.(*ruleTextEntry); e.rule.Value() == r {
			return e.text
		}
	}
	var text any = strconv.Itoa(r.Line) + ": " + r.String()
	if t.n.Add(1) > maxRuleTexts {
		t.m.Clear()
		t.n.Store(1)
	}
	t.m.Store(k, &ruleTextEntry{rule: weak.Make(r), text: text})
	return text
}

// phPrefix begins the name of every placeholder the module provides.
const phPrefix = "http.robots_guard."

// phNames are the placeholders a verdict gives (all but trap_link), in the
// order of placeholderValues.
var phNames = [...]string{phGroup, phRule, phAction, phVerification, phOperator}

// placeholderValues returns v's placeholder values in phNames' order; with
// verify false (crawler verification off), the verification and operator
// values are nil: those placeholders stay unknown.
func (s *state) placeholderValues(v *guard.Verdict, verify bool) (vals [len(phNames)]any) {
	vals[0], vals[1], vals[2] = s.names.box(v.Group), "", actionBox(v)
	if v.Rule != nil {
		vals[1] = s.rules.text(v.Rule)
	}
	if verify {
		vals[3], vals[4] = verdictBox(v.Verification), s.names.box(v.Operator)
	}
	return vals
}

// setPlaceholders sets v's placeholder values in repl one by one: for a
// verdict whose values phCache does not hold, and for a second
// robots_guard of one request, whose values must replace the first's (set
// values come before every provider's).
func (s *state) setPlaceholders(repl *caddy.Replacer, v *guard.Verdict, verify bool) {
	for i, val := range s.placeholderValues(v, verify) {
		if val != nil {
			repl.Set(phNames[i], val)
		}
	}
}

// phValues is one verdict's placeholder values, which a request hands to
// its replacer as one provider (Replacer.Map) made once per distinct set of
// values: a request then appends a function to its replacer instead of
// setting five values (a lock and a map write each, about a quarter of the
// instructions the guard ran for a browser; see bench/footprint). Values
// are read when a placeholder is, and never change.
type phValues struct {
	vals [len(phNames)]any  // placeholderValues
	get  caddy.ReplacerFunc // p.value

	// What the values were made for (phCache.find's check). Names are
	// copies: a group name is part of its robots.txt file's text, which a
	// slot must not keep alive; the rule is held weakly, for the same
	// reason, and its address only identifies it while it is alive.
	groupName, opName string
	ruleAddr          uintptr
	ruleRef           weak.Pointer[policy.Rule]
	act               uint8 // action<<1 | dry run
	ver               identity.Verdict
}

// value is the provider: the value of one {http.robots_guard.*} name.
func (p *phValues) value(key string) (any, bool) {
	if !strings.HasPrefix(key, phPrefix) {
		return nil, false
	}
	for i, name := range phNames {
		if name == key {
			return p.vals[i], p.vals[i] != nil
		}
	}
	return nil, false
}

// phAct is the action and dry-run flag of v as phValues.act holds them.
func phAct(v *guard.Verdict) uint8 {
	a := uint8(v.Action) << 1
	if v.DryRun {
		a |= 1
	}
	return a
}

// matches reports whether p holds the placeholder values of v.
func (p *phValues) matches(v *guard.Verdict) bool {
	if p.act != phAct(v) || p.ver != v.Verification || p.ruleAddr != uintptr(unsafe.Pointer(v.Rule)) ||
		p.groupName != v.Group || p.opName != v.Operator {
		return false
	}
	return v.Rule == nil || p.ruleRef.Value() == v.Rule
}

// phCache holds phValues in a small direct-mapped table whose slot the
// verdict's identity picks (the addresses of its group name, operator and
// rule, which stay put while their robots.txt copy and verifier do, and its
// action and verification): a hit costs a few comparisons, no hashing of
// text and no allocation. A browser's verdict (no group, rule or operator)
// always takes the same slot. A miss on a taken slot takes the slot now and
// then only (one miss in phSlotTurn), so that verdicts that share a slot
// do not allocate every time; the other misses set the values one by one
// (setPlaceholders), as fast as before the cache and without allocating.
type phCache struct {
	slots [phSlots]atomic.Pointer[phValues]
}

const (
	phSlots    = 256
	phSlotTurn = 64
)

// find returns the values of v, or nil when v's slot holds other values
// (the caller sets v's values one by one). verify says whether crawler
// verification is on (the verification and operator placeholders are
// provided).
func (c *phCache) find(s *state, v *guard.Verdict, verify bool) *phValues {
	h := uintptr(unsafe.Pointer(unsafe.StringData(v.Group)))>>4 ^
		uintptr(unsafe.Pointer(unsafe.StringData(v.Operator)))>>3 ^
		uintptr(unsafe.Pointer(v.Rule))>>5 ^
		uintptr(phAct(v))*0x9e37 ^ uintptr(v.Verification)*0x7f4b
	slot := &c.slots[(h^h>>8^h>>16)%phSlots]
	cur := slot.Load()
	if cur != nil && cur.matches(v) {
		return cur
	}
	if cur != nil && rand.Uint32()%phSlotTurn != 0 {
		return nil
	}
	p := &phValues{
		vals:      s.placeholderValues(v, verify),
		groupName: strings.Clone(v.Group),
		opName:    strings.Clone(v.Operator),
		ruleAddr:  uintptr(unsafe.Pointer(v.Rule)),
		act:       phAct(v),
		ver:       v.Verification,
	}
	if v.Rule != nil {
		p.ruleRef = weak.Make(v.Rule)
	}
	p.get = p.value
	slot.Store(p)
	return p
}
