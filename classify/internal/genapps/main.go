// Command genapps derives the embedded list of the software people run
// that is not a web browser's engine at work for a site (classify/apps.txt):
// media players, feed and podcast readers, mail clients, text browsers,
// app frameworks' default clients. A header whose first product is one of
// them is a person's, whatever else its shape says (see classify.go).
//
// The source is ua-parser/uap-core's regexes.yaml (Apache-2.0), copied into
// testdata/useragents/uap-core-regexes.yaml. uap-core is a maintained
// parser whose user-agent parsers name the clients they recognise; those it
// calls bots it files as the family or device "Spider". This program takes
// the names that uap-core's parsers capture as plain literals (the first
// group of a parser's pattern, when that group is an alternation of
// literals), and keeps those that uap-core itself does not call a bot: the
// header "<name>/1.0" is run through uap-core's own user-agent and device
// parsers, in their order, as uap-core's parsers do. Of the rest it drops
// the names the crawler list (crawlers.txt) knows, the crawler list
// winning, and the names of notApps, each with its reason; it adds the
// apps of extraApps, each with its reason and where the header's form
// comes from. Every choice is written into the output's header, so that
// nothing is lost or added silently.
//
// matomo device-detector's client lists (feed readers, media players, PIM)
// are sorted better but are LGPL-3.0: a generated file derived from them
// would put LGPL data into every binary. They are used as test data only
// (testdata/useragents/thirdparty), which also keeps the measurement
// independent of the source.
//
// Usage (see the go:generate line in classify/classify.go):
//
//	go run ./internal/genapps -in ../testdata/useragents -crawlers crawlers.txt -out apps.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/robotsguard/robotsguard/classify/internal/gen"
)

// Classes of the list.
const (
	classApp     = "app"     // a person's app or non-graphical browser
	classReader  = "reader"  // a feed or podcast reader: fetches what a person subscribed to
	classPreview = "preview" // a link preview that the person's own device fetches
)

// entry is a hand-made entry of the list: its class, why, and where the
// header's form is documented.
type entry struct {
	class, reason, source string
}

// readers are the names, of uap-core's or added, that are feed or podcast
// readers: they fetch the feeds and episodes a person subscribed to
// (classify.Reader).
var readers = map[string]string{
	"antenna":      "AntennaPod's iOS builds (CFNetwork)",
	"antennapod":   "AntennaPod, an Android podcast app",
	"beyondpod":    "BeyondPod, an Android podcast app",
	"bpod":         "bPod, a podcast app",
	"doggcatcher":  "DoggCatcher, an Android podcast app",
	"downcast":     "Downcast, an iOS podcast app",
	"goldenpod":    "GoldenPod, a podcast app",
	"gpodder":      "gPodder, a desktop podcast client",
	"ipodder":      "iPodder (Juice), a desktop podcast client",
	"jpodder":      "jPodder, a desktop podcast client",
	"juice":        "Juice, a desktop podcast client",
	"liferea":      "Liferea, a desktop feed reader",
	"luminary":     "Luminary, a podcast app",
	"netnewswire":  "NetNewsWire, a feed reader for macOS and iOS",
	"peapod":       "Peapod, a podcast client",
	"philpodder":   "philpodder, a podcast client",
	"player fm":    "Player FM, a podcast app",
	"pocket casts": "Pocket Casts, a podcast app",
	"podcasts":     "Apple Podcasts (\"Podcasts/1580.1 CFNetwork/...\")",
	"podcruncher":  "PodCruncher, an iOS podcast app",
	"podkicker":    "Podkicker, an Android podcast app",
	"podracer":     "podracer, a podcast client",
	"rssradio":     "RSSRadio, a podcast app",
	"rss_radio":    "RSSRadio, a podcast app",
	"stitcher":     "Stitcher, a podcast app",
	"toppodcasts":  "TopPodcasts, an iOS podcast app",
	"vienna":       "Vienna, a feed reader for macOS",
	"akregator":    "Akregator, KDE's feed reader",
	"feeder":       "Feeder, an Android feed reader",
	"readyou":      "Read You, an Android feed reader",
	"newsboat":     "Newsboat, a terminal feed reader",
	"newsbeuter":   "Newsbeuter, Newsboat's predecessor",
	"quiterss":     "QuiteRSS, a desktop feed reader",
	"rssowl":       "RSSOwl, a desktop feed reader",
	"rssbandit":    "RSS Bandit, a desktop feed reader",
	"castero":      "castero, a terminal podcast client",
	"kasts":        "Kasts, KDE's podcast app",
}

// extraApps are apps that uap-core's parsers do not name as a literal (or
// call bots), with their class, reason and the place where their header's
// form is set or documented (issue 45's headers among them).
var extraApps = map[string]entry{
	"feeder":              {classReader, "Feeder, an Android feed reader (\"Feeder/2.6.30 (Android)\")", "https://github.com/spacecowboy/Feeder"},
	"readyou":             {classReader, "Read You, an Android feed reader (\"ReadYou/0.10.1(25)\")", "https://github.com/Ashinch/ReadYou/blob/main/app/build.gradle.kts"},
	"akregator":           {classReader, "Akregator, KDE's feed reader", "https://apps.kde.org/akregator/"},
	"newsboat":            {classReader, "Newsboat, a terminal feed reader", "https://github.com/newsboat/newsboat"},
	"newsbeuter":          {classReader, "Newsbeuter, Newsboat's predecessor", "https://github.com/akrennmair/newsbeuter"},
	"quiterss":            {classReader, "QuiteRSS, a desktop feed reader", "https://github.com/QuiteRSS/quiterss"},
	"rssowl":              {classReader, "RSSOwl, a desktop feed reader", "https://github.com/rssowl/RSSOwl"},
	"rssbandit":           {classReader, "RSS Bandit, a desktop feed reader", "https://github.com/RssBandit/RssBandit"},
	"castero":             {classReader, "castero, a terminal podcast client", "https://github.com/xgi/castero"},
	"kasts":               {classReader, "Kasts, KDE's podcast app", "https://apps.kde.org/kasts/"},
	"libmpv":              {classApp, "mpv's default header (its user-agent option's default)", "https://mpv.io/manual/stable/#options-user-agent"},
	"mpv":                 {classApp, "mpv, a media player", "https://github.com/mpv-player/mpv"},
	"libvlc":              {classApp, "VLC's library, in players built on it (\"LibVLC/3.0.21\")", "https://www.videolan.org/vlc/libvlc.html"},
	"winampmpeg":          {classApp, "Winamp's stream client (\"WinampMPEG/5.9, Ultravox/2.1\")", "https://www.winamp.com/"},
	"foobar2000":          {classApp, "foobar2000, a media player (uap-core's pattern \"foobar\\S{1,10}/\" is no literal)", "https://www.foobar2000.org/"},
	"mplayer":             {classApp, "MPlayer, a media player", "https://mplayerhq.hu/"},
	"audacious":           {classApp, "Audacious, a media player", "https://audacious-media-player.org/"},
	"music player daemon": {classApp, "Music Player Daemon, a media player", "https://www.musicpd.org/"},
	"musicbee":            {classApp, "MusicBee, a media player", "https://getmusicbee.com/"},
	"kodi":                {classApp, "Kodi, a media centre", "https://github.com/xbmc/xbmc"},
	"xbmc":                {classApp, "XBMC, Kodi's former name", "https://github.com/xbmc/xbmc"},
	"plexmediaserver":     {classApp, "Plex Media Server, a person's own media server fetching artwork and metadata for its owner (\"PlexMediaServer/1.41.2.9200-c6bbc1b53\")", "https://www.plex.tv/media-server-downloads/"},
	"dart":                {classApp, "Dart's HTTP client, the default header of every Flutter app (\"Dart/3.5 (dart:io)\")", "https://api.dart.dev/stable/dart-io/HttpClient/userAgent.html"},
	"grammarly":           {classApp, "the Grammarly desktop app (\"Grammarly/1.0 (Windows 10)\"); Grammarly's own fetcher gives its URL and stays a bot", "https://www.grammarly.com/desktop"},
	"applenews":           {classApp, "Apple News (\"AppleNews/1037.1 Version/3.1\")", "https://www.apple.com/apple-news/"},
	"whatsapp":            {classPreview, "WhatsApp's link previews, made by the sender's phone (\"WhatsApp/2.24.22.79 A\"; Signal sends \"WhatsApp/2\"); uap-core files WhatsApp as a spider", "https://faq.whatsapp.com/"},
	"w3m":                 {classApp, "w3m, a text browser", "https://github.com/tats/w3m"},
	"emclient":            {classApp, "eM Client, a mail client", "https://www.emclient.com/"},
}

// notApps are names that uap-core's parsers capture and that are no app a
// person runs, or too common a word to stand for one: each is dropped with
// its reason.
var notApps = map[string]string{
	// HTTP libraries and command-line tools the crawler list does not name:
	// with http_tools they are bots, and they are never a person's app.
	"akka-http": "an HTTP library", "apache-cxf": "an HTTP library", "aria2": "a download tool",
	"fme":  "Safe Software's FME, an ETL and automation tool",
	"axel": "a download tool", "fetch libfetch": "an HTTP library", "go-cf-client": "an HTTP library",
	"go-cli": "a command-line tool", "go-resty": "an HTTP library", "got": "an HTTP library",
	"grab": "a download library", "http.rb": "an HTTP library", "httrack": "a site copier",
	"java-eurekaclient": "a service client", "java-eurekaclient-replication": "a service client",
	"jersey": "an HTTP library", "lftp": "a download tool", "libcurl-agent": "an HTTP library",
	"lua-resty-http": "an HTTP library", "minio-go": "an HTTP library", "node-oauth": "an HTTP library",
	"openbsd ftp": "a download tool", "pyamf": "an HTTP library", "rclone": "a sync tool",
	"reactornetty": "an HTTP library", "rusoto": "an HTTP library", "s3gof3r": "an HTTP library",
	"ureq": "an HTTP library", "urlgrabber": "a download library", "vert.x-webclient": "an HTTP library",
	"wget2": "a download tool", "insomnia": "an API testing tool", "jupdate": "an updater",
	"debian apt-http": "a package manager", "ubuntu apt-http": "a package manager",
	"windows-update-agent": "an updater", "windowspowershell": "a shell", "microsoft-cryptoapi": "certificate checks",
	"sophosagent": "an endpoint agent", "sophosupdatemanager": "an updater", "ping-service": "a service check",
	"sap cpi": "an integration server", "sap netweaver application server": "an application server",
	"sap xsuaa": "a service", "sap-leonardo-iot-sdk-nodejs": "a service", "cloudcockpitbackend": "a service",
	"r2client": "a service client", "geoevent server": "a server", "jaeger_security": "a scanner",
	// Monitoring, testing and automation: services, not people.
	"newrelicpinger": "New Relic's uptime checks", "prtg network monitor": "a monitoring service",
	"rackspace monitoring": "a monitoring service", "ruxitsynthetic": "Dynatrace's synthetic monitoring",
	"site24x7": "a monitoring service", "openvas": "a vulnerability scanner", "ptst": "WebPageTest's agent",
	"headlesschrome": "a headless browser: automation", "phantomjs": "a headless browser: automation",
	"phantom": "PhantomJS's name as uap-core captures it", "camoufox": "an anti-detection browser for scraping",
	"surveyon": "a survey crawler",
	// Words too common to stand for one app, platforms and engines.
	"agency": "a common word", "collector": "a common word", "config": "a common word", "custom": "a common word",
	"explorer": "a common word", "navigator": "a common word", "pre": "a common word", "radio": "a common word",
	"trailer": "a common word", "unique": "a common word", "version": "a common word", "viewer": "a common word",
	"watch": "a common word", "web": "a common word", "replay": "a common word", "talon": "a common word",
	"symphony": "a common word", "ghost": "a common word", "odin": "a common word", "colt": "a common word",
	"iris": "a common word", "iron": "a common word", "orca": "a common word", "bolt": "a common word",
	"dragon": "a common word", "fancy": "a common word", "herring": "a common word", "quark": "a common word",
	"roadrunner": "a common word", "sparrow": "a common word", "sunrise": "a common word", "thano": "a common word",
	"vox": "a common word", "zdm": "an abbreviation", "hpw": "an abbreviation", "omi": "an abbreviation",
	"phx": "an abbreviation", "abb": "an abbreviation", "adg": "an abbreviation", "ahc": "an abbreviation",
	"obs": "an abbreviation", "opt": "an abbreviation", "opx": "an abbreviation", "cita": "an abbreviation",
	"android": "a platform: the shape rule reads it", "iphone": "a platform: the shape rule reads it",
	"ipad": "a platform: the shape rule reads it", "ipod": "a platform: the shape rule reads it",
	"ipod touch": "a platform: the shape rule reads it", "nokia": "a platform: the shape rule reads it",
	"htc": "a platform: the shape rule reads it", "kindle": "a platform", "roku": "a platform",
	"playbook": "a platform", "series60": "a platform", "hbbtv": "a TV standard", "nintendo 3ds": "a platform",
	"playstation portable": "a platform", "playstation vita": "a platform", "wetab": "a platform",
	"applewebkit": "an engine: the shape rule reads it", "trident": "an engine: the shape rule reads it",
	"cfnetwork": "Apple's HTTP stack: the shape rule reads it", "msie": "a browser: the shape rule reads it",
	"lavf": "FFmpeg's HTTP client: a library", "cf": "too short",
	// The major browsers: their headers are Mozilla/5.0 headers, read by
	// the browser rule; a header that is their bare name ("Chrome",
	// "firefox") is a script's, and both bot lists say so.
	"chrome": "a major browser", "chromium": "a major browser", "firefox": "a major browser",
	"safari": "a major browser", "opera": "a major browser", "vivaldi": "a major browser",
	"samsungbrowser": "a major browser",
	// Services named like an app.
	"pinterest": "Pinterest's in-app browser names it inside a browser's header; a header that starts with it is Pinterest's crawler's",
	"spotify":   "Spotify's podcast ingestion fetches feeds as \"Spotify/1.0\" (both bot lists); the Spotify app's header is a browser's",
}

func main() {
	crawlers := flag.String("crawlers", "crawlers.txt", "the crawler list, whose tokens win")
	gen.Main("uap-core-regexes.yaml", "apps.txt", func(w io.Writer, in string) error {
		return Generate(w, filepath.Join(in, "uap-core-regexes.yaml"), *crawlers)
	})
}

// parser is one parser of uap-core's regexes.yaml.
type parser struct {
	src, family, device, flag string
	re                        *regexp.Regexp
}

// readUAP reads the user-agent and device parsers of regexes.yaml. The
// file's structure is plain: "  - regex: '...'" starts a parser, and
// "    key: '...'" lines give its fields.
func readUAP(path string) (ua, dev []*parser, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	section := ""
	var cur *parser
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			section, cur = strings.TrimSuffix(line, ":"), nil
			continue
		}
		t := strings.TrimSpace(line)
		if re, ok := strings.CutPrefix(t, "- regex:"); ok {
			cur = &parser{src: unquote(re)}
			switch section {
			case "user_agent_parsers":
				ua = append(ua, cur)
			case "device_parsers":
				dev = append(dev, cur)
			default:
				cur = nil
			}
			continue
		}
		k, v, ok := strings.Cut(t, ":")
		if cur == nil || !ok {
			continue
		}
		switch k {
		case "family_replacement":
			cur.family = unquote(v)
		case "device_replacement":
			cur.device = unquote(v)
		case "regex_flag":
			cur.flag = unquote(v)
		}
	}
	for _, p := range slices.Concat(ua, dev) {
		src := p.src
		if p.flag == "i" {
			src = "(?i)" + src
		}
		if p.re, err = regexp.Compile(src); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(ua) == 0 || len(dev) == 0 {
		return nil, nil, fmt.Errorf("%s: no parsers read", path)
	}
	return ua, dev, nil
}

// unquote reads a YAML scalar as regexes.yaml writes them: single-quoted,
// with ” for a quote.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return s
}

// firstGroup matches a pattern whose first group, after an optional
// anchor, is an alternation of literals.
var firstGroup = regexp.MustCompile(`^(?:\^|\\b|\(\?:\^\| \)| )?\(((?:[A-Za-z0-9 ._!-]|\\[./ -])+(?:\|(?:[A-Za-z0-9 ._!-]|\\[./ -])+)*)\)`)

// names returns the literal names p's first group captures.
func names(p *parser) []string {
	m := firstGroup.FindStringSubmatch(p.src)
	if m == nil {
		return nil
	}
	var out []string
	for _, alt := range strings.Split(m[1], "|") {
		out = append(out, strings.ReplaceAll(alt, `\`, ""))
	}
	return out
}

// uapBot reports whether uap-core calls the client name a bot: the first
// user-agent parser that matches "name/1.0" gives the family "Spider", or
// the first device parser that matches it gives the device "Spider".
func uapBot(name string, ua, dev []*parser) bool {
	h := name + "/1.0"
	for _, p := range ua {
		if p.re.MatchString(h) {
			if p.family == "Spider" {
				return true
			}
			break
		}
	}
	for _, p := range dev {
		if p.re.MatchString(h) {
			return p.device == "Spider"
		}
	}
	return false
}

// crawlerTokens reads the tokens of the crawler list, without '^'.
func crawlerTokens(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		kind, tok, ok := strings.Cut(strings.TrimRight(line, "\r\n"), "\t")
		if ok && !strings.HasPrefix(kind, "#") {
			out = append(out, strings.TrimPrefix(tok, "^"))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return out, nil
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// knownCrawler returns the crawler token that the header "name/1.0" holds
// on word boundaries (as classify matches them), "" for none.
func knownCrawler(name string, toks []string) string {
	h := name + "/1.0"
	for _, t := range toks {
		for i := strings.Index(h, t); i >= 0; {
			end := i + len(t)
			if (i == 0 || !isAlnum(t[0]) || !isAlnum(h[i-1])) && (end == len(h) || !isAlnum(t[len(t)-1]) || !isAlnum(h[end])) {
				return t
			}
			next := strings.Index(h[i+1:], t)
			if next < 0 {
				break
			}
			i += 1 + next
		}
	}
	return ""
}

// Generate writes the list derived from the uap-core file at uapPath and
// the crawler list at crawlersPath to w.
func Generate(w io.Writer, uapPath, crawlersPath string) error {
	ua, dev, err := readUAP(uapPath)
	if err != nil {
		return err
	}
	ctoks, err := crawlerTokens(crawlersPath)
	if err != nil {
		return err
	}
	classes := map[string]string{} // name -> class
	var uapBots []string
	crawlerKnown := map[string]string{} // name -> crawler token
	dropped, notSeen := map[string]bool{}, map[string]bool{}
	for n := range notApps {
		notSeen[n] = true
	}
	for _, p := range ua {
		for _, n := range names(p) {
			n = strings.ToLower(strings.TrimSpace(n))
			if _, done := classes[n]; done || len(n) < 2 || dropped[n] {
				continue
			}
			if _, no := notApps[n]; no {
				delete(notSeen, n)
				dropped[n] = true
				continue
			}
			if p.family == "Spider" || uapBot(n, ua, dev) {
				uapBots = append(uapBots, n)
				dropped[n] = true
				continue
			}
			if t := knownCrawler(n, ctoks); t != "" {
				crawlerKnown[n] = t
				dropped[n] = true
				continue
			}
			classes[n] = classApp
		}
	}
	if len(notSeen) > 0 {
		return fmt.Errorf("notApps lists names that uap-core's parsers no longer capture: %v", slices.Sorted(maps.Keys(notSeen)))
	}
	var dupExtra []string
	for n, e := range extraApps {
		if _, ok := classes[n]; ok {
			dupExtra = append(dupExtra, n)
		}
		if t := knownCrawler(n, ctoks); t != "" {
			return fmt.Errorf("extraApps: %q holds the crawler token %q, which wins", n, t)
		}
		classes[n] = e.class
	}
	if len(dupExtra) > 0 {
		return fmt.Errorf("extraApps lists names uap-core already yields: %v", slices.Sorted(slices.Values(dupExtra)))
	}
	var notListed []string
	for n := range readers {
		if _, ok := classes[n]; !ok {
			notListed = append(notListed, n)
		} else if classes[n] == classApp {
			classes[n] = classReader
		}
	}
	if len(notListed) > 0 {
		return fmt.Errorf("readers lists names that are not in the list: %v", slices.Sorted(slices.Values(notListed)))
	}
	slices.Sort(uapBots)
	bw := bufio.NewWriter(w)
	writeHeader(bw, len(ua), uapBots, crawlerKnown)
	for _, n := range slices.Sorted(maps.Keys(classes)) {
		fmt.Fprintf(bw, "%s\t%s\n", classes[n], n)
	}
	return bw.Flush()
}

// writeHeader writes the list's header: its source and format, and every
// name left out or added, with the reason.
func writeHeader(bw io.Writer, parsers int, uapBots []string, crawlerKnown map[string]string) {
	fmt.Fprintf(bw, `# The software people run besides web browsers, generated by internal/genapps; DO NOT EDIT.
#
# Derived from ua-parser/uap-core's regexes.yaml (Apache-2.0; copyright
# 2009 Google Inc. and the uap-core contributors; its licence is that of
# the upstream repository): https://github.com/ua-parser/uap-core
# See testdata/useragents/SOURCES.md for the exact commit.
# matomo device-detector's client lists were not used as the source: they
# are LGPL-3.0. Its fixtures are test data only.
#
# Format: one name per line, "<class><TAB><name>". class is app (a person's
# app, player, mail client or text browser), reader (a feed or podcast
# reader: classify.Reader) or preview (a link preview that the person's own
# device fetches: classify.Unfurler). Names are lower-case and are matched
# case-insensitively at the start of the header only (the header's first
# product), where the product's name ends: no letter, digit, '-', '_' or
# '.' may follow ("electron-fetch" is no "electron").
#
# Taken: the literal names of the first group of uap-core's user-agent
# parsers (%d parsers), except those uap-core calls bots (the header
# "<name>/1.0" parsed by uap-core's own parsers is a Spider), those the
# crawler list knows (it wins) and those of notApps.
#
# %d names uap-core calls bots are left out:
`, parsers, len(uapBots))
	writeWrapped(bw, uapBots)
	fmt.Fprintf(bw, "#\n# %d names hold a token of the crawler list, which wins:\n", len(crawlerKnown))
	for _, n := range slices.Sorted(maps.Keys(crawlerKnown)) {
		fmt.Fprintf(bw, "#   %s (%s)\n", n, crawlerKnown[n])
	}
	gen.WriteReasons(bw, "%d names are no app a person runs, or too common a word, and are left out:", notApps)
	fmt.Fprintf(bw, "#\n# %d names are added, each with the place its header's form comes from:\n", len(extraApps))
	for _, n := range slices.Sorted(maps.Keys(extraApps)) {
		e := extraApps[n]
		fmt.Fprintf(bw, "#   %s (%s): %s; %s\n", n, e.class, e.reason, e.source)
	}
	gen.WriteReasons(bw, "%d names are feed or podcast readers:", readers)
}

// writeWrapped writes names as comment lines of at most 76 characters.
func writeWrapped(w io.Writer, names []string) {
	line := "#  "
	for _, n := range names {
		if len(line)+1+len(n) > 76 {
			fmt.Fprintln(w, line)
			line = "#  "
		}
		line += " " + n
	}
	if line != "#  " {
		fmt.Fprintln(w, line)
	}
}
