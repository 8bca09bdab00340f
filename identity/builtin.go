package identity

// builtinOperators returns the built-in registry, a fresh copy each call.
// Each entry's Source is the documentation page its data comes from.
//
// Rules kept here: a token is a product token as it appears in a
// User-Agent header, and belongs to exactly one operator (compared without
// case). Tokens that exist only for robots.txt (Google-Extended,
// Applebot-Extended) are not listed: no request carries them. Every
// operator publishes at least one check (a feed or a reverse-DNS domain).
// A claim whose address fails every check its operator publishes is
// reported spoofed, so a token is listed only when the operator's checks
// cover the addresses that crawler uses.
//
// Research notes (what was and was not confirmed, and where) are in the
// comment above each entry; the copies of the pages read date from 2025
// to 2026-09.
func builtinOperators() []Operator {
	return []Operator{
		// Google. Verification page (moved from
		// developers.google.com/search/docs/crawling-indexing/verifying-googlebot,
		// which redirects): three classes of crawler, each with a reverse-DNS mask
		// and a JSON feed, under developers.google.com/static/crawling/ipranges/.
		// The old /static/search/apis/ipranges/googlebot.json path is the former
		// name of common-crawlers.json (it redirects); the new names are used here.
		// Tokens come from the three list pages linked from it:
		// https://developers.google.com/crawling/docs/crawlers-fetchers/google-common-crawlers
		// https://developers.google.com/crawling/docs/crawlers-fetchers/google-special-case-crawlers
		// https://developers.google.com/crawling/docs/crawlers-fetchers/google-user-triggered-fetchers
		// Not listed, on purpose: Google-Extended is a robots.txt-only token (Google
		// says no request carries it; a header naming it is not Google's). Dropped
		// or undocumented names (Googlebot-Mobile, Mobile AdSense, DuplexWeb-Google,
		// Google Favicon, google-speakr, Gemini-Deep-Research, GoogleAgent-Mariner,
		// Google-Gemini-CLI, GoogleImageProxy, AppEngine-Google) are left out: either
		// Google no longer documents them or they do not come from the crawler
		// ranges, and a claim that fails every published check is reported spoofed.
		{
			Name:   "google",
			Source: "https://developers.google.com/crawling/docs/crawlers-fetchers/verifying-googlebot",
			Tokens: []string{
				// Common crawlers (common-crawlers.json, crawl-*.googlebot.com).
				"Googlebot",
				"Googlebot-Image",
				// Google says Googlebot-News sends the ordinary Googlebot strings; the
				// token is kept because older headers carry it and it can only be Google's.
				"Googlebot-News",
				"Googlebot-Video",
				"Storebot-Google",
				"Google-InspectionTool",
				"GoogleOther",
				"GoogleOther-Image",
				"GoogleOther-Video",
				"Google-CloudVertexBot",
				// Special-case crawlers (special-crawlers.json, rate-limited-proxy-*.google.com).
				"APIs-Google",
				"AdsBot-Google",
				"AdsBot-Google-Mobile",
				"Mediapartners-Google",
				"Google-Safety",
				// User-triggered fetchers (user-triggered-fetchers*.json,
				// user-triggered-agents.json; *.gae.googleusercontent.com or
				// google-proxy-*.google.com).
				"FeedFetcher-Google",
				"GoogleProducer",
				"Google-Read-Aloud",
				"Google-Site-Verification",
				"Google-CWS",
				"Google-NotebookLM",
				// Google-Agent (Project Mariner, added 2026-03) uses user-triggered-agents.json.
				"Google-Agent",
				// Google-Pinpoint: reported as added to the user-triggered list; its
				// exact header string was not seen in a copy of Google's page.
				"Google-Pinpoint",
			},
			IPRanges: []string{
				"https://developers.google.com/static/crawling/ipranges/common-crawlers.json",
				"https://developers.google.com/static/crawling/ipranges/special-crawlers.json",
				"https://developers.google.com/static/crawling/ipranges/user-triggered-fetchers.json",
				"https://developers.google.com/static/crawling/ipranges/user-triggered-fetchers-google.json",
				"https://developers.google.com/static/crawling/ipranges/user-triggered-agents.json",
			},
			RDNS: []string{
				"googlebot.com",
				"google.com",
				// Google's step 2 names googleusercontent.com, but every Google Cloud VM
				// has a forward-confirmed *.googleusercontent.com name, so that suffix
				// would verify anyone on GCP. The documented mask for the fetchers is
				// ***-***-***-***.gae.googleusercontent.com, so only that subdomain is
				// accepted here; those fetchers are also in the feeds.
				"gae.googleusercontent.com",
			},
		},
		// Microsoft Bing. Verification page: reverse DNS must end in
		// search.msn.com, then forward-confirm. Tokens from
		// https://www.bing.com/webmasters/help/which-crawlers-does-bing-use-8c184ec0
		// (bingbot, adidxbot, BingPreview, MicrosoftPreview). The feed
		// www.bing.com/toolbox/bingbot.json is linked from Bing's verification
		// tool and used widely; the copies of the help page seen here describe
		// only the DNS method, and one report calls the feed stale (dated 2024-01),
		// so rDNS is kept as the second check. msnbot (retired) and Copilot (a
		// robots.txt token in newer docs, and a word other clients use) are left
		// out.
		{
			Name:   "bing",
			Source: "https://www.bing.com/webmasters/help/how-to-verify-bingbot-3905dc26",
			Tokens: []string{
				"bingbot",
				"adidxbot",
				"BingPreview",
				"MicrosoftPreview",
			},
			IPRanges: []string{
				"https://www.bing.com/toolbox/bingbot.json",
			},
			RDNS: []string{
				"search.msn.com",
			},
		},
		// OpenAI ("Overview of OpenAI Crawlers", formerly
		// platform.openai.com/docs/bots): each agent has its full header string and
		// a "Published IP addresses" JSON link. OAI-AdsBot's adsbot.json was missing
		// when the bot was first listed (early 2026) and is on the page in later
		// copies (2026-06). No reverse-DNS domain is documented.
		// chatgpt-connectors.json, seen in third-party code, is not on the page and
		// is left out.
		{
			Name:   "openai",
			Source: "https://developers.openai.com/api/docs/bots",
			Tokens: []string{
				"GPTBot",
				"OAI-SearchBot",
				"ChatGPT-User",
				"OAI-AdsBot",
			},
			// The ChatGPT agent signs its requests (Web Bot Auth) with
			// Signature-Agent "https://chatgpt.com".
			SignatureAgents: []string{"https://chatgpt.com"},
			IPRanges: []string{
				"https://openai.com/gptbot.json",
				"https://openai.com/searchbot.json",
				"https://openai.com/chatgpt-user.json",
				"https://openai.com/adsbot.json",
			},
		},
		// Anthropic. The help article names three robots (ClaudeBot, Claude-User,
		// Claude-SearchBot) and says "If a crawler has a source IP address on this
		// list, it indicates that the crawler is coming from Anthropic"; the copies
		// seen here lost the link target. Several independent tools, one probing it
		// on 2026-09-20, give it as https://claude.com/crawling/bots.json in the
		// Google shape (creationTime 2026-08-18), one list shared by all three bots.
		// Older write-ups (2025) say Anthropic published no ranges; the feed is
		// newer. No reverse-DNS domain is documented. Claude-Web and anthropic-ai are
		// old names Anthropic no longer documents and are left out.
		// Note: Claude-User is also sent by Claude Code from the user's own machine
		// (e.g. "Claude-User (claude-code/...)"), which no feed covers; such a
		// request will not verify.
		{
			Name:   "anthropic",
			Source: "https://support.claude.com/en/articles/8896518-does-anthropic-crawl-data-from-the-web-and-how-can-site-owners-block-the-crawler",
			Tokens: []string{
				"ClaudeBot",
				"Claude-User",
				"Claude-SearchBot",
			},
			IPRanges: []string{
				"https://claude.com/crawling/bots.json",
			},
		},
		// Perplexity ("Perplexity Crawlers", formerly docs.perplexity.ai/guides/bots):
		// PerplexityBot and Perplexity-User, each with a JSON list. Older copies and
		// tools use the www.perplexity.ai host for the same files; the www.perplexity.com
		// names are the ones tools cite against the current page (checked 2026-08).
		// No reverse-DNS domain is documented.
		{
			Name:   "perplexity",
			Source: "https://docs.perplexity.ai/docs/resources/perplexity-crawlers",
			Tokens: []string{
				"PerplexityBot",
				"Perplexity-User",
			},
			IPRanges: []string{
				"https://www.perplexity.com/perplexitybot.json",
				"https://www.perplexity.com/perplexity-user.json",
			},
		},
		// Apple ("About Applebot"): "Traffic coming from Applebot is generally
		// identified by using reverse DNS in the *.applebot.apple.com domain.
		// Another way is to match the IP address with a CIDR prefix contained in the
		// following JSON file: Applebot IP CIDRs" (link target
		// search.developer.apple.com/applebot.json, as every tool cites it).
		// Applebot-Extended is a robots.txt-only token ("Applebot-Extended does not
		// crawl webpages") and is left out.
		{
			Name:   "apple",
			Source: "https://support.apple.com/en-us/119829",
			Tokens: []string{
				"Applebot",
			},
			IPRanges: []string{
				"https://search.developer.apple.com/applebot.json",
			},
			RDNS: []string{
				"applebot.apple.com",
			},
		},
		// DuckDuckGo. Help pages for DuckDuckBot and DuckAssistBot
		// (https://duckduckgo.com/duckduckgo-help-pages/results/duckassistbot).
		// Older versions of both pages list single addresses inline; the JSON
		// files duckduckbot.json and duckassistbot.json are what current tools use
		// (duckassistbot.json seen with creationTime 2026-09-01). Not confirmed
		// here from the current text of the help pages. No reverse-DNS domain is
		// documented. DuckDuckBot also covers DuckDuckBot-Https (hyphen fallback).
		{
			Name:   "duckduckgo",
			Source: "https://duckduckgo.com/duckduckgo-help-pages/results/duckduckbot",
			Tokens: []string{
				"DuckDuckBot",
				"DuckAssistBot",
			},
			IPRanges: []string{
				"https://duckduckgo.com/duckduckbot.json",
				"https://duckduckgo.com/duckassistbot.json",
			},
		},
		// Common Crawl (CCBot page; the FAQ gives the header "CCBot/2.0").
		// The feed index.commoncrawl.org/ccbot.json and the reverse-DNS domain
		// crawl.commoncrawl.org are attributed to this page by several tools; the
		// page text itself was not seen here.
		{
			Name:   "commoncrawl",
			Source: "https://commoncrawl.org/ccbot",
			Tokens: []string{
				"CCBot",
			},
			IPRanges: []string{
				"https://index.commoncrawl.org/ccbot.json",
			},
			RDNS: []string{
				"crawl.commoncrawl.org",
			},
		},
		// Mistral ("Mistral crawlers"): MistralAI-User and MistralAI-Index, each
		// with a full header string and "All published IP addresses" (the link
		// targets were lost in the copy seen; the file names below are the ones
		// tools use). MistralAI-Training is on the same page, but neither its
		// header nor a feed for it was seen, so it is left out rather than have
		// real training crawls reported as spoofed.
		{
			Name:   "mistral",
			Source: "https://docs.mistral.ai/robots",
			Tokens: []string{
				"MistralAI-User",
				"MistralAI-Index",
			},
			IPRanges: []string{
				"https://mistral.ai/mistralai-user-ips.json",
				"https://mistral.ai/mistralai-index-ips.json",
			},
		},
		// Amazon ("About Amazonbot", also at developer.amazon.com/support/amazonbot):
		// verify by reverse DNS, the name must be a subdomain of
		// crawl.amazonbot.amazon and forward-confirm. Amazon's address lists
		// (developer.amazon.com/amazonbot/ip-addresses/, searchbot-ip-addresses/,
		// live-ip-addresses/) are HTML pages, not JSON feeds, so none is listed.
		// The page documents rDNS for Amazonbot; that Amzn-SearchBot and Amzn-User
		// use the same domain is reported by tools but not confirmed here.
		{
			Name:   "amazon",
			Source: "https://developer.amazon.com/amazonbot",
			Tokens: []string{
				"Amazonbot",
				"Amzn-SearchBot",
				"Amzn-User",
			},
			RDNS: []string{
				"crawl.amazonbot.amazon",
			},
		},
		// Yandex ("How to check that a robot belongs to Yandex"): "All Yandex
		// robot names end in yandex.ru, yandex.net or yandex.com", forward-confirm;
		// the address list is not disclosed. Tokens are the robots in the page's
		// "Yandex robots in server logs" table (as mirrored in public test data and
		// in crawlers.json); the table changes over time and was not seen whole
		// here; YandexAdditional and YandexAdditionalBot are listed from memory of
		// the current table, not seen in a copy. All of them are Yandex's, so a
		// missing or extra name is harmless to verification. Not listed:
		// YandexSearch and YaBrowser (apps on users' devices, not robots).
		{
			Name:   "yandex",
			Source: "https://yandex.com/support/webmaster/robot-workings/check-yandex-robots.html",
			Tokens: []string{
				"YandexBot",
				"YandexAccessibilityBot",
				"YandexAdditional",
				"YandexAdditionalBot",
				"YandexAdNet",
				"YandexBlogs",
				"YandexCalendar",
				"YandexDirect",
				"YandexDirectDyn",
				"YaDirectFetcher",
				"YandexFavicons",
				"YandexForDomain",
				"YandexImageResizer",
				"YandexImages",
				"YandexMarket",
				"YandexMedia",
				"YandexMetrika",
				"YandexMobileBot",
				"YandexMobileScreenShotBot",
				"YandexNews",
				"YandexOntoDB",
				"YandexOntoDBAPI",
				"YandexPagechecker",
				"YandexPartner",
				"YandexRCA",
				"YandexRenderResourcesBot",
				"YandexScreenshotBot",
				"YandexSearchShop",
				"YandexSitelinks",
				"YandexSpravBot",
				"YandexTracker",
				"YandexTurbo",
				"YandexUserproxy",
				"YandexVertis",
				"YandexVerticals",
				"YandexVideo",
				"YandexVideoParser",
				"YandexWebmaster",
			},
			RDNS: []string{
				"yandex.ru",
				"yandex.net",
				"yandex.com",
			},
		},
		// Baidu (Baiduspider help, linked from the header): "The hostname of
		// Baiduspider is *.baidu.com or *.baidu.jp. Others are fake hostnames",
		// forward-confirm; Baidu says the address ranges change and are not
		// published. Its examples are *.crawl.baidu.com and *.crawl.baidu.jp; those
		// narrower domains are used here, so that no other host under baidu.com
		// verifies. The page text was seen in
		// copies (English FAQ and the 2017 Chinese post), not at this address.
		{
			Name:   "baidu",
			Source: "https://www.baidu.com/search/spider.html",
			Tokens: []string{
				"Baiduspider",
				"Baiduspider-render",
			},
			RDNS: []string{
				"crawl.baidu.com",
				"crawl.baidu.jp",
			},
		},
		// Huawei Petal Search (PetalBot page; the header links
		// webmaster.petalsearch.com/site/petalbot). The page has a "How to Judge
		// PetalBot Crawling" section on reverse DNS, cut off in the copy seen; the
		// domain petalsearch.com (petalbot-<ip>.petalsearch.com) is as third
		// parties report it, not confirmed here.
		{
			Name:   "petal",
			Source: "https://aspiegel.com/petalbot",
			Tokens: []string{
				"PetalBot",
			},
			RDNS: []string{
				"petalsearch.com",
			},
		},
		// Seznam.cz ("SeznamBot crawler"): lists its IPv4/IPv6 ranges in the
		// page (no JSON) and "All used SeznamBot IP addresses should have a reverse
		// DNS record" fulltextrobot-*.seznam.cz.
		{
			Name:   "seznam",
			Source: "https://napoveda.seznam.cz/en/seznambot-crawler",
			Tokens: []string{
				"SeznamBot",
			},
			RDNS: []string{
				"seznam.cz",
			},
		},
	}
}
