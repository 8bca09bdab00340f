package caddymodule

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/robotsguard/robotsguard/guard"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"bare", `robots_guard`, `{}`},
		{"empty block", "robots_guard {\n}", `{}`},
		{"robots_txt url", "robots_guard {\n robots_txt https://example.com/robots.txt\n}", `{"robots_txt":{"source":"https://example.com/robots.txt"}}`},
		{"robots_txt file", "robots_guard {\n robots_txt /etc/robots.txt\n}", `{"robots_txt":{"source":"/etc/robots.txt"}}`},
		{"robots_txt block alone", "robots_guard {\n robots_txt {\n refresh 1h\n }\n}", `{"robots_txt":{"refresh":"1h0m0s"}}`},
		{"refresh", "robots_guard {\n robots_txt /r {\n refresh 1h\n }\n}", `{"robots_txt":{"source":"/r","refresh":"1h0m0s"}}`},
		{"refresh in days", "robots_guard {\n robots_txt {\n refresh 1d\n }\n}", `{"robots_txt":{"refresh":"24h0m0s"}}`},
		{"fetch_timeout", "robots_guard {\n robots_txt {\n fetch_timeout 2.5s\n }\n}", `{"robots_txt":{"fetch_timeout":"2.5s"}}`},
		{"on_unreachable", "robots_guard {\n robots_txt {\n on_unreachable allow\n }\n}", `{"robots_txt":{"on_unreachable":"allow"}}`},
		{"crawl_delay key", "robots_guard {\n crawl_delay {\n key group\n }\n}", `{"crawl_delay":{"key":"group"}}`},
		{"tolerance in delays", "robots_guard {\n crawl_delay {\n tolerance 2\n }\n}", `{"crawl_delay":{"tolerance":2}}`},
		{"tolerance fraction", "robots_guard {\n crawl_delay {\n tolerance 0.1\n }\n}", `{"crawl_delay":{"tolerance":0.1}}`},
		{"tolerance percent", "robots_guard {\n crawl_delay {\n tolerance 25%\n }\n}", `{"crawl_delay":{"tolerance":0.25}}`},
		{"tolerance 0 is strict", "robots_guard {\n crawl_delay {\n tolerance 0\n }\n}", `{"crawl_delay":{"tolerance":0}}`},
		{"max_bytes", "robots_guard {\n robots_txt {\n max_bytes 64MiB\n }\n}", `{"robots_txt":{"max_bytes":67108864}}`},
		{"clients", "robots_guard {\n clients {\n ipv4_prefix 24\n ipv6_prefix 48\n }\n}", `{"clients":{"ipv4_prefix":24,"ipv6_prefix":48}}`},
		{"caps", "robots_guard {\n crawl_delay {\n max_keys 5000\n }\n robots_txt {\n max_sites 10\n }\n bots {\n cache_size 100\n }\n}", `{"robots_txt":{"max_sites":10},"bots":{"cache_size":100},"crawl_delay":{"max_keys":5000}}`},
		{"bots", "robots_guard {\n bots MyScraper OtherBot\n bots Third {\n tokens Fourth\n }\n}", `{"bots":{"tokens":["MyScraper","OtherBot","Third","Fourth"]}}`},
		{"flags", "robots_guard {\n bots {\n empty_user_agent\n http_tools on\n }\n dry_run\n log_query off\n}", `{"bots":{"empty_user_agent":true,"http_tools":true},"dry_run":true}`},
		{"bare verify", "robots_guard {\n verify\n}", `{"verify":{}}`},
		{"verify off", "robots_guard {\n verify off\n}", `{"verify":{"off":true}}`},
		{"crawl_delay scope", "robots_guard {\n crawl_delay {\n scope block\n }\n}", `{"crawl_delay":{"scope":"block"}}`},
		{"site_names", "robots_guard {\n robots_txt {\n site_names example.com *.example.org\n }\n}", `{"robots_txt":{"site_names":["example.com","*.example.org"]}}`},
		{"fetch_feeds", "robots_guard {\n verify {\n fetch_feeds on_demand\n }\n}", `{"verify":{"fetch_feeds":"on_demand"}}`},
		{"store", "robots_guard {\n store redis redis://127.0.0.1:6379\n}", `{"store":{"redis":"redis://127.0.0.1:6379"}}`},
		{"web_bot_auth off", "robots_guard {\n verify {\n web_bot_auth {\n discover off\n accept_signature off\n allow_private_directories off\n }\n }\n}", `{"verify":{"web_bot_auth":{"accept_signature":false}}}`},
		{"web_bot_auth", "robots_guard {\n verify {\n web_bot_auth {\n agent https://bot.acme.example acme {\n key /etc/acme.jwk\n }\n agent https://chatgpt.com openai\n discover\n max_window 1h\n allow_private_directories\n accept_signature\n }\n operator acme {\n tokens AcmeBot\n signature_agents https://bot.acme.example\n }\n }\n}",
			`{"verify":{"operators":[{"name":"acme","tokens":["AcmeBot"],"signature_agents":["https://bot.acme.example"]}],"web_bot_auth":{"agents":[{"origin":"https://bot.acme.example","operator":"acme","keys":["/etc/acme.jwk"]},{"origin":"https://chatgpt.com","operator":"openai"}],"discover":true,"max_window":"1h0m0s","allow_private_directories":true,"accept_signature":true}}}`},
		{"traps and bans", "robots_guard {\n traps /no-robots/ /*/print-all$\n traps /honeypot {\n grace 1h\n links static\n }\n bans {\n for 30m\n max 48h\n after 20 1m\n max_entries 5000\n }\n}", `{"traps":{"paths":["/no-robots/","/*/print-all$","/honeypot"],"grace":"1h0m0s","links":"static"},"bans":{"for":"30m0s","max":"48h0m0s","after":{"denials":20,"window":"1m0s"},"max_entries":5000}}`},
		{"store block", "robots_guard {\n store redis rediss://:pw@redis.internal:6380/2 {\n key_prefix site1:\n timeout 100ms\n on_store_error deny\n }\n}", `{"store":{"redis":"rediss://:pw@redis.internal:6380/2","key_prefix":"site1:","timeout":"100ms","on_store_error":"deny"}}`},
		{"store cluster", "robots_guard {\n store redis redis://10.0.0.1:7001?addr=10.0.0.2:7001&addr=10.0.0.3:7001 {\n cluster\n }\n}", `{"store":{"redis":"redis://10.0.0.1:7001?addr=10.0.0.2:7001\u0026addr=10.0.0.3:7001","cluster":true}}`},
		{"verify block", `robots_guard {
			verify {
				on_spoofed star
				on_dns_error header
				refresh 12h
				dns_timeout 1s
				resolver 127.0.0.1:5353
				dns_cache_size 500
				cache_dir /var/lib/robots
				builtin off
				operator acme {
					tokens AcmeBot Acme-Image
					ip_ranges https://acme.example/ranges.json /etc/acme.json
					rdns crawl.acme.example
					source https://acme.example/bot
				}
				operator google {
					tokens Googlebot
					rdns googlebot.com
				}
			}
		}`, `{"verify":{"on_spoofed":"star","on_dns_error":"header","refresh":"12h0m0s","dns_timeout":"1s","resolver":"127.0.0.1:5353","dns_cache_size":500,"builtin":false,"operators":[{"name":"acme","tokens":["AcmeBot","Acme-Image"],"ip_ranges":["https://acme.example/ranges.json","/etc/acme.json"],"rdns":["crawl.acme.example"],"source":"https://acme.example/bot"},{"name":"google","tokens":["Googlebot"],"rdns":["googlebot.com"]}],"cache_dir":"/var/lib/robots"}}`},
		{"everything", `robots_guard {
			robots_txt http://127.0.0.1:9000/robots.txt {
				refresh 30m
				fetch_timeout 3s
				on_unreachable disallow
				max_sites 1000
			}
			bots AbBot {
				empty_user_agent
				http_tools
				cache_size 10000
			}
			crawl_delay {
				key ip
				max_keys 100000
			}
			clients {
				ipv4_prefix 32
				ipv6_prefix 64
			}
			dry_run
		}`, `{"robots_txt":{"source":"http://127.0.0.1:9000/robots.txt","refresh":"30m0s","fetch_timeout":"3s","on_unreachable":"disallow","max_sites":1000},"bots":{"tokens":["AbBot"],"empty_user_agent":true,"http_tools":true,"cache_size":10000},"crawl_delay":{"key":"ip","max_keys":100000},"clients":{"ipv4_prefix":32,"ipv6_prefix":64},"dry_run":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g RobotsGuard
			if err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input)); err != nil {
				t.Fatalf("UnmarshalCaddyfile: %v", err)
			}
			got, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("JSON\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestUnmarshalCaddyfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"argument", "robots_guard /x", `takes no arguments`},
		{"unknown subdirective", "robots_guard {\n robots_tx /a\n}", `unknown robots_guard subdirective "robots_tx"`},
		{"missing value", "robots_guard {\n robots_txt {\n refresh\n }\n}", `robots_txt: refresh: want exactly one value, got 0`},
		{"two values", "robots_guard {\n robots_txt a b\n}", `robots_txt: want at most one source (a URL or a file path), got 2`},
		{"bad duration", "robots_guard {\n robots_txt {\n refresh soon\n }\n}", `robots_txt: refresh: "soon" is not a duration`},
		{"refresh too long", "robots_guard {\n robots_txt {\n refresh 48h\n }\n}", `robots_txt: refresh: must be at most 24h`},
		{"negative timeout", "robots_guard {\n robots_txt {\n fetch_timeout -1s\n }\n}", `robots_txt: fetch_timeout`},
		{"robots_txt unknown", "robots_guard {\n robots_txt {\n max_robots_bytes 1\n }\n}", `robots_txt: max_robots_bytes: unknown subdirective (want refresh, fetch_timeout`},
		{"bad number", "robots_guard {\n crawl_delay {\n max_keys lots\n }\n}", `crawl_delay: max_keys: "lots" is not a whole number`},
		{"bad on_unreachable", "robots_guard {\n robots_txt {\n on_unreachable maybe\n }\n}", `robots_txt: on_unreachable: must be "disallow" or "allow"`},
		{"bad crawl_delay key", "robots_guard {\n crawl_delay {\n key ua\n }\n}", `crawl_delay: key: must be "ip" or "group"`},
		{"crawl_delay with a value", "robots_guard {\n crawl_delay 5\n}", `crawl_delay takes a block, not "5"`},
		{"tolerance too large", "robots_guard {\n crawl_delay {\n tolerance 450%\n }\n}", `crawl_delay: tolerance: must be a number of Crawl-delays between 0 and 4 (such as 2.5, or 0.25 for a quarter of the delay), got 4.5`},
		{"tolerance not a number", "robots_guard {\n crawl_delay {\n tolerance soon\n }\n}", `crawl_delay: tolerance: "soon" is not a number of Crawl-delays`},
		{"max_bytes not a size", "robots_guard {\n robots_txt {\n max_bytes lots\n }\n}", `robots_txt: max_bytes: "lots" is not a size`},
		{"bad ipv4_prefix", "robots_guard {\n clients {\n ipv4_prefix 33\n }\n}", `clients: ipv4_prefix: must be between 1 and 32`},
		{"bad ipv6_prefix", "robots_guard {\n clients {\n ipv6_prefix 0\n }\n}", ``},
		{"flag with value", "robots_guard {\n dry_run yes\n}", `dry_run: want no value, on or off, got "yes"`},
		{"bots tokens without token", "robots_guard {\n bots {\n tokens\n }\n}", `bots: tokens: want at least one value`},
		{"negative max_sites", "robots_guard {\n robots_txt {\n max_sites -1\n }\n}", `robots_txt: max_sites: must be positive`},
		{"short bot token", "robots_guard {\n bots X\n}", `bots: tokens[0]: token must have at least 2 characters`},
		{"traps without path", "robots_guard {\n traps {\n grace 1h\n }\n}", `traps: want at least one path pattern`},
		{"trap not a path", "robots_guard {\n traps no-robots\n}", `traps: paths[0]: "no-robots": a trap is a path pattern starting with '/'`},
		{"trap everything", "robots_guard {\n traps /\n}", `would make every path a trap`},
		{"grace too long", "robots_guard {\n traps /t/ {\n grace 30d\n }\n}", `traps: grace: must be between 0 and 168h`},
		{"traps unknown", "robots_guard {\n traps /t/ {\n trap_grace 1h\n }\n}", `traps: trap_grace: unknown subdirective (want grace, links or secret)`},
		{"after one value", "robots_guard {\n bans {\n after 20\n }\n}", `bans: after: want <denials> <window>`},
		{"after too few", "robots_guard {\n bans {\n after 1 1m\n }\n}", `bans: after: denials must be at least 2`},
		{"for over max", "robots_guard {\n bans {\n for 48h\n }\n}", `bans: for: must be at most max (24h0m0s), got 48h0m0s`},
		{"bans with a value", "robots_guard {\n bans 1h\n}", `bans takes a block, not "1h"`},
		{"store without redis", "robots_guard {\n store memory\n}", `store: want "store redis <redis:// or rediss:// URL>"`},
		{"store bad URL", "robots_guard {\n store redis http://:secret@x:1\n}", `robots_guard: store: redis: http://:xxxxx@x:1`},
		{"store key_prefix with a brace", "robots_guard {\n store redis redis://10.0.0.1:6379 {\n key_prefix shop{1}:\n }\n}", `robots_guard: store: key_prefix: "shop{1}:" must not contain '{' or '}'`},
		{"store without a scheme", "robots_guard {\n store redis 127.0.0.1:21079\n}", `127.0.0.1:21079: no scheme: write it as redis://127.0.0.1:21079`},
		{"store cluster with a value", "robots_guard {\n store redis redis://10.0.0.1:7001 {\n cluster yes\n }\n}", `store: cluster takes no value`},
		{"a cluster's URL without cluster", "robots_guard {\n store redis redis://:pw@10.0.0.1:7001?addr=10.0.0.2:7001\n}", `a cluster's URL (addr=...): add cluster to the store`},
		{"store without a scheme, password", "robots_guard {\n store redis :secret@127.0.0.1:6379\n}", `no scheme: write it as redis://:xxxxx@127.0.0.1:6379`},
		{"store unknown", "robots_guard {\n store redis redis://x:1 {\n prefix a\n }\n}", `store: unknown subdirective "prefix"`},
		{"store on_store_error", "robots_guard {\n store redis redis://x:1 {\n on_store_error maybe\n }\n}", `store: on_store_error: must be "allow" or "deny"`},
		{"store timeout", "robots_guard {\n store redis redis://x:1 {\n timeout 1m\n }\n}", `store: timeout: must be between 0 and 5s`},
		{"web_bot_auth bad origin", "robots_guard {\n verify {\n web_bot_auth {\n agent chatgpt.com\n }\n }\n}", `web_bot_auth: agents[0]: "chatgpt.com" is not an https:// origin`},
		{"web_bot_auth discover maybe", "robots_guard {\n verify {\n web_bot_auth {\n discover maybe\n }\n }\n}", `web_bot_auth: discover: want no value, on or off, got "maybe"`},
		{"web_bot_auth agent alone", "robots_guard {\n verify {\n web_bot_auth {\n agent https://x.example\n }\n }\n}", `give the operator it stands for, its keys, or both`},
		{"web_bot_auth unknown", "robots_guard {\n verify {\n web_bot_auth {\n discovery\n }\n }\n}", `web_bot_auth: unknown subdirective "discovery"`},
		{"verify argument", "robots_guard {\n verify on\n}", `verify: want a block or "off", got "on"`},
		{"verify off block", "robots_guard {\n verify off {\n on_spoofed star\n }\n}", `verify off: takes no block`},
		{"verify fetch_feeds", "robots_guard {\n verify {\n fetch_feeds lazy\n }\n}", `verify: fetch_feeds: must be "on_demand" or "at_start", got "lazy"`},
		{"crawl_delay scope", "robots_guard {\n crawl_delay {\n scope host\n }\n}", `crawl_delay: scope: must be "site" or "block", got "host"`},
		{"verify unknown", "robots_guard {\n verify {\n on_spoof deny\n }\n}", `verify: unknown subdirective "on_spoof"`},
		{"verify on_spoofed", "robots_guard {\n verify {\n on_spoofed block\n }\n}", `robots_guard: verify: on_spoofed: must be "deny" or "star", got "block"`},
		{"verify refresh", "robots_guard {\n verify {\n refresh 10m\n }\n}", `verify: refresh: must be at least 1h`},
		{"verify dns_timeout", "robots_guard {\n verify {\n dns_timeout soon\n }\n}", `verify: dns_timeout: "soon" is not a duration`},
		{"verify resolver", "robots_guard {\n verify {\n resolver 127.0.0.1\n }\n}", `verify: resolver`},
		{"verify builtin", "robots_guard {\n verify {\n builtin no\n }\n}", `verify: builtin: want on or off, got "no"`},
		{"verify empty registry", "robots_guard {\n verify {\n builtin off\n }\n}", `verify: operators: the registry is empty`},
		{"verify operator field", "robots_guard {\n verify {\n operator acme {\n token AcmeBot\n }\n }\n}", `verify: operator acme: unknown field "token"`},
		{"verify operator no tokens", "robots_guard {\n verify {\n operator acme {\n rdns acme.example\n }\n }\n}", `operator "acme": tokens: at least one product token (or signature agent) is required`},
		{"verify token clash", "robots_guard {\n verify {\n operator acme {\n tokens GPTBot\n }\n }\n}", `operator "acme": tokens: "GPTBot" is also a token of "openai"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g RobotsGuard
			err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.want == "" {
				// Zero means "default" for prefixes; it must be accepted.
				if err != nil {
					t.Fatalf("UnmarshalCaddyfile: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("UnmarshalCaddyfile accepted %q", tc.input)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestMovedSettings: every keyword of the earlier flat form fails with a
// message that names its new spelling, and the new spelling is read.
func TestMovedSettings(t *testing.T) {
	for old, to := range movedSettings {
		var g RobotsGuard
		err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser("robots_guard {\n " + old + " 1\n}"))
		if err == nil || !strings.Contains(err.Error(), old+" is now written \""+to+"\"") {
			t.Errorf("%s: %v, want its new spelling %q", old, err, to)
		}
		block, _, _ := strings.Cut(to, " ")
		if _, ok := movedSettings[block]; ok {
			t.Errorf("%s: moved to %q, itself a moved keyword", old, block)
		}
	}
}

// TestConfigCoversEveryField: the module's configuration is
// guard.Config itself, embedded and flattened, so that no field is
// declared twice; the Caddyfile sets every one of its settings, nested
// ones included, and the module's JSON is the engine's, both ways.
func TestConfigCoversEveryField(t *testing.T) {
	rt := reflect.TypeFor[RobotsGuard]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		if !f.Anonymous || f.Type != reflect.TypeFor[guard.Config]() || f.Tag != "" {
			t.Errorf("RobotsGuard.%s: the module's only exported field must be the embedded guard.Config, untagged", f.Name)
		}
	}
	var g RobotsGuard
	in := `robots_guard {
		robots_txt /r {
			refresh 2m
			fetch_timeout 3s
			on_unreachable allow
			max_sites 8
			max_bytes 64MiB
			new_sites_per_second 11
			site_names example.com
		}
		bots XyBot {
			empty_user_agent
			http_tools
			cache_size 9
			person_agents star
			undeclared report
			apps MyShopApp
		}
		verify {
			fetch_feeds at_start
		}
		crawl_delay {
			key group
			scope block
			tolerance 10%
			max_keys 7
		}
		clients {
			ipv4_prefix 24
			ipv6_prefix 56
		}
		traps /no-robots/ {
			grace 1h
			links static
			secret 0123456789abcdef0123
		}
		bans {
			for 2h
			max 4h
			after 5 1m
			max_entries 99
		}
		store redis redis://127.0.0.1:6379
		content_signals report
		licenses report {
			refresh 2h
			fetch_timeout 5s
			max_documents 3
			token_cache_size 77
		}
		dry_run
		log_query
	}`
	if err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
		t.Fatal(err)
	}
	mod, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := mustJSON(g.Config); string(mod) != cfg {
		t.Errorf("module JSON\n%s\ndiffers from guard.Config's\n%s", mod, cfg)
	}
	var set map[string]any
	json.Unmarshal(mod, &set)
	for _, f := range reflect.VisibleFields(reflect.TypeFor[guard.Config]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		v, ok := set[name]
		if !ok {
			t.Errorf("the Caddyfile sets no %s", name)
			continue
		}
		if f.Type.Kind() != reflect.Struct || name == "verify" || name == "store" {
			continue
		}
		m, _ := v.(map[string]any)
		n := f.Type.NumField()
		if name == "robots_txt" {
			n-- // origin excludes source: TestCheckCaddyfile sets it
		}
		if len(m) != n {
			t.Errorf("the Caddyfile sets %d fields of %s, %s has %d: %v", len(m), name, f.Type, n, m)
		}
	}
	// Back: the module reads its JSON into the same configuration (no
	// promoted UnmarshalJSON or field shadows the flattening).
	var back RobotsGuard
	if err := json.Unmarshal(mod, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Config, g.Config) {
		t.Errorf("JSON round trip:\n got %+v\nwant %+v", back.Config, g.Config)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
