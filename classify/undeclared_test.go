package classify

import (
	"net/http"
	"testing"
)

// Headers of real browsers and of software that embeds or imitates one.
const (
	chrome137     = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	chrome88      = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/88.0.4324.150 Safari/537.36"
	chrome79      = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36"
	chromeAndroid = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Mobile Safari/537.36"
	edge137       = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36 Edg/137.0.0.0"
	firefox128    = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	firefox89     = "Mozilla/5.0 (X11; Linux x86_64; rv:89.0) Gecko/20100101 Firefox/89.0"
	safari18      = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15"
	webView       = "Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230805.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/137.0.0.0 Mobile Safari/537.36"
	samsung       = "Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36"
	paleMoon      = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:102.0) Gecko/20100101 Goanna/6.5 Firefox/102.0 PaleMoon/32.5.0"
	iosChrome     = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1"
)

// TestUndeclaredRules: every rule of UndeclaredRules, for the headers it
// applies to and those it must leave alone (WebViews, forks, versions
// before the header, plain http for the https rules, headers not read).
func TestUndeclaredRules(t *testing.T) {
	c := New(Config{}, nil, nil)
	full := Evidence{Read: true, HTTPS: true, AcceptLanguage: true, SecCHUA: true, SecFetchMode: true, Navigate: true}
	without := func(f func(*Evidence)) Evidence { e := full; f(&e); return e }
	noLang := without(func(e *Evidence) { e.AcceptLanguage = false })
	noCH := without(func(e *Evidence) { e.SecCHUA = false })
	noFetch := without(func(e *Evidence) { e.SecFetchMode = false })
	plainHTTP := Evidence{Read: true, AcceptLanguage: true} // browsers send neither over http
	// Chromium's requests over https that carry no client hints: a
	// fetch of a worker or a CORS preflight (fetch metadata, no
	// navigation), a WebSocket handshake (neither).
	worker := Evidence{Read: true, HTTPS: true, AcceptLanguage: true, SecFetchMode: true}
	webSocket := Evidence{Read: true, HTTPS: true, AcceptLanguage: true, WebSocket: true}
	for _, tc := range []struct {
		ua   string
		ev   Evidence
		want string
	}{
		{chrome137, full, ""},
		{chrome137, Evidence{}, ""}, // not read: a log without headers
		{chrome137, noLang, "no-accept-language"},
		{chrome137, noCH, "no-client-hints"},
		{chrome137, noFetch, "no-fetch-metadata"},
		{chrome137, Evidence{Read: true, HTTPS: true, AcceptLanguage: true, SecFetchMode: true, Navigate: true}, "no-client-hints"},
		{chrome137, plainHTTP, ""},
		{chrome137, worker, ""},
		{chrome137, webSocket, ""},
		{firefox128, webSocket, ""},
		{chrome137, Evidence{Read: true}, "no-accept-language"},
		{chromeAndroid, noCH, "no-client-hints"},
		{edge137, noCH, "no-client-hints"},
		{chrome88, noCH, ""}, // client hints came with Chrome 89
		{chrome88, noFetch, "no-fetch-metadata"},
		{chrome79, noFetch, ""}, // fetch metadata: Chrome 80
		{firefox128, noCH, ""},  // Firefox sends no client hints
		{firefox128, noFetch, "no-fetch-metadata"},
		{firefox89, noFetch, ""}, // fetch metadata: Firefox 90
		{firefox128, noLang, "no-accept-language"},
		{safari18, noCH, ""},
		{safari18, noFetch, ""},
		{safari18, noLang, "no-accept-language"},
		{webView, noCH, ""}, // an app's WebView: no rule
		{webView, noFetch, ""},
		{webView, noLang, ""}, // an app may fetch for its WebView itself
		{samsung, noCH, ""},   // a fork: no rule
		{samsung, noLang, ""},
		{paleMoon, noFetch, ""},
		{iosChrome, noLang, ""}, // names none of the four (CriOS)
		{"curl/8.5.0", Evidence{Read: true}, ""},
		{"FooBot/1.0 (+https://foo.example/bot)", Evidence{Read: true}, ""},
	} {
		got := ""
		if r := c.Lookup(tc.ua).Undeclared(tc.ev); r != nil {
			got = r.Name
		}
		if got != tc.want {
			t.Errorf("%s with %+v: rule %q, want %q", tc.ua, tc.ev, got, tc.want)
		}
	}
	// Off: no header is read as a browser's to contradict.
	off := New(Config{Undeclared: UndeclaredOff}, nil, nil)
	if r := off.Lookup(chrome137).Undeclared(Evidence{Read: true}); r != nil {
		t.Errorf("undeclared off: rule %s applied", r.Name)
	}
}

// TestEvidenceOf reads the headers as net/http keeps them (canonical
// keys), without allocating.
func TestEvidenceOf(t *testing.T) {
	h := http.Header{}
	h.Set("accept-language", "en")
	h.Set("sec-ch-ua", `"Chromium";v="137"`)
	h.Set("sec-fetch-mode", "navigate")
	h.Set("upgrade", "WebSocket")
	if ev := EvidenceOf(h); !ev.Read || !ev.AcceptLanguage || !ev.SecCHUA || !ev.SecFetchMode || !ev.Navigate || !ev.WebSocket {
		t.Errorf("EvidenceOf(%v) = %+v; want every header present", h, ev)
	}
	if n := testing.AllocsPerRun(100, func() { EvidenceOf(h) }); n != 0 {
		t.Errorf("EvidenceOf: %v allocations", n)
	}
	info := New(Config{}, nil, nil).Lookup(chrome137)
	ev := Evidence{Read: true, HTTPS: true, AcceptLanguage: true, SecCHUA: true, SecFetchMode: true}
	if n := testing.AllocsPerRun(100, func() { info.Undeclared(ev) }); n != 0 {
		t.Errorf("Undeclared: %v allocations", n)
	}
}

// TestUndeclaredSetting: bots.undeclared takes on, off and report, and
// names the field otherwise.
func TestUndeclaredSetting(t *testing.T) {
	for _, v := range []string{"", UndeclaredOn, UndeclaredOff, UndeclaredReport} {
		if _, err := (Config{Undeclared: v}).WithDefaults(); err != nil {
			t.Errorf("undeclared %q: %v", v, err)
		}
	}
	if _, err := (Config{Undeclared: "yes"}).WithDefaults(); err == nil || err.Error() != `robots_guard: bots: undeclared: must be "on", "off" or "report", got "yes"` {
		t.Errorf("undeclared yes: %v", err)
	}
}

// FuzzUndeclared: any header and any evidence: no panic; a request with
// every header a rule reads is never an undeclared bot's.
func FuzzUndeclared(f *testing.F) {
	for _, ua := range []string{chrome137, firefox128, safari18, webView, paleMoon, "Chrome/", "Firefox/99999999999999999999", "(((", "Mozilla/5.0 (a) Chrome/1 ) ) x"} {
		f.Add(ua, uint8(0))
	}
	c := New(Config{}, nil, nil)
	f.Fuzz(func(t *testing.T, ua string, bits uint8) {
		n := nameBrowser(ua)
		_ = plainHeader(ua)
		if n.major < 0 {
			t.Fatalf("%q: major %d", ua, n.major)
		}
		ev := Evidence{Read: bits&1 != 0, HTTPS: bits&2 != 0, AcceptLanguage: bits&4 != 0, SecCHUA: bits&8 != 0, SecFetchMode: bits&16 != 0,
			Navigate: bits&32 != 0, WebSocket: bits&64 != 0}
		info := c.Lookup(ua)
		r := info.Undeclared(ev)
		if ev.AcceptLanguage && ev.SecCHUA && ev.SecFetchMode && r != nil {
			t.Fatalf("%q with every header: rule %s", ua, r.Name)
		}
		if r != nil && !info.Browser {
			t.Fatalf("%q is no browser's header, yet rule %s", ua, r.Name)
		}
	})
}
