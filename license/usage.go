package license

import (
	"slices"
	"strings"

	"github.com/robotsguard/robotsguard/policy"
)

// TermsFor returns the licence of c under which a crawler of purpose p
// may use it, and true: of the licences that grant p (Terms.Grants), the
// first that asks no payment, else the first. For PurposeNone (a bot
// whose use is not known) every licence counts but one that prohibits
// every use; for a content without a <license> element, it is empty Terms
// (it restricts nothing). It returns false when c has licences and none
// counts: no token of c's licence server could make that use licensed.
func (c *Content) TermsFor(p policy.Purpose) (Terms, bool) {
	if len(c.Licenses) == 0 {
		return Terms{}, true
	}
	found, first := false, Terms{}
	for _, t := range c.Licenses {
		if p != policy.PurposeNone && !t.Grants(p) || p == policy.PurposeNone && t.refusesAll() {
			continue
		}
		if !t.Paid() {
			return t, true
		}
		if !found {
			found, first = true, t
		}
	}
	return first, found
}

// Paid reports whether t asks payment: every payment type but "free" and
// "attribution", and none (RSL 1.0: a licence without <payment> is free).
func (t Terms) Paid() bool {
	switch strings.ToLower(t.Payment) {
	case "", "free", "attribution":
		return false
	}
	return true
}

// Grants reports whether t grants use p of the content. RSL 1.0's usage
// values are read as robotsguard's three purposes (SEMANTICS.md §8b):
// "all" is every purpose; "ai-train", "ai-input" and "search" are the
// purposes of the same names; "ai-index" (an index for AI search) is read
// as search in <permits> only, so that a search crawler whose index also
// serves AI search is refused by neither reading; "ai-all" is ai-train,
// ai-input and ai-index. A value of <prohibits> that covers p refuses it; a
// <permits> element, when there is one, must cover p. Other values
// ("tdm", a typo) cover nothing.
func (t Terms) Grants(p policy.Purpose) bool {
	for _, u := range t.Prohibits {
		if covers(u, p, false) {
			return false
		}
	}
	if len(t.Permits) == 0 {
		return true
	}
	for _, u := range t.Permits {
		if covers(u, p, true) {
			return true
		}
	}
	return false
}

// covers reports whether the usage value u covers purpose p; permits
// reads "ai-index" (and so "ai-all") as search too.
func covers(u string, p policy.Purpose, permits bool) bool {
	switch u { // lower-cased by Parse
	case "all":
		return true
	case "ai-all": // ai-train, ai-input and ai-index
		return p == policy.PurposeAIInput || p == policy.PurposeAITrain || permits && p == policy.PurposeSearch
	case "ai-train":
		return p == policy.PurposeAITrain
	case "ai-input":
		return p == policy.PurposeAIInput
	case "search":
		return p == policy.PurposeSearch
	case "ai-index":
		return permits && p == policy.PurposeSearch
	}
	return false
}

// refusesAll reports whether t's prohibits cover every purpose ("all", or
// "search" with "ai-all", ...): no use is licensed, whoever asks.
func (t Terms) refusesAll() bool {
	for _, p := range [...]policy.Purpose{policy.PurposeSearch, policy.PurposeAIInput, policy.PurposeAITrain} {
		if !slices.ContainsFunc(t.Prohibits, func(u string) bool { return covers(u, p, false) }) {
			return false
		}
	}
	return true
}
