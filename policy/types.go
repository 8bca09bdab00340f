package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits applied while reading a robots.txt file (SEMANTICS.md §1 and §2).
const (
	// MaxBodySize is the number of bytes of a robots.txt body that Parse reads.
	// Anything after it is ignored, as Google does; RFC 9309 requires at
	// least 500 KiB to be parsed.
	MaxBodySize = 512000

	// MaxLineLength is the number of bytes of one line that Parse keeps
	// (8×2083−1, as Google's parser). The rest of the line is dropped before
	// comments are stripped.
	MaxLineLength = 16663
)

// RuleKind says whether a rule allows or disallows the paths it matches.
type RuleKind uint8

// The two kinds of rule a group can hold.
const (
	Disallow RuleKind = iota + 1
	Allow
)

// String returns the directive name as it is written in robots.txt files.
func (k RuleKind) String() string {
	switch k {
	case Allow:
		return "Allow"
	case Disallow:
		return "Disallow"
	}
	return "RuleKind(" + strconv.Itoa(int(k)) + ")"
}

// Rule is one Allow or Disallow line of a group.
type Rule struct {
	// Kind is Allow or Disallow.
	Kind RuleKind
	// Pattern is the rule's value as written in the file, after comment
	// stripping and trimming; it may be empty.
	Pattern string
	// Line is the 1-based line number of the rule in the file.
	Line int
	// Priority is the length in octets of the normalised pattern, with '*'
	// and a final '$' counted (SEMANTICS.md §7). The longest matching rule
	// wins; ties go to Allow.
	Priority int
	// Implied marks the "<dir>/$" Allow that an "Allow: <dir>/index.htm..."
	// line also stands for (SEMANTICS.md §7, Google's index.html rule). Its
	// Pattern is "<dir>/$", its Priority that pattern's own length and its
	// Line the line of the index.html Allow. Such rules appear in
	// Decision.Rule, never in Group.Rules.
	Implied bool
}

// String returns the rule in robots.txt syntax, e.g. "Disallow: /private/".
func (r *Rule) String() string {
	if r == nil {
		return "<no rule>"
	}
	if r.Implied {
		return r.Kind.String() + ": " + r.Pattern + " (implied by index.html)"
	}
	if r.Pattern == "" {
		return r.Kind.String() + ":"
	}
	return r.Kind.String() + ": " + r.Pattern
}

// Group is one group of the file as written: a run of user-agent lines and
// the rules that follow them. Groups that name the same agent are not merged
// here; merging happens when a group is chosen (see Robots.Agent).
type Group struct {
	// Agents holds the user-agent tokens of the group as written, after the
	// token is cut at the first character outside [A-Za-z0-9_-]
	// (SEMANTICS.md §4). The global group is "*". A value that yields no
	// token at all (such as "*Bot") is kept as "" and never matches.
	Agents []string
	// Line is the line number of the group's first user-agent line.
	Line int
	// Delays holds, for each of Agents, the Crawl-delay that applies to it:
	// the largest valid Crawl-delay line whose nearest run of user-agent
	// lines above it includes that agent (SEMANTICS.md §8), or 0. A
	// user-agent line that joins the group after a Crawl-delay line shares
	// the group's rules but not that delay.
	Delays []time.Duration
	// Rules holds the group's Allow and Disallow lines in file order.
	Rules []Rule
	// CrawlDelay is the largest valid Crawl-delay given inside the group,
	// or 0 when there is none. Which agents it applies to is in Delays.
	CrawlDelay time.Duration
}

// Decision is the verdict for one user agent and one request target.
type Decision struct {
	// Allowed reports whether the target may be fetched.
	Allowed bool
	// Group is the user-agent token of the group that applied, as written in
	// the file (the first spelling when several groups were merged); "*" for
	// the global group; "" when no group applies.
	Group string
	// Rule is the deciding rule: the longest matching Disallow when the
	// target is disallowed, otherwise the longest matching Allow, or an empty
	// Disallow when that is all that matched. It is nil when no rule matched
	// or the target is exempt. It points into the Robots and must not be
	// modified.
	Rule *Rule
	// CrawlDelay is the Crawl-delay of the applied group (the largest value
	// when merged groups disagree); 0 when there is none.
	CrawlDelay time.Duration
	// CrawlDelayLine is the line of the Crawl-delay that gives CrawlDelay,
	// 0 when there is none: a throttled request can name it.
	CrawlDelayLine int
	// Exempt reports that the target's path is /robots.txt, which is always
	// allowed (RFC 9309 §2.2.2), whatever the rules say.
	Exempt bool
}

// String explains the decision in one line, e.g.
// `disallowed for group "GPTBot" by "Disallow: /private/" (line 12)`.
func (d Decision) String() string {
	var b strings.Builder
	if d.Allowed {
		b.WriteString("allowed")
	} else {
		b.WriteString("disallowed")
	}
	switch d.Group {
	case "":
		b.WriteString(" (no group applies)")
	default:
		fmt.Fprintf(&b, " for group %q", d.Group)
	}
	switch {
	case d.Exempt:
		b.WriteString(": /robots.txt is always allowed")
	case d.Rule != nil:
		fmt.Fprintf(&b, " by %q (line %d)", d.Rule.String(), d.Rule.Line)
	case d.Group != "":
		b.WriteString(": no rule matches")
	}
	if d.CrawlDelay > 0 {
		fmt.Fprintf(&b, ", crawl-delay %s", d.CrawlDelay)
	}
	return b.String()
}

// Severity ranks a lint diagnostic.
type Severity uint8

// Severities, from the least to the most serious.
const (
	// Info notes something legal that readers of the file may misread.
	Info Severity = iota + 1
	// Warning marks a line that is ignored, misread by some crawlers, or not
	// what its author probably meant.
	Warning
	// Error marks a file that does not say to bots what its author meant:
	// an HTML page, content past the size cap, rules or a Crawl-delay that
	// are ignored.
	Error
)

// String returns "info", "warning" or "error".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// Diagnostic is one finding of Robots.Lint.
type Diagnostic struct {
	// Line is the 1-based line the finding is about (0 for the whole file).
	Line int
	// Severity ranks the finding.
	Severity Severity
	// Code is a short stable identifier, e.g. "unknown-directive", usable
	// for filtering.
	Code string
	// Message explains the finding in one sentence.
	Message string
}

// Categories of diagnostics (Diagnostic.Category).
const (
	// CategorySyntax: lines that are misspelt, unknown or unreadable.
	CategorySyntax = "syntax"
	// CategoryRules: rules and groups that do not do what they seem to.
	CategoryRules = "rules"
	// CategoryCompat: what older or other parsers read differently.
	CategoryCompat = "compat"
	// CategoryFile: the file as a whole (an HTML page, its size).
	CategoryFile = "file"
)

// categories maps each code to its category.
var categories = map[string]string{
	"unknown-directive": CategorySyntax, "accepted-typo": CategorySyntax, "key-prefix": CategorySyntax,
	"missing-colon": CategorySyntax, "unparsable-line": CategorySyntax, "ignored-directive": CategorySyntax,
	"line-too-long": CategorySyntax, "bom-mid-file": CategorySyntax, "agent-empty": CategorySyntax,
	"rule-before-user-agent": CategoryRules, "bad-crawl-delay": CategoryRules, "crawl-delay-joins-group": CategoryRules,
	"never-matches": CategoryRules, "blank-line-in-group": CategoryRules, "agent-truncated": CategoryRules,
	"match-order": CategoryCompat,
	// AI-use preferences (Content-Signal, Content-Usage; SEMANTICS.md §8a).
	"unknown-signal": CategorySyntax, "bad-signal": CategorySyntax, "bad-signal-value": CategorySyntax,
	"signal-outside-group": CategoryRules, "signal-wildcard": CategoryRules, "signal-conflict": CategoryRules,
	"signal-contradicts-rules": CategoryRules, "signal-not-enforced": CategoryCompat, "aipref-vocab": CategoryCompat, "too-many-signals": CategoryFile,
	"html-page": CategoryFile, "size-cap": CategoryFile,
	// RSL 1.0 licences (License; SEMANTICS.md §8b).
	"license-url": CategorySyntax, "license-global": CategoryRules, "too-many-licenses": CategoryFile,
}

// IsLintCode reports whether code is the code of a diagnostic Lint may
// return, e.g. "unknown-directive".
func IsLintCode(code string) bool {
	_, ok := categories[code]
	return ok
}

// Category returns the diagnostic's category: "syntax", "rules", "compat"
// or "file" (CategorySyntax, ...), for choosing what to show.
func (d Diagnostic) Category() string {
	if c, ok := categories[d.Code]; ok {
		return c
	}
	return CategorySyntax
}

// String formats the diagnostic as "line 12: warning: message [code]".
func (d Diagnostic) String() string {
	return "line " + strconv.Itoa(d.Line) + ": " + d.Severity.String() + ": " + d.Message + " [" + d.Code + "]"
}
