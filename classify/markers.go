package classify

import "bytes"

// The generic markers: how a header says it belongs to an automated
// client, whatever the client's name, and what shape a person's software
// gives every header it sends. Each rule was kept for what it catches on
// labelled lists that nobody on the project wrote and for catching no
// browser or app header of them (TestThirdPartyLists holds both; the
// figures are in docs/nethttp.md, "Who is a bot"), so that crawlers missing from
// the token list are caught by what all crawlers do rather than by one
// token per miss.

// crawlerMarker reports whether the lower-cased header h says it is an
// automated client: it gives a contact (a URL, an e-mail address,
// "mailto:"), carries an injection payload ("${jndi:", "<?="), adds its own
// name inside a browser engine's comment ("(KHTML, like Gecko;
// Google-Assess)") or in a "(compatible; ...)" comment after the browser
// part, names a Google product with a hyphen ("Google-Lens",
// "DuplexWeb-Google"), or has a word that only automated clients use:
// one that ends in "bot", "check", "agent" (longer than 5 letters),
// "spider" or "scraper", starts with "feed" or "headless", or holds a stem
// of jobStems ("crawl", "monitor", "checker", ...), or one of toolWords;
// or it holds a "|" (no browser or app header does: log lines and
// scripts do).
//
// The platform part of an Android header names the phone ("XBot Junior",
// "Spider 8", "Discovery DG500"): words are read after it.
func crawlerMarker(h []byte) bool {
	if contactMarker(h) || payloadMarker(h) || commentMarker(h) ||
		bytes.Contains(h, []byte("google-")) || bytes.Contains(h, []byte("-google")) ||
		bytes.Contains(h, []byte(", mozilla/")) || bytes.Contains(h, []byte("(via ")) {
		return true
	}
	rest := h[androidPlatformEnd(h):]
	for _, s := range jobStems {
		if bytes.Contains(rest, []byte(s)) {
			return true
		}
	}
	return wordMarker(rest, false)
}

// androidPlatformEnd returns where the platform comment of an Android
// browser's header ends, 0 for other headers.
func androidPlatformEnd(h []byte) int {
	if !bytes.HasPrefix(h, []byte("mozilla/5.0 (linux;")) {
		return 0
	}
	depth := 0
	for i := len("mozilla/5.0 "); i < len(h); i++ {
		switch h[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(h)
}

// contactMarker: a URL ("+https://example.com/bot", "github.com/x (https://...)"),
// a crawler's "+" before a host name ("(+example.com/bot.html)"), "www.",
// "mailto:", "[at]" or an e-mail address (a '@' before a domain name:
// "ops@example.net", never "android@111.0" or "en_IR@calendar").
func contactMarker(h []byte) bool {
	if bytes.Contains(h, []byte("://")) || bytes.Contains(h, []byte("www.")) ||
		bytes.Contains(h, []byte("mailto:")) || bytes.Contains(h, []byte("[at]")) || plusHost(h) {
		return true
	}
	for i := bytes.IndexByte(h, '@'); i >= 0; {
		d := h[i+1:]
		j, letter := 0, false
		for j < len(d) && (isAlnum(d[j]) || d[j] == '-') {
			letter = letter || d[j] >= 'a'
			j++
		}
		if i > 0 && isAlnum(h[i-1]) && letter && j+1 < len(d) && d[j] == '.' && 'a' <= d[j+1] && d[j+1] <= 'z' {
			return true
		}
		next := bytes.IndexByte(d, '@')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// plusHost reports a '+' that starts a word and is followed by a host name
// ("+example.com/bot"): the crawlers' way of giving their page. A phone's
// name ("Tech Pad +Q545") has no dot after it.
func plusHost(h []byte) bool {
	for i := bytes.IndexByte(h, '+'); i >= 0; {
		if i == 0 || h[i-1] == ' ' || h[i-1] == '(' || h[i-1] == ';' {
			j := i + 1
			for j < len(h) && (isAlnum(h[j]) || h[j] == '-') {
				j++
			}
			if j > i+1 && j+1 < len(h) && h[j] == '.' && 'a' <= h[j+1] && h[j+1] <= 'z' {
				return true
			}
		}
		next := bytes.IndexByte(h[i+1:], '+')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// payloadMarker: what scanners send to find injectable servers.
func payloadMarker(h []byte) bool {
	for _, p := range []string{"${", "<?", "{{", "<script", "' or ", "') or ", "select "} {
		if bytes.Contains(h, []byte(p)) {
			return true
		}
	}
	return false
}

// commentMarker: a client's own name where browsers put none: inside the
// engine's comment ("(KHTML, like Gecko; compatible; pageburst)", "(KHTML,
// like Gecko GomezAgent 3.0)"; browsers write "(KHTML, like Gecko)" or, in
// old Safari builds, "(KHTML, like Gecko, Safari/419.3)"), or a
// "(compatible; ...)" comment after the browser's own platform comment
// ("Mobile Safari/537.36 (compatible; Google-AMPHTML)"; an old Windows
// Mobile browser repeats "(compatible; MSIE ...)", which is let be).
func commentMarker(h []byte) bool {
	if i := bytes.Index(h, []byte("(khtml, like gecko")); i >= 0 {
		rest := h[i+len("(khtml, like gecko"):]
		if bytes.HasPrefix(rest, []byte(";")) || bytes.HasPrefix(rest, []byte(" ")) ||
			bytes.HasPrefix(rest, []byte(", ")) && !bytes.HasPrefix(rest, []byte(", safari")) {
			return true
		}
	}
	if first := bytes.IndexByte(h, ')'); first > 0 {
		if i := bytes.Index(h[first:], []byte("(compatible")); i >= 0 {
			rest := bytes.TrimLeft(h[first+i+len("(compatible"):], "; ")
			return !bytes.HasPrefix(rest, []byte("msie"))
		}
	}
	return false
}

// jobStems are parts of words that automated clients use to say what
// they do ("YottaaMonitor", "ProxyChecker", "DynatraceSynthetic",
// "Google-HotelAdsVerifier", "CopyvioDetector") and that no browser or
// app header of the labelled lists holds outside an Android phone's
// name. Stems that people's headers do hold were left out: "search"
// (1,043 people's headers: search apps), "download" (10:
// AndroidDownloadManager, QQDownload), "engine" (72: QtWebEngine),
// "discover" (25: phones), "proxy" (3: Opera Mini and Google's WAP
// proxy for feature phones), "fetch" (Firefox for Android's MozacFetch),
// "client", "link", "tool", "test".
var jobStems = []string{
	"crawl", "monitor", "checker", "probe", "audit", "survey", "research", "measure", "verif",
	"valid", "lookup", "extract", "detect", "collect", "inspect", "analy", "classif", "transcod",
	"preview", "synthetic", "diagnos", "health", "finder", "report", "recon", "observ", "uptime",
	"bench", "loader", "sentinel", "devtools", "snapshot", "rss", "advisor",
	// screenshot, rendering and translation services (issue 45):
	// "WordPress.com mShots", "wkhtmltoimage", "webkit2png", "url2png",
	// "Yandex.Translate"; no people's header of the labelled lists holds
	// one.
	"screenshot", "thumbnail", "translat", "2png", "2pdf", "2image", "toimage", "topdf", "mshots",
}

// wordMarker reads the words (runs of letters and digits) of h: one that
// ends in "bot" (but for the phone brands of notBotWord), "check",
// "agent" (longer than 5 letters), "spider" or "scraper", one that starts
// with "feed" (unless feedOK: a feed reader's own header) or "headless",
// or one of toolWords; and reports a "|" between them.
func wordMarker(h []byte, feedOK bool) bool {
	for i := 0; i < len(h); {
		if !isAlnum(h[i]) {
			if h[i] == '|' {
				return true
			}
			i++
			continue
		}
		j := i
		for j < len(h) && isAlnum(h[j]) {
			j++
		}
		w := h[i:j]
		i = j
		switch {
		case len(w) > 3 && bytes.HasSuffix(w, []byte("bot")) && !notBotWord(w), bytes.HasSuffix(w, []byte("check")),
			len(w) > 5 && bytes.HasSuffix(w, []byte("agent")),
			bytes.HasSuffix(w, []byte("spider")), bytes.HasSuffix(w, []byte("scraper")),
			!feedOK && bytes.HasPrefix(w, []byte("feed")), bytes.HasPrefix(w, []byte("headless")),
			toolWords[string(w)]:
			return true
		}
	}
	return false
}

// toolWords are words that only automated clients put in their headers:
// feed readers, browser automation, scraping.
var toolWords = map[string]bool{
	"fetcher": true, "phantomjs": true, "selenium": true, "puppeteer": true,
	"playwright": true, "cypress": true, "scrape": true, "scraping": true, "scanner": true,
}

// notBotWord reports the words ending in "bot" that browser and app
// headers carry: phone brands and models.
func notBotWord(w []byte) bool {
	switch string(w) {
	case "cubot", "robot":
		return true
	}
	return false
}

// personShaped reports whether the lower-cased header h has the shape
// every browser and app header of the labelled lists has: it names a
// platform (an operating system, a device family, a processor
// architecture, a screen size) or a browser engine. A header with
// neither ("Go-http-client/1.1" aside, which is a tool: "ApacheBench/2.3",
// "Mozilla/5.0 (compatible; Trance/1.0)", "Hello, world", "123") is a
// bot's.
func personShaped(h []byte) bool {
	for i := 0; i < len(h); i++ {
		if i > 0 && isAlnum(h[i-1]) && isAlnum(h[i]) {
			if h[i] == 'x' && screenSize(h, i) {
				return true
			}
			continue // inside a word: shape words start one
		}
		for _, w := range shapeWords[h[i]] {
			if bytes.HasPrefix(h[i:], []byte(w)) {
				return true
			}
		}
	}
	// "UP.Browser/6.2", "nook browser/1.0", "pr(UCBrowser)"; never "Browsershots".
	for i := bytes.Index(h, []byte("browser")); i >= 0; {
		if end := i + len("browser"); end == len(h) || h[end] < 'a' || h[end] > 'z' {
			return true
		}
		next := bytes.Index(h[i+1:], []byte("browser"))
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// screenSize reports whether the 'x' at h[i] joins two numbers of three
// or four digits ("320x240", "1080x2400").
func screenSize(h []byte, i int) bool {
	digits := func(from, step int) int {
		n := 0
		for k := from; k >= 0 && k < len(h) && '0' <= h[k] && h[k] <= '9'; k += step {
			n++
		}
		return n
	}
	l, r := digits(i-1, -1), digits(i+1, 1)
	return l >= 3 && l <= 4 && r >= 3 && r <= 4
}

// shapeWords are the words that start a platform or engine name, keyed
// by their first byte.
var shapeWords = func() map[byte][]string {
	m := map[byte][]string{}
	for _, w := range []string{
		// operating systems and their parts
		"windows", "win1", "win2", "win3", "win6", "win7", "win8", "win9", "winnt", "wow64", "cygwin", "macintosh",
		"mac os", "mac_", "macos", "macbook", "osx", "os=mac", "darwin", "cfnetwork", "iphone", "ipad", "ipod",
		"iph", "ios", "android", "dalvik", "linux", "x11", "ubuntu", "cros", "symbian", "series", "s60", "midp",
		"cldc", "j2me", "blackberry", "bb10", "playbook", "kaios", "tizen", "webos", "web0s", "bada", "brew",
		"playstation", "xbox", "nintendo", "roku", "hbbtv", "smarttv", "smart-tv", "netcast", "freebsd",
		"openbsd", "netbsd", "sunos", "haiku", "beos", "amiga", "morphos", "qnx", "maemo", "meego",
		"sailfish", "palm", "os/2", "openvms", "syllable", "inferno", "openharmony", "harmonyos", "crkey",
		"wtos", "fban", "fbav", "ucweb", "mobile", "phone", "wap/", "obigo",
		// desktop apps that fetch for the person at the screen: Office's
		// mail and documents, Firefox for Android's own fetches
		"ms-office", "msoffice", "microsoft office", "microsoft outlook", "mozac",
		// processor architectures
		"x64", "x86", "arm64", "armv", "i686", "amd64", "aarch64",
		// engines and browsers
		"applewebkit", "webkit", "gecko", "khtml", "presto", "trident", "msie", "opera", "lynx", "links",
		"elinks", "w3m", "mosaic", "konqueror", "netscape", "up.", "mmp/",
		// handset makers that write the model first ("NOKIA-RH-17/V ...", "MOT-V177/0.1", "QC-2235/1.0")
		"nokia", "samsung", "sam-", "mot-", "qc-", "qc6", "sonyericsson", "lg-", "htc", "zte", "alcatel", "huawei",
	} {
		m[w[0]] = append(m[w[0]], w)
	}
	return m
}()
