package policy

import (
	"strconv"
	"strings"
)

// Purpose is a use of a site's content that robots.txt may grant or refuse
// with a Content-Signal line (Cloudflare's Content Signals Policy) or a
// Content-Usage line (the IETF aipref drafts). See SEMANTICS.md §8a.
type Purpose uint8

// The purposes. Their string forms are Content-Signal's keys.
const (
	// PurposeNone is no purpose that a signal speaks of (an ads checker,
	// an unknown crawler): signals never apply to it.
	PurposeNone Purpose = iota
	// PurposeSearch is building a search index and showing links and
	// short excerpts (Content-Signal search, aipref search).
	PurposeSearch
	// PurposeAIInput is feeding content into AI models at answer time:
	// retrieval-augmented generation, grounding, user-triggered fetches for
	// an AI answer (Content-Signal ai-input).
	PurposeAIInput
	// PurposeAITrain is training or fine-tuning AI models (Content-Signal
	// ai-train, aipref train-ai).
	PurposeAITrain

	numPurposes = int(PurposeAITrain) + 1
)

var purposeNames = [numPurposes]string{"", "search", "ai-input", "ai-train"}

// String returns "search", "ai-input" or "ai-train", "" for PurposeNone.
func (p Purpose) String() string {
	if int(p) < numPurposes {
		return purposeNames[p]
	}
	return "purpose(" + strconv.Itoa(int(p)) + ")"
}

// ParsePurpose reads a purpose's name ("search", "ai-input", "ai-train").
func ParsePurpose(s string) (Purpose, bool) {
	for i, n := range purposeNames {
		if i > 0 && strings.EqualFold(s, n) {
			return Purpose(i), true
		}
	}
	return PurposeNone, false
}

// Signal is a site's preference for a purpose: unset (the file says
// nothing of it, which grants and restricts nothing), yes or no.
type Signal uint8

// The signals.
const (
	Unset Signal = iota
	Yes
	No
)

// String returns "unset", "yes" or "no".
func (s Signal) String() string {
	switch s {
	case Yes:
		return "yes"
	case No:
		return "no"
	}
	return "unset"
}

// SignalRule is one Content-Signal or Content-Usage line: the preferences
// it states, the path it is limited to (Content-Usage only; "" for every
// path) and the agents of its group it reaches (SEMANTICS.md §8a). It
// lives as long as its Robots.
type SignalRule struct {
	// Line is its line in robots.txt.
	Line           int
	usage          bool   // Content-Usage (else Content-Signal)
	path           string // a path prefix; "" for all paths
	exact          bool   // the path ended in '$'
	prefs          [numPurposes]Signal
	keys           [numPurposes]string // each preference's key as written, for messages
	texts          [numPurposes]string // "Content-Signal ai-train=no", made once at parse time
	agentLo, agent int32               // the agents of its file group it reaches: [agentLo, agent)
}

// signalKeys maps the keys of both syntaxes, lower-cased, to purposes.
// Content-Signal: search, ai-input, ai-train. aipref (vocab-08): search,
// train-ai, ai-use ("input to a generative AI model, not directly provided
// by the user": answer-time input); train-genai (vocab-02 and -03) is a
// kind of train-ai.
var signalKeys = map[string]Purpose{
	"search":      PurposeSearch,
	"ai-input":    PurposeAIInput,
	"ai-train":    PurposeAITrain,
	"train-ai":    PurposeAITrain,
	"train-genai": PurposeAITrain,
	"ai-use":      PurposeAIInput,
}

// knownUnenforced are keys of either syntax that robots_guard reads and
// does not act on: Content-Signal's use= (how AI systems may consume
// content) and categories of older aipref drafts.
var knownUnenforced = map[string]string{
	"use":       "Content-Signal use= (immediate, reference, full) limits how an AI system keeps content; robots_guard cannot see that and does not enforce it",
	"all":       "the aipref category \"all\" (draft -02) is no longer in the vocabulary",
	"bots":      "the aipref category \"bots\" (drafts -03, -04) is no longer in the vocabulary",
	"ai-output": "the aipref category \"ai-output\" (draft -04) is no longer in the vocabulary",
	"tdm":       "the aipref category \"tdm\" (draft -01) is no longer in the vocabulary",
	"ai":        "the aipref category \"ai\" (draft -01) is no longer in the vocabulary",
	"genai":     "the aipref category \"genai\" (draft -01) is no longer in the vocabulary",
	"inference": "the aipref category \"inference\" (draft -01) is no longer in the vocabulary",
}

// MaxSignalLines is how many Content-Signal and Content-Usage lines of a
// file are read; later ones are reported and ignored. Agent.Signal looks
// at the lines that reach the chosen group on every bot request, so their
// number bounds that work (a real file has one or two; the parsed 500 KiB
// could hold twenty thousand).
const MaxSignalLines = 256

// signal handles a Content-Signal or Content-Usage line.
func (p *parser) signal(n int, usage bool, value string) {
	name := "Content-Signal"
	if usage {
		name = "Content-Usage"
	}
	if len(p.r.signals) >= MaxSignalLines {
		if len(p.r.signals) == MaxSignalLines && !p.signalsCapped {
			p.signalsCapped = true
			p.diag(n, Warning, "too-many-signals", name+" line beyond the first "+strconv.Itoa(MaxSignalLines)+
				" Content-Signal and Content-Usage lines of the file: it and later ones are ignored")
		}
		return
	}
	if p.cur < 0 {
		p.diag(n, Warning, "signal-outside-group", name+" line comes before any user-agent line: it applies to no crawler and is ignored")
		return
	}
	st := SignalRule{Line: n, usage: usage}
	prefs := value
	if usage && strings.HasPrefix(value, "/") {
		i := strings.IndexAny(value, " \t")
		if i < 0 {
			p.diag(n, Warning, "bad-signal", "Content-Usage names a path and no preference; it is ignored")
			return
		}
		st.path, prefs = value[:i], trimSpace(value[i:])
		if j := strings.IndexByte(st.path, '*'); j >= 0 {
			p.diag(n, Info, "signal-wildcard", "Content-Usage path \""+st.path+"\" is read as the prefix before its '*'")
			st.path = st.path[:j]
		} else if strings.HasSuffix(st.path, "$") {
			st.path, st.exact = st.path[:len(st.path)-1], true
		}
	}
	any := false
	for _, item := range strings.Split(prefs, ",") {
		any = p.signalItem(n, name, usage, item, &st) || any
	}
	if !any {
		return
	}
	for pp := range st.prefs {
		if st.prefs[pp] == Unset {
			continue
		}
		name, v := "Content-Signal", st.prefs[pp].String()
		if usage {
			name, v = "Content-Usage", v[:1]
			if st.path != "" {
				name += " " + st.path
				if st.exact {
					name += "$"
				}
			}
		}
		st.texts[pp] = name + " " + st.keys[pp] + "=" + v
	}
	g := &p.r.groups[p.cur]
	st.agentLo, st.agent = int32(p.runStart), int32(len(g.agents))
	p.r.signals = append(p.r.signals, st)
	g.signals = append(g.signals, int32(len(p.r.signals)-1))
}

// signalItem reads one key=value preference of a Content-Signal or
// Content-Usage line into st, and reports whether it set one.
func (p *parser) signalItem(n int, name string, usage bool, item string, st *SignalRule) bool {
	item = trimSpace(item)
	if item == "" {
		return false
	}
	if i := strings.IndexByte(item, ';'); i >= 0 { // RFC 9651 parameters are ignored
		item = item[:i]
	}
	k, v, ok := strings.Cut(item, "=")
	k, v = strings.ToLower(trimSpace(k)), strings.ToLower(trimSpace(v))
	if !ok {
		p.diag(n, Warning, "bad-signal", name+" \""+item+"\" is not key=value and is ignored")
		return false
	}
	purpose, known := signalKeys[k]
	if !known {
		if why, ok := knownUnenforced[k]; ok {
			p.diag(n, Info, "signal-not-enforced", why)
			return false
		}
		msg := name + " key \"" + k + "\" is unknown and ignored"
		if fix := strings.ReplaceAll(k, "_", "-"); fix != k {
			if _, ok := signalKeys[fix]; ok {
				msg += "; did you mean \"" + fix + "\"?"
			}
		}
		p.diag(n, Warning, "unknown-signal", msg)
		return false
	}
	var s Signal
	switch v {
	case "yes", "y":
		s = Yes
	case "no", "n":
		s = No
	default:
		want := "yes or no"
		if usage {
			want = "y or n"
		}
		p.diag(n, Warning, "bad-signal-value", name+" "+k+"=\""+v+"\" is not "+want+": the preference is unset")
		return false
	}
	if st.prefs[purpose] != Unset && st.prefs[purpose] != s {
		p.diag(n, Warning, "signal-conflict", name+" says both yes and no for "+purpose.String()+"; no applies")
		s = No
	}
	st.prefs[purpose], st.keys[purpose] = s, k
	if usage {
		if p.usageLine == 0 {
			p.usageLine, p.usageKeys = n, map[string]bool{}
		}
		p.usageKeys[k] = true
	}
	return true
}

// vocabulary says which aipref vocabulary the file's Content-Usage lines
// use (Lint: aipref-vocab): ai-use is -08's, train-ai and search are the
// keys of -07 and -08 alike, train-genai is -02's and -03's (read as
// train-ai).
func (p *parser) vocabulary() {
	if p.usageLine == 0 {
		return
	}
	var msg string
	switch k := p.usageKeys; {
	case k["ai-use"]:
		msg = "Content-Usage uses the vocabulary of draft-ietf-aipref-vocab-08 (ai-use, answer-time input to a generative AI model)"
	case k["train-genai"]:
		msg = "Content-Usage uses train-genai, of draft-ietf-aipref-vocab-02 and -03, read as train-ai (vocab-07 and -08 name it train-ai)"
	default:
		msg = "Content-Usage uses the keys of draft-ietf-aipref-vocab-07 and -08 (train-ai, search); -08 adds ai-use"
	}
	p.diag(p.usageLine, Info, "aipref-vocab", msg)
}

// Signal returns the preference that the group of a states for purpose p
// on target, and the robots.txt line that states it (0 when Unset). Of the
// lines that reach the group's agent (SEMANTICS.md §8a) and whose path (a
// Content-Usage path; none is every path) is a prefix of target's path,
// the one with the longest path decides; among equally long ones No wins.
// It does not allocate, and its work is linear in the group's signal
// lines and the path.
func (a Agent) Signal(p Purpose, target string) (Signal, int) {
	s, rule := a.signal(p, target)
	if rule == nil {
		return s, 0
	}
	return s, rule.Line
}

// SignalRule is Signal with the deciding line itself (nil when Unset),
// without allocating.
func (a Agent) SignalRule(p Purpose, target string) (Signal, *SignalRule) {
	s, rule := a.signal(p, target)
	return s, rule
}

// Text returns the words of the rule's preference for p, as written
// ("Content-Signal ai-train=no", "Content-Usage /a/ train-ai=n"); "" when
// it states none.
func (st *SignalRule) Text(p Purpose) string {
	if st == nil || int(p) >= numPurposes {
		return ""
	}
	return st.texts[p]
}

func (a Agent) signal(p Purpose, target string) (Signal, *SignalRule) {
	r := a.r
	if r == nil || a.group < 0 || p == PurposeNone || int(p) >= numPurposes || len(r.signals) == 0 {
		return Unset, nil
	}
	path := target
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	best, bestLen := Unset, -1
	var rule *SignalRule
	consider := func(m *mergedGroup) {
		for _, si := range m.signals {
			st := &r.signals[si]
			s := st.prefs[p]
			if s == Unset || !strings.HasPrefix(path, st.path) || st.exact && len(path) != len(st.path) {
				continue
			}
			switch n := len(st.path); {
			case n > bestLen, n == bestLen && s == No && best != No:
				best, rule, bestLen = s, st, n
			}
		}
	}
	if !a.multi {
		consider(&r.merged[a.group])
		return best, rule
	}
	r.tokens.scanTokens(a.ua, func(g int32, n int) {
		if n == a.n {
			consider(&r.merged[g])
		}
	})
	return best, rule
}

// Signals reports whether any Content-Signal or Content-Usage line stands
// in the file (a file without one costs Agent.Signal nothing).
func (r *Robots) Signals() bool { return len(r.signals) > 0 }
