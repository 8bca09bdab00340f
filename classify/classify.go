// Package classify decides who a client is from its User-Agent header: a
// bot (a known crawler token, a configured one, an HTTP tool where tools
// count as bots, a header that claims a registered crawler operator, one
// that says it is automated in the ways crawlers do, one that neither the
// crawler list nor the list of people's apps knows and that names no
// platform or browser engine, or what mileusna/useragent calls a bot), a
// browser (a header that mileusna/useragent names as one of the major
// browsers), or neither (a person's app, an HTTP tool where tools are not
// bots). A header whose first product is a known people's app (apps.txt:
// media players, feed and podcast readers, mail clients, text browsers,
// app frameworks' default clients) is a person's, whatever its shape. It
// keeps a bounded cache of its answers, read without locks. It knows
// nothing of sites or robots.txt beyond the group choice it memoises.
package classify

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mileusna/useragent"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/settings"
	"github.com/robotsguard/robotsguard/policy"
)

//go:generate go run ./internal/gencrawlers -in ../testdata/useragents -out crawlers.txt
//go:generate go run ./internal/genapps -in ../testdata/useragents -crawlers crawlers.txt -out apps.txt

// DefaultCacheSize is Config.CacheSize's default.
const DefaultCacheSize = 10000

// Values of Config.PersonAgents.
const (
	PersonAgentsOwn  = "own"
	PersonAgentsStar = "star"
)

// Config is the bots block of robots_guard: which clients are bots
// besides those the built-in crawler list and the User-Agent parser
// recognise.
type Config struct {
	// Tokens lists extra product tokens that mark a client as a bot when
	// they occur as a whole word in its User-Agent header
	// (case-insensitive), at least 2 characters each.
	Tokens []string `json:"tokens,omitempty"`

	// Apps lists product tokens of apps that people use (a site's own
	// mobile app, a desktop client) whose headers the generic markers or
	// the shape rule would judge a bot ("MyShopApp/3.1", with no
	// platform named): a header with one (whole word, case-insensitive,
	// at least 2 characters) is not judged a bot unless it also holds a
	// known crawler's token, a token of Tokens or a claim of a crawler
	// operator.
	Apps []string `json:"apps,omitempty"`

	// EmptyUserAgent binds clients that send no User-Agent header (or an
	// empty one) as bots, judged by the "*" group. Default false.
	EmptyUserAgent bool `json:"empty_user_agent,omitempty"`

	// HTTPTools binds HTTP libraries and command-line tools (curl, Wget,
	// python-requests, Go-http-client, Scrapy, okhttp, ...) as bots.
	// Default false: scripts and monitoring often use them legitimately.
	HTTPTools bool `json:"http_tools,omitempty"`

	// PersonAgents says how a verified agent that fetches for a person
	// (a link preview, a user-triggered fetch: ChatGPT-User,
	// Google-Read-Aloud, Slackbot-LinkExpanding, ...) is judged: "own"
	// (the default) by a group that names it only, so that "*" (which is
	// about crawls) does not refuse a person's own fetch; "star" by "*"
	// as every crawler. An unverified claim of one is always judged by
	// "*" too.
	PersonAgents string `json:"person_agents,omitempty"`

	// Undeclared says how a header that names a browser (Chrome,
	// Firefox, Safari, Edge) is judged when the request's other headers
	// contradict it (UndeclaredRules: no Accept-Language, and over https
	// no client hints or fetch metadata from the releases that send
	// them): "on" (the default) as an undeclared bot, by the "*" group;
	// "report" the same in dry run (its requests pass, what would have
	// stopped them is logged and counted); "off" as the browser.
	Undeclared string `json:"undeclared,omitempty"`

	// CacheSize bounds the LRU cache of User-Agent classifications (and
	// the lock-free copy of it that requests read, as many again at most).
	// Default 10000 headers.
	CacheSize int `json:"cache_size,omitempty"`
}

// WithDefaults returns c with its tokens lower-cased and its zero fields
// set to their defaults, or an error that names the invalid field, e.g.
// "robots_guard: bots: tokens[1]: ...".
func (c Config) WithDefaults() (Config, error) {
	var err error
	if c.Tokens, err = lowerTokens("tokens", c.Tokens); err != nil {
		return c, err
	}
	if c.Apps, err = lowerTokens("apps", c.Apps); err != nil {
		return c, err
	}
	if err := settings.Either(&c.PersonAgents, PersonAgentsOwn, PersonAgentsStar, "bots", "person_agents"); err != nil {
		return c, err
	}
	if err := settings.OrDefault(&c.CacheSize, DefaultCacheSize, "bots", "cache_size"); err != nil {
		return c, err
	}
	if err := checkUndeclared(&c.Undeclared); err != nil {
		return c, err
	}
	return c, nil
}

// lowerTokens returns the tokens of field, trimmed and lower-cased, or an
// error naming the first that has fewer than 2 characters.
func lowerTokens(field string, in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for i, b := range in {
		t := strings.ToLower(strings.TrimSpace(b))
		if len(t) < 2 {
			return nil, fmt.Errorf("robots_guard: bots: %s[%d]: token must have at least 2 characters, got %q", field, i, b)
		}
		out = append(out, t)
	}
	return out, nil
}

// crawlersTxt is the list of known crawler and HTTP tool tokens, derived
// from monperrus/crawler-user-agents and ai-robots-txt/ai.robots.txt (both
// MIT; attribution in the file's header).
//
//go:embed crawlers.txt
var crawlersTxt string

// appsTxt is the list of the software people run besides web browsers,
// derived from ua-parser/uap-core's regexes (Apache-2.0; attribution in
// the file's header), with the names it adds and leaves out.
//
//go:embed apps.txt
var appsTxt string

// builtinApps is appsTxt, parsed once.
var builtinApps = parseApps(appsTxt)

// maxCachedUA is the longest User-Agent header whose classification is
// cached; longer ones are classified every time, so that a flood of huge
// headers cannot fill the cache with megabytes.
const maxCachedUA = 1024

// Kinds of known tokens.
const (
	kindCrawler uint8 = 1 << iota
	kindTool
	kindApp // Config.Apps: a person's app
)

// tokenSet matches known tokens case-insensitively on word boundaries. In a
// header, words are runs of letters and digits, so '.', '_', '-' and '/'
// separate them ("www.deadlinkchecker.com" and "binlar_2.6.3" name their
// crawlers): a token that starts with a letter or digit must not follow one,
// and a token that ends with one must not precede one, except that tokens of
// longLen bytes or more may run on into a longer word ("GigablastOpenSource"),
// being too long to occur by chance. A token that starts with '^' matches
// only at the start of the header.
type tokenSet struct {
	byPrefix map[string][]knownToken // key: first 3 bytes of the token
	short    []knownToken            // tokens shorter than 3 bytes
	anchored []knownToken            // tokens that must start the header
}

// longLen is the length from which a token may end inside a word.
const longLen = 9

type knownToken struct {
	tok  string // lower-case, without '^'
	kind uint8
}

func newTokenSet() *tokenSet { return &tokenSet{byPrefix: make(map[string][]knownToken)} }

func (s *tokenSet) add(tok string, kind uint8) {
	tok = strings.ToLower(tok)
	switch {
	case strings.HasPrefix(tok, "^"):
		if len(tok) > 1 {
			s.anchored = append(s.anchored, knownToken{tok[1:], kind})
		}
	case len(tok) < 3:
		s.short = append(s.short, knownToken{tok, kind})
	default:
		s.byPrefix[tok[:3]] = append(s.byPrefix[tok[:3]], knownToken{tok, kind})
	}
}

// parseCrawlers adds the lines of crawlers.txt to s.
func (s *tokenSet) parseCrawlers(txt string) {
	for line := range strings.Lines(txt) {
		line = strings.TrimRight(line, "\r\n")
		kind, tok, ok := strings.Cut(line, "\t")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch kind {
		case "crawler":
			s.add(tok, kindCrawler)
		case "tool":
			s.add(tok, kindTool)
		}
	}
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// match returns the union of the kinds of the tokens found in the
// lower-cased header h.
func (s *tokenSet) match(h []byte) uint8 {
	var kinds uint8
	for _, t := range s.anchored {
		kinds |= t.at(h, 0, true)
	}
	for i := 0; i < len(h); i++ {
		startOK := i == 0 || !isAlnum(h[i-1])
		if !startOK && isAlnum(h[i]) {
			continue // inside a word: only tokens starting with punctuation fit
		}
		if i+3 <= len(h) {
			for _, t := range s.byPrefix[string(h[i:i+3])] {
				kinds |= t.at(h, i, startOK)
			}
		}
		for _, t := range s.short {
			kinds |= t.at(h, i, startOK)
		}
	}
	return kinds
}

// at returns t.kind when t occurs in h at i on word boundaries, else 0.
func (t knownToken) at(h []byte, i int, startOK bool) uint8 {
	n := len(t.tok)
	if len(h)-i < n || string(h[i:i+n]) != t.tok {
		return 0
	}
	if isAlnum(t.tok[0]) && !startOK {
		return 0
	}
	if n < longLen && isAlnum(t.tok[n-1]) && i+n < len(h) && isAlnum(h[i+n]) {
		return 0
	}
	return t.kind
}

// Classifier decides whether a User-Agent header belongs to a bot, for the
// parts that do not depend on a site's robots.txt: mileusna/useragent, the
// embedded crawler list, the configured extra tokens and the opt-in levels.
// Results are kept in a bounded LRU cache. It is safe for concurrent use.
type Classifier struct {
	tokens    *tokenSet
	apps      *appSet
	emptyBot  bool
	toolsBots bool
	noShape   bool // tests: the shape rule off, to measure what it alone catches
	// cache is the authority: at most ua_cache_size classifications,
	// least recently used out first.
	cache *lru.Cache[string, *Info]
	// hot is a copy of cache's entries taken now and then, never written
	// once stored: reads need no lock, and the runtime's string-keyed map
	// code they run is the code Caddy's own maps keep in the core's
	// caches (a sync.Map's was the guard's alone, about 20 instruction
	// cache misses a request). Headers not in it go to cache; after
	// enough of those, rebuilding makes a new copy in the background.
	hot      atomic.Pointer[hotSet]
	misses   atomic.Int64       // look-ups that missed hot since it was built
	building atomic.Bool        // a rebuild is under way
	verifier *identity.Verifier // nil when verification is off
	purposes *identity.Purposes // nil when content_signals is off
	// undeclared: the browser a header names is read (Info.Undeclared),
	// unless Config.Undeclared is off.
	undeclared bool
}

// Info is the classification of one header, shared by every request that
// sends it: read it, never write it. Agent memoises, for the robots.txt
// last seen with the header, the group choice (policy.Agent), so that
// neither a browser nor a repeated bot costs a scan of the header per
// request.
type Info struct {
	// Bot: the header is a bot's.
	Bot bool
	// Browser: mileusna/useragent names a browser (Chrome, Firefox,
	// Safari, Edge, Opera, ...) and no bot token is present. Only such
	// clients go on without waiting for a site's first robots.txt fetch;
	// unknown clients may be bots that the site's own groups name.
	Browser bool
	// Claims: the crawler operators the header names (verification on).
	// A header that claims one is a bot.
	Claims identity.Claims
	// Crawler: the registry's entry of the crawler the header names, for
	// Content-Signal (nil: none, or content_signals off).
	Crawler *identity.CrawlerPurpose
	// Class is Unfurler, Fetcher or Reader for an agent that fetches for
	// a person (a link preview, a user-triggered fetch, a feed or podcast
	// reader), "" for any other client. With Bot true it is an agent of
	// the registry, run by an operator: a verified claim of one is judged
	// only by a group that names it, unless Config.PersonAgents is
	// PersonAgentsStar. With Bot false it is an agent that no operator
	// vouches for (UnverifiablePersonAgent).
	Class string
	// PersonOperator names the operator of that agent (the verify
	// registry's name, e.g. "openai"): only a claim verified as that
	// operator's earns the agent's exemption from "*".
	PersonOperator string
	// named is the browser a Browser's header names, for Undeclared.
	named named
	spec  atomic.Pointer[specMemo]
}

// UnverifiablePersonAgent reports whether the header is that of an agent
// that fetches for a person and that no operator vouches for, so that
// there is nothing to verify: a feed or podcast reader fetching what the
// person subscribed to (Class Reader), a link preview that the person's
// own device fetches (Class Unfurler: WhatsApp, Signal, iMessage), Gmail's
// image proxy fetching a mail's images as the person opens it (Class
// Fetcher). Such a header is no bot's (Bot is false): like any client, it
// is judged by a group of robots.txt that names it, and "*" does not
// apply to it, unless Config.PersonAgents is PersonAgentsStar, which
// judges it by "*" as a crawler.
func (info *Info) UnverifiablePersonAgent() bool { return !info.Bot && info.Class != "" }

// specMemo holds the group choice weakly: a header cached for long does
// not keep a replaced robots.txt alive (up to ua_cache_size of them).
type specMemo struct {
	agent policy.WeakAgent
	// groupClaims: the operators whose tokens the chosen group's name
	// stands for, so that a header that earns an operator's group claims
	// that operator even when it names it only through the hyphen
	// fallback of the site's file.
	groupClaims identity.Claims
}

// promoteEvery is how often (in hits, on average) a cache hit refreshes the
// entry's LRU position. Other hits only read, which keeps the hot path
// free of shared writes and still keeps busy entries from being evicted.
const promoteEvery = 64

// New returns a Classifier for cfg (with its defaults applied: see
// Config.WithDefaults). v, when not nil, makes a header that claims a
// registered crawler operator a bot and records the claims; purposes,
// when not nil, records the crawler's documented purpose.
func New(cfg Config, v *identity.Verifier, purposes *identity.Purposes) *Classifier {
	s := newTokenSet()
	s.parseCrawlers(crawlersTxt)
	for _, b := range cfg.Tokens {
		s.add(b, kindCrawler)
	}
	for _, b := range cfg.Apps {
		s.add(b, kindApp)
	}
	cache, _ := lru.New[string, *Info](max(cfg.CacheSize, 1))
	return &Classifier{tokens: s, apps: builtinApps, emptyBot: cfg.EmptyUserAgent, toolsBots: cfg.HTTPTools, cache: cache, verifier: v, purposes: purposes,
		undeclared: cfg.Undeclared != UndeclaredOff}
}

// hotSet is a copy of the classifier's cache, read without locks.
type hotSet struct {
	m     map[string]*Info
	built time.Time
}

// Rebuilding hot: after minMisses look-ups that missed it and
// rebuildEvery since the last copy, or after a quarter of its size in
// misses, whichever comes first. A copy costs O(ua_cache_size) once, in
// a goroutine of its own; the quarter keeps a flood of new headers at
// about four entries copied per header, and the interval lets a header
// that is new but busy into the copy within a second.
const (
	minMisses    = 16
	rebuildEvery = time.Second
)

// IsBot reports whether ua is classified as a bot.
func (c *Classifier) IsBot(ua string) bool { return c.Lookup(ua).Bot }

// Lookup returns the classification of ua, cached, computing it on a
// miss. The work is bounded by the header's length; headers longer than
// 1 KiB are classified each time and never cached.
func (c *Classifier) Lookup(ua string) *Info {
	if len(ua) == 0 || len(ua) > maxCachedUA || ua[0] == ' ' || ua[len(ua)-1] == ' ' {
		return c.info(ua)
	}
	// Reads go to the copy: no lock and no write to memory shared across
	// requests on a hit. One hit in promoteEvery, chosen by a per-thread
	// random number, refreshes the entry's LRU position, so that a busy
	// header keeps its place in cache (and so in the next copy).
	if h := c.hot.Load(); h != nil {
		if v, ok := h.m[ua]; ok {
			if rand.Uint32()%promoteEvery == 0 {
				c.cache.Get(ua)
			}
			return v
		}
	}
	return c.lookupSlow(ua)
}

// lookupSlow is Lookup for a header not in the copy: from the LRU, or
// classified and added to it. It starts a rebuild of the copy when enough
// look-ups have missed it.
func (c *Classifier) lookupSlow(ua string) *Info {
	v, ok := c.cache.Get(ua)
	if !ok {
		v = c.info(ua)
		c.cache.Add(strings.Clone(ua), v)
	}
	if n := c.misses.Add(1); n >= minMisses && !c.building.Load() {
		h := c.hot.Load()
		if h == nil || n >= int64(len(h.m)/4) || time.Since(h.built) >= rebuildEvery {
			if c.building.CompareAndSwap(false, true) {
				go c.rebuild()
			}
		}
	}
	return v
}

// rebuild replaces the copy with one of the cache's entries now.
func (c *Classifier) rebuild() {
	defer c.building.Store(false)
	keys := c.cache.Keys()
	m := make(map[string]*Info, len(keys))
	for _, k := range keys {
		if v, ok := c.cache.Peek(k); ok {
			m[k] = v
		}
	}
	c.misses.Store(0)
	c.hot.Store(&hotSet{m: m, built: time.Now()})
}

// info classifies ua without the cache.
func (c *Classifier) info(ua string) *Info {
	bot, browser, person := c.compute(ua)
	v := &Info{Bot: bot, Browser: browser}
	if browser && c.undeclared {
		v.named = nameBrowser(ua)
	}
	if person != nil {
		v.Class, v.PersonOperator = person.class, person.operator
	}
	if c.purposes != nil {
		v.Crawler = c.purposes.Of(ua)
	}
	if c.verifier != nil && !v.UnverifiablePersonAgent() {
		// A person's own fetch claims no operator: iMessage's preview
		// names facebookexternalhit and Twitterbot after Safari's header,
		// and a Meta or X operator of the configuration would otherwise
		// judge the phone's address as theirs, and spoofed. (A group of
		// the site's robots.txt that names the token still claims the
		// operator: Info.Agent.)
		if v.Claims = c.verifier.Claims(ua); v.Claims != 0 {
			v.Bot, v.Browser = true, false
		}
	}
	return v
}

// Agent returns r.Agent(ua) and the operators its group's name stands for
// (with verifier v, nil when verification is off), memoised in info for
// the last r seen.
func (info *Info) Agent(r *policy.Robots, ua string, v *identity.Verifier) (policy.Agent, identity.Claims) {
	if m := info.spec.Load(); m != nil {
		if a, ok := m.agent.For(r); ok {
			return a, m.groupClaims
		}
	}
	a := r.Agent(ua)
	var gc identity.Claims
	if v != nil && a.Specific() {
		gc = v.Claims(a.Group())
	}
	info.spec.Store(&specMemo{agent: a.Weak(), groupClaims: gc})
	return a, gc
}

// compute classifies ua without the cache: is it a bot, is it a browser,
// and the agent that fetches for a person it names (nil for none).
func (c *Classifier) compute(ua string) (bot, browser bool, person *personAgent) {
	if strings.TrimSpace(ua) == "" {
		return c.emptyBot, false, nil
	}
	return c.classifyFull(ua)
}

// classify does the work of isBot without the cache.
func (c *Classifier) classify(ua string) bool {
	bot, _, _ := c.classifyFull(ua)
	return bot
}

// classifyFull says whether ua is a bot and whether it is a browser, with
// at most one parse by mileusna/useragent, and for a bot the agent that
// fetches for a person it names, read from the same lower-cased header.
func (c *Classifier) classifyFull(ua string) (bot, browser bool, person *personAgent) {
	var buf [256]byte
	h := buf[:0]
	if len(ua) > len(buf) {
		h = make([]byte, 0, len(ua))
	}
	for i := 0; i < len(ua); i++ {
		ch := ua[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		h = append(h, ch)
	}
	if a, before := deviceAgent(h); a != nil && c.tokens.match(before)&kindCrawler == 0 && !crawlerMarker(before) {
		// A person's own fetch that carries crawlers' tokens (iMessage's
		// link preview names facebookexternalhit and Twitterbot).
		return false, false, a
	}
	kinds := c.tokens.match(h)
	if kinds&kindCrawler != 0 || c.toolsBots && kinds&kindTool != 0 {
		return true, false, personClass(h)
	}
	if kinds&kindApp != 0 {
		return false, false, nil // the operator's word: a person's app
	}
	if a, rest := c.apps.first(h); a != nil {
		// A known people's app names itself first: its name and version
		// are not read for markers ("Feeder/2.6.30", "NetNewsWire (RSS
		// Reader; https://...)"), what follows is.
		if a.marked(rest) {
			return true, false, personClass(h)
		}
		return false, false, a.agent
	}
	// A crawler's own name wins over the HTTP library it runs on
	// ("python-requests/2.32; RecipeRadar/0.1; +https://...").
	if crawlerMarker(h) {
		return true, false, personClass(h)
	}
	if kinds&kindTool != 0 {
		// A known tool that the operator did not opt in: mileusna/useragent
		// must not override that choice. A tool is no browser either.
		return false, false, nil
	}
	// A header that neither list knows and that names no platform or
	// engine is no person's software ("ApacheBench/2.3", "Mozilla/5.0
	// (compatible; Trance/1.0)").
	p := useragent.Parse(ua)
	if p.Bot || !c.noShape && !personShaped(h) {
		return true, false, personClass(h)
	}
	switch p.Name {
	case useragent.Chrome, useragent.Firefox, useragent.Safari, useragent.MobileSafari, useragent.Edge,
		useragent.Opera, useragent.OperaMini, useragent.OperaTouch, useragent.Vivaldi,
		useragent.SamsungBrowser, useragent.InternetExplorer:
		return false, true, nil
	}
	return false, false, nil
}
