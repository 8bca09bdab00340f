package classify

import (
	"bytes"
	"slices"
	"strings"
)

// The list of people's apps (apps.txt): software people run besides web
// browsers, whose headers often name no platform or engine ("VLC/3.0.21
// LibVLC/3.0.21", "Dart/3.5 (dart:io)") or say what the generic markers
// read as a crawler's ("Feeder/2.6.30", "NetNewsWire (RSS Reader;
// https://netnewswire.com/)"). A header whose first product is one of
// them is a person's, whatever its shape: the shape rule applies only to
// headers that neither this list nor the crawler list knows. The name and
// version of that first product are not read for markers; the rest of the
// header is, so that a service named like an app still says what it is
// ("Grammarly/1.0 (http://www.grammarly.com)", Grammarly's fetcher, gives
// a contact; the desktop app writes "Grammarly/1.0 (Windows 10)").

// Agents of the list's classes: what Info.Class says of a reader's header
// and of a link preview fetched by the person's own device. Neither has an
// operator that could vouch for it (Info.UnverifiablePersonAgent).
var (
	readerAgent  = &personAgent{class: Reader, stance: "a feed or podcast reader: fetches what a person subscribed to"}
	previewAgent = &personAgent{class: Unfurler, stance: "a link preview fetched by the person's own device"}
	gmailAgent   = &personAgent{token: "GoogleImageProxy", class: Fetcher, stance: "Gmail's image proxy: fetches a mail's images as a person opens it", source: "https://support.google.com/mail/answer/145919"}
)

// appToken is one name of the list.
type appToken struct {
	tok    string       // lower-case
	agent  *personAgent // nil for a plain app
	reader bool
}

// appSet matches the list's names at the start of a lower-cased header.
type appSet struct {
	byPrefix map[string][]appToken // key: the first 3 bytes of the name
	short    []appToken            // names shorter than 3 bytes
}

// parseApps reads apps.txt: "<class><TAB><name>" lines, '#' comments.
func parseApps(txt string) *appSet {
	s := &appSet{byPrefix: make(map[string][]appToken)}
	for line := range strings.Lines(txt) {
		line = strings.TrimRight(line, "\r\n")
		class, name, ok := strings.Cut(line, "\t")
		if !ok || strings.HasPrefix(line, "#") || name == "" {
			continue
		}
		t := appToken{tok: strings.ToLower(name)}
		switch class {
		case "reader":
			t.agent, t.reader = readerAgent, true
		case "preview":
			t.agent = previewAgent
		case "app":
		default:
			continue
		}
		if len(t.tok) < 3 {
			s.short = append(s.short, t)
		} else {
			s.byPrefix[t.tok[:3]] = append(s.byPrefix[t.tok[:3]], t)
		}
	}
	for _, ts := range s.byPrefix {
		// The longest name first: "outlook-ios-android" before "outlook-ios".
		slices.SortStableFunc(ts, func(a, b appToken) int { return len(b.tok) - len(a.tok) })
	}
	return s
}

// first returns the name of the list that the lower-cased header h starts
// with (the product's whole name), and what follows that product's name
// and version; nil when h starts with none.
func (s *appSet) first(h []byte) (*appToken, []byte) {
	if len(h) >= 3 {
		ts := s.byPrefix[string(h[:3])]
		for i := range ts {
			if ts[i].starts(h) {
				return &ts[i], afterProduct(h, len(ts[i].tok))
			}
		}
	}
	for i := range s.short {
		if s.short[i].starts(h) {
			return &s.short[i], afterProduct(h, len(s.short[i].tok))
		}
	}
	return nil, nil
}

// starts reports whether h starts with t's name and the name ends there:
// a letter, digit, '-', '_' or '.' after it would continue the product's
// name ("electron-fetch" is no "electron").
func (t *appToken) starts(h []byte) bool {
	n := len(t.tok)
	return len(h) >= n && string(h[:n]) == t.tok && (n == len(h) || !nameByte(h[n]))
}

// nameByte reports whether c continues a product's name.
func nameByte(c byte) bool { return isAlnum(c) || c == '-' || c == '_' || c == '.' }

// afterProduct returns what follows the product whose name ends at n in
// h: a version after '/' is skipped up to the first space, comma,
// semicolon or parenthesis.
func afterProduct(h []byte, n int) []byte {
	if n < len(h) && h[n] == '/' {
		n++
		for n < len(h) && h[n] != ' ' && h[n] != '(' && h[n] != ',' && h[n] != ';' && h[n] != ')' {
			n++
		}
	}
	return h[n:]
}

// marked reports whether rest, the header after the app's name and
// version, says it is an automated client's. A reader's header names the
// reader's home page and what it is ("RSS Reader", "syndication"), as
// publishers of feeds want to know: for readers a contact, the stems and
// "feed" words are let be, and only payloads, a name inside an engine's
// comment, the words of crawlers ("...bot", "spider", "crawl", ...) and
// those of a reader run as a service count: a count of subscribers,
// "fetcher" (Feedly's "(+http://www.feedly.com/fetcher.html; 5
// subscribers)"). A "+http" contact does not: desktop readers write one
// too (gPodder's "(+http://gpodder.org/)").
func (t *appToken) marked(rest []byte) bool {
	if !t.reader {
		return crawlerMarker(rest)
	}
	return payloadMarker(rest) || commentMarker(rest) || bytes.Contains(rest, []byte("crawl")) || wordMarker(rest, true) ||
		bytes.Contains(rest, []byte("subscriber")) || bytes.Contains(rest, []byte("fetcher"))
}

// iMessage's link preview: a Safari header that the sender's device sends
// with the tokens of the link previews sites know best.
const iMessageSuffix = " facebookexternalhit/1.1 facebot twitterbot/1.0"

// Gmail's image proxy adds this to an old Firefox header.
const gmailSuffix = " (via ggpht.com googleimageproxy)"

// deviceAgent returns the agent that fetches for a person of a
// lower-cased header that crawlers' tokens or markers would otherwise
// judge a bot's, and the header before the agent's own part (which the
// caller reads for crawlers): iMessage's link preview ("Mozilla/5.0
// (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like
// Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot
// Twitterbot/1.0"), made on the sender's device, and Gmail's image proxy
// ("Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via
// ggpht.com GoogleImageProxy)"); nil for any other header.
func deviceAgent(h []byte) (*personAgent, []byte) {
	switch {
	case bytes.HasSuffix(h, []byte(iMessageSuffix)) && bytes.HasPrefix(h, []byte("mozilla/5.0 (")):
		return previewAgent, h[:len(h)-len(iMessageSuffix)]
	case bytes.HasSuffix(h, []byte(gmailSuffix)) && bytes.HasPrefix(h, []byte("mozilla/5.0 (")):
		return gmailAgent, h[:len(h)-len(gmailSuffix)]
	}
	return nil, nil
}
