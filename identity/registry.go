package identity

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/robotsguard/robotsguard/policy"
)

// MaxOperators is the largest number of operators a registry may hold (the
// width of Claims).
const MaxOperators = 64

// Operator is one crawler operator: the product tokens its crawlers send in
// their User-Agent headers and how it publishes its addresses. It is the
// JSON form of an operator in configuration too.
type Operator struct {
	// Name identifies the operator in logs, metrics and placeholders:
	// lower-case letters, digits, '-' and '_', e.g. "google".
	Name string `json:"name"`
	// Tokens are the product tokens the operator's crawlers send, matched
	// in a User-Agent header the way robots.txt groups are (a whole word,
	// case-insensitive, with the hyphen fallback: "Googlebot" also covers
	// "Googlebot-Image"), e.g. ["GPTBot", "OAI-SearchBot"].
	Tokens []string `json:"tokens,omitempty"`
	// IPRanges are the operator's IP-range feeds: http:// or https:// URLs,
	// or local file paths, of JAFAR documents
	// (draft-illyes-webbotauth-jafar-00) or JSON in Google's shape, which
	// JAFAR extends: {"creationTime": ..., "prefixes": [{"ipv4Prefix":
	// "...", "services": ["GPTBot"]}, {"ipv6Prefix": "..."}]}. An entry's
	// services, when they name the operator's tokens, limit which of its
	// crawlers the entry's addresses verify (see ParseFeed).
	IPRanges []string `json:"ip_ranges,omitempty"`
	// RDNS are the domains the operator's crawlers have reverse-DNS names
	// under, e.g. ["googlebot.com", "google.com"]. A name matches on a label
	// boundary: "crawl-1.googlebot.com" is under googlebot.com,
	// "evilgooglebot.com" is not.
	RDNS []string `json:"rdns,omitempty"`
	// SignatureAgents are the operator's Web Bot Auth signature agents
	// (the Signature-Agent its bots send): origins, whose key directory
	// is fetched, e.g. ["https://chatgpt.com"], or the https URIs of JWK
	// Sets, as draft -01 members may name. A request signed by one of them
	// is the operator's, whatever its address. A JWK Set URI is fetched
	// only when named here (or in web_bot_auth's agents, or with
	// discover): a client's header never picks what the guard fetches.
	SignatureAgents []string `json:"signature_agents,omitempty"`
	// Source is the documentation page the entry comes from.
	Source string `json:"source,omitempty"`
}

// Builtin returns the built-in registry, a fresh copy each call, taken from
// each operator's own documentation (see each entry's Source).
func Builtin() []Operator { return builtinOperators() }

// Merge returns base with the operators of extra added; an operator of
// extra whose name is in base replaces that entry whole.
func Merge(base, extra []Operator) []Operator {
	out := make([]Operator, 0, len(base)+len(extra))
	idx := make(map[string]int)
	for _, op := range base {
		idx[op.Name] = len(out)
		out = append(out, op)
	}
	for _, op := range extra {
		if i, ok := idx[op.Name]; ok {
			out[i] = op
			continue
		}
		idx[op.Name] = len(out)
		out = append(out, op)
	}
	return out
}

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	tokenRE  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	domainRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// Validate checks a registry: names unique and well formed, every token a
// valid product token that belongs to exactly one operator, domains valid
// host names, feeds non-empty. The error names the operator and field, e.g.
// `operator "acme": tokens: "Googlebot" is also a token of "google"`.
func Validate(ops []Operator) error {
	if len(ops) > MaxOperators {
		return fmt.Errorf("at most %d operators, got %d", MaxOperators, len(ops))
	}
	names := make(map[string]bool)
	owner := make(map[string]string)
	for _, op := range ops {
		if !nameRE.MatchString(op.Name) {
			return fmt.Errorf("operator %q: name: use lower-case letters, digits, '-' and '_'", op.Name)
		}
		if names[op.Name] {
			return fmt.Errorf("operator %q: name: defined twice", op.Name)
		}
		names[op.Name] = true
		errf := func(field, format string, args ...any) error {
			return fmt.Errorf("operator %q: %s: "+format, append([]any{op.Name, field}, args...)...)
		}
		if len(op.Tokens) == 0 && len(op.SignatureAgents) == 0 {
			return errf("tokens", "at least one product token (or signature agent) is required")
		}
		for _, t := range op.Tokens {
			if !tokenRE.MatchString(t) || len(t) < 2 {
				return errf("tokens", "%q is not a product token (letters, digits, '-' and '_', at least 2)", t)
			}
			lt := strings.ToLower(t)
			if o, ok := owner[lt]; ok {
				if o == op.Name {
					return errf("tokens", "%q is listed twice", t)
				}
				return errf("tokens", "%q is also a token of %q", t, o)
			}
			owner[lt] = op.Name
		}
		for _, d := range op.RDNS {
			if !domainRE.MatchString(normDomain(d)) || !strings.Contains(normDomain(d), ".") {
				return errf("rdns", "%q is not a domain name such as googlebot.com", d)
			}
		}
		for _, a := range op.SignatureAgents {
			if _, err := checkAgent(a); err != nil {
				return errf("signature_agents", "%v", err)
			}
		}
		for _, f := range op.IPRanges {
			if strings.TrimSpace(f) == "" {
				return errf("ip_ranges", "empty feed")
			}
			if err := checkFeedSource(f); err != nil {
				return errf("ip_ranges", "%v", err)
			}
		}
	}
	for _, op := range ops {
		for _, t := range op.Tokens {
			// The hyphen fallback: "Googlebot-Acme" also names Googlebot,
			// so it would claim two operators.
			lt := strings.ToLower(t)
			for j := strings.LastIndexByte(lt, '-'); j > 0; j = strings.LastIndexByte(lt[:j], '-') {
				if o, ok := owner[lt[:j]]; ok && o != op.Name {
					return fmt.Errorf("operator %q: tokens: %q also names %q of %q (a token followed by '-' covers it, as in robots.txt)", op.Name, t, lt[:j], o)
				}
			}
		}
	}
	return nil
}

// normDomain lower-cases d and drops its leading and trailing dots.
func normDomain(d string) string {
	return strings.Trim(strings.ToLower(strings.TrimSpace(d)), ".")
}

// opEntry is an operator compiled for matching.
type opEntry struct {
	Operator
	bit     Claims
	matcher *policy.Robots // one group of the operator's tokens
	domains []string       // normalised
	feeds   []*feed
	key     [16]byte
	index   indexPtr
	// custom marks an operator that is not a built-in one as it ships
	// (Builtin): its feeds are the configuration's own, so an address they
	// list verifies even when it is not globally reachable.
	custom bool
}

// compile builds the matchers of a validated registry.
func compile(ops []Operator) []*opEntry {
	out := make([]*opEntry, len(ops))
	builtin := make(map[string]Operator)
	for _, op := range Builtin() {
		builtin[op.Name] = op
	}
	for i, op := range ops {
		e := &opEntry{Operator: op, bit: 1 << i, matcher: tokensMatcher(op.Tokens)}
		if bo, ok := builtin[op.Name]; !ok || !reflect.DeepEqual(bo, op) {
			e.custom = true
		}
		for _, d := range op.RDNS {
			e.domains = append(e.domains, normDomain(d))
		}
		sum := sha256.Sum256([]byte("robots_guard operator " + op.Name))
		e.key[0] = 0xff
		copy(e.key[1:], sum[:15])
		out[i] = e
	}
	return out
}

// tokensMatcher returns one robots.txt group of the product tokens, so
// that a header is found to name one of them by the rules robots.txt
// groups are chosen by.
func tokensMatcher(tokens []string) *policy.Robots {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("User-agent: " + t + "\n")
	}
	b.WriteString("Disallow: /\n")
	return policy.Parse([]byte(b.String()))
}

// ClaimedBy returns the operators of ops whose tokens ua names (see
// Verifier.Claims), without building a Verifier.
func ClaimedBy(ops []Operator, ua string) []Operator {
	var out []Operator
	for _, e := range compile(ops) {
		if e.names(ua) {
			out = append(out, e.Operator)
		}
	}
	return out
}

// names reports whether the header (or bare token) ua names one of the
// operator's tokens, by the rules robots.txt groups are chosen by.
func (e *opEntry) names(ua string) bool { return e.matcher.Agent(ua).Specific() }

// underDomain reports whether the normalised host name n lies under one of
// the operator's domains, on a label boundary.
func (e *opEntry) underDomain(n string) bool {
	for _, d := range e.domains {
		if n == d || strings.HasSuffix(n, d) && n[len(n)-len(d)-1] == '.' {
			return true
		}
	}
	return false
}
