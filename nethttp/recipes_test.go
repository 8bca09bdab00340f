package nethttp

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The recipes of Traefik and Envoy, which cannot be run here
// (docs/proxies.md): their header lists are read from the files as
// shipped, and each proxy's handling of a question and its answer is
// played as its documentation (and its source) states it.

// forwardAuth is the part of Traefik's forwardAuth middleware the recipe
// sets (doc.traefik.io, reference/routing-configuration/http/middlewares/
// forwardauth; pkg/middlewares/auth/forward.go in Traefik v3).
type forwardAuth struct {
	Address                  string   `yaml:"address"`
	TrustForwardHeader       bool     `yaml:"trustForwardHeader"`
	AuthRequestHeaders       []string `yaml:"authRequestHeaders"`
	AuthResponseHeaders      []string `yaml:"authResponseHeaders"`
	AuthResponseHeadersRegex string   `yaml:"authResponseHeadersRegex"`
}

// traefikRecipe reads the robots-guard middleware of
// docs/proxies/traefik.yml.
func traefikRecipe(t *testing.T) forwardAuth {
	t.Helper()
	var doc struct {
		HTTP struct {
			Middlewares map[string]struct {
				ForwardAuth *forwardAuth `yaml:"forwardAuth"`
			} `yaml:"middlewares"`
		} `yaml:"http"`
	}
	readYAML(t, "../docs/proxies/traefik.yml", &doc)
	fa := doc.HTTP.Middlewares["robots-guard"].ForwardAuth
	if fa == nil {
		t.Fatal("traefik.yml: no forwardAuth middleware robots-guard")
	}
	return *fa
}

// envoyMatchers is an Envoy ListStringMatcher.
type envoyMatchers struct {
	Patterns []struct {
		Exact      *string                 `yaml:"exact"`
		Prefix     *string                 `yaml:"prefix"`
		Suffix     *string                 `yaml:"suffix"`
		Contains   *string                 `yaml:"contains"`
		SafeRegex  *struct{ Regex string } `yaml:"safe_regex"`
		IgnoreCase bool                    `yaml:"ignore_case"`
	} `yaml:"patterns"`
}

// match reports whether one of m's patterns matches the header name key
// (Envoy's are lower case), as Envoy's StringMatcher does.
func (m envoyMatchers) match(t *testing.T, key string) bool {
	for _, p := range m.Patterns {
		k, fold := key, func(s string) string { return s }
		if p.IgnoreCase {
			k, fold = strings.ToLower(key), strings.ToLower
		}
		switch {
		case p.Exact != nil:
			if k == fold(*p.Exact) {
				return true
			}
		case p.Prefix != nil:
			if strings.HasPrefix(k, fold(*p.Prefix)) {
				return true
			}
		case p.Suffix != nil:
			if strings.HasSuffix(k, fold(*p.Suffix)) {
				return true
			}
		case p.Contains != nil:
			if strings.Contains(k, fold(*p.Contains)) {
				return true
			}
		case p.SafeRegex != nil:
			if regexp.MustCompile(`^(?:` + p.SafeRegex.Regex + `)$`).MatchString(key) {
				return true
			}
		default:
			t.Fatalf("envoy.yaml: a string matcher this test does not read: %+v", p)
		}
	}
	return false
}

// extAuthz is the part of Envoy's ext_authz HTTP filter the recipe sets
// (api/envoy/extensions/filters/http/ext_authz/v3/ext_authz.proto).
type extAuthz struct {
	FailureModeAllow bool `yaml:"failure_mode_allow"`
	StatusOnError    struct {
		Code string `yaml:"code"`
	} `yaml:"status_on_error"`
	AllowedHeaders *envoyMatchers `yaml:"allowed_headers"` // the filter's own, which replaces authorization_request's
	HTTPService    struct {
		PathPrefix           string `yaml:"path_prefix"`
		AuthorizationRequest struct {
			AllowedHeaders envoyMatchers `yaml:"allowed_headers"`
		} `yaml:"authorization_request"`
		AuthorizationResponse struct {
			AllowedUpstreamHeaders        envoyMatchers  `yaml:"allowed_upstream_headers"`
			AllowedClientHeaders          *envoyMatchers `yaml:"allowed_client_headers"`
			AllowedClientHeadersOnSuccess envoyMatchers  `yaml:"allowed_client_headers_on_success"`
		} `yaml:"authorization_response"`
	} `yaml:"http_service"`
}

// envoyRecipe reads the ext_authz filter of docs/proxies/envoy.yaml.
func envoyRecipe(t *testing.T) extAuthz {
	t.Helper()
	var doc struct {
		StaticResources struct {
			Listeners []struct {
				FilterChains []struct {
					Filters []struct {
						TypedConfig struct {
							HTTPFilters []struct {
								Name        string   `yaml:"name"`
								TypedConfig extAuthz `yaml:"typed_config"`
							} `yaml:"http_filters"`
						} `yaml:"typed_config"`
					} `yaml:"filters"`
				} `yaml:"filter_chains"`
			} `yaml:"listeners"`
		} `yaml:"static_resources"`
	}
	readYAML(t, "../docs/proxies/envoy.yaml", &doc)
	var found []extAuthz
	for _, l := range doc.StaticResources.Listeners {
		for _, fc := range l.FilterChains {
			for _, f := range fc.Filters {
				for _, hf := range f.TypedConfig.HTTPFilters {
					if hf.Name == "envoy.filters.http.ext_authz" {
						found = append(found, hf.TypedConfig)
					}
				}
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("envoy.yaml: %d ext_authz filters, want 1", len(found))
	}
	return found[0]
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestRecipeHeaderLists: the header lists of the Traefik and Envoy
// recipes carry what the service reads and what its answers need to
// reach the client: to the service Authorization (a licence token) and
// the headers it judges by; to the client Envoy's refusal with
// WWW-Authenticate, Link and Retry-After, and its yes with the Link but
// not the trap link (a header would name the trap to the bot); to the
// site the trap link, and through Traefik the Link of a yes. An edit that
// drops one fails here.
func TestRecipeHeaderLists(t *testing.T) {
	fa := traefikRecipe(t)
	for _, want := range []string{"User-Agent", "Authorization", "Signature", "Signature-Input", "Signature-Agent", "Sec-Fetch-Dest"} {
		if !slices.ContainsFunc(fa.AuthRequestHeaders, func(h string) bool { return strings.EqualFold(h, want) }) {
			t.Errorf("traefik.yml: authRequestHeaders %q lacks %s", fa.AuthRequestHeaders, want)
		}
	}
	for _, h := range fa.AuthRequestHeaders {
		if strings.EqualFold(h, "X-Original-URI") || strings.EqualFold(h, "X-Original-Method") {
			t.Errorf("traefik.yml: authRequestHeaders passes %s, nginx's contract, which a client may send", h)
		}
	}
	if len(fa.AuthRequestHeaders) == 0 || fa.TrustForwardHeader {
		t.Errorf("traefik.yml: authRequestHeaders %q, trustForwardHeader %v: every client header, or the client's X-Forwarded-*, would reach the service",
			fa.AuthRequestHeaders, fa.TrustForwardHeader)
	}
	for _, want := range []string{"X-Robots-Guard-Trap-Link", "Link"} {
		if !slices.ContainsFunc(fa.AuthResponseHeaders, func(h string) bool { return strings.EqualFold(h, want) }) {
			t.Errorf("traefik.yml: authResponseHeaders %q lacks %s", fa.AuthResponseHeaders, want)
		}
	}

	ea := envoyRecipe(t)
	if ea.AllowedHeaders != nil {
		t.Fatal("envoy.yaml: the filter's allowed_headers is set: this test reads authorization_request's")
	}
	resp := ea.HTTPService.AuthorizationResponse
	for list, keys := range map[string]struct {
		m        *envoyMatchers
		yes, not []string
	}{
		"allowed_headers": {&ea.HTTPService.AuthorizationRequest.AllowedHeaders,
			[]string{"user-agent", "authorization", "signature", "signature-input", "signature-agent", "sec-fetch-dest", "x-forwarded-for", "x-forwarded-proto"},
			[]string{"x-original-uri", "x-forwarded-uri", "x-forwarded-host", "x-robots-guard-request-id"}},
		"allowed_client_headers": {resp.AllowedClientHeaders,
			[]string{"www-authenticate", "link", "retry-after", "content-type", "cache-control", "accept-signature", "x-robots-guard-status", "x-robots-guard-message"}, nil},
		"allowed_client_headers_on_success": {&resp.AllowedClientHeadersOnSuccess,
			[]string{"link"}, []string{"x-robots-guard-trap-link", "x-robots-guard-status"}},
		"allowed_upstream_headers": {&resp.AllowedUpstreamHeaders, []string{"x-robots-guard-trap-link"}, nil},
	} {
		if keys.m == nil {
			t.Errorf("envoy.yaml: %s is not set: Envoy would pass every header of a refusal", list)
			continue
		}
		for _, k := range keys.yes {
			if !keys.m.match(t, k) {
				t.Errorf("envoy.yaml: %s does not pass %s", list, k)
			}
		}
		for _, k := range keys.not {
			if keys.m.match(t, k) {
				t.Errorf("envoy.yaml: %s passes %s", list, k)
			}
		}
	}
	if ea.FailureModeAllow || ea.HTTPService.PathPrefix != "/check" {
		t.Errorf("envoy.yaml: failure_mode_allow %v, path_prefix %q; want false (fail closed), /check (check.Caddyfile's)",
			ea.FailureModeAllow, ea.HTTPService.PathPrefix)
	}
}

// client is a request a proxy holds, from 192.0.2.7 to example.com.
type client struct {
	target string
	header http.Header
}

// proxied is what becomes of a client's request at the proxy: refused
// (the client's answer, with header and body), or passed to the site with
// upstream set on its request and header added to its answer.
type proxied struct {
	passed   bool
	status   int
	header   http.Header
	body     string
	upstream http.Header
}

// throughTraefik plays forwardAuth (Traefik v3) with fa in front of the
// service h: the question is a GET of fa's address with the client's
// headers of authRequestHeaders and X-Forwarded-For, -Method, -Proto,
// -Host and -Uri; "If the service answers with a 2XX code, access is
// granted, and the original request is performed. Otherwise, the response
// from the authentication server is returned": its status, every header
// but the hop-by-hop ones, its body. On a 2xx the headers of
// authResponseHeaders are set on the request to the site, and none on the
// client's answer (but cookies of addAuthCookiesToResponse).
func throughTraefik(h http.Handler, fa forwardAuth, c client) proxied {
	q := httptest.NewRequest(http.MethodGet, fa.Address, nil)
	for _, name := range fa.AuthRequestHeaders {
		if v := c.header.Values(name); len(v) > 0 {
			q.Header[http.CanonicalHeaderKey(name)] = slices.Clone(v)
		}
	}
	q.Header.Set("X-Forwarded-For", "192.0.2.7")
	q.Header.Set("X-Forwarded-Method", http.MethodGet)
	q.Header.Set("X-Forwarded-Proto", "http")
	q.Header.Set("X-Forwarded-Host", "example.com")
	q.Header.Set("X-Forwarded-Uri", c.target)
	a := askRequest(h, q)
	if a.Code < 200 || a.Code >= 300 {
		hdr := a.Header().Clone()
		for _, hop := range []string{"Connection", "Keep-Alive", "Te", "Trailers", "Transfer-Encoding", "Upgrade"} {
			hdr.Del(hop)
		}
		return proxied{status: a.Code, header: hdr, body: a.Body.String()}
	}
	up := c.header.Clone()
	for _, name := range fa.AuthResponseHeaders {
		up.Del(name)
		if v := a.Header().Values(name); len(v) > 0 {
			up[http.CanonicalHeaderKey(name)] = slices.Clone(v)
		}
	}
	if fa.AuthResponseHeadersRegex != "" {
		re := regexp.MustCompile(fa.AuthResponseHeadersRegex)
		for name := range up {
			if re.MatchString(name) {
				delete(up, name)
			}
		}
		for name, v := range a.Header() {
			if re.MatchString(name) {
				up[name] = slices.Clone(v)
			}
		}
	}
	return proxied{passed: true, header: http.Header{}, upstream: up}
}

// envoyStatus is the code of an Envoy HttpStatus, by its enum name
// (api/envoy/type/v3/http_status.proto); unset, 403.
var envoyStatus = map[string]int{"": 403, "Forbidden": 403, "ServiceUnavailable": 503, "Unauthorized": 401, "InternalServerError": 500}

// throughEnvoy plays the ext_authz HTTP service with ea in front of h:
// the question has the client's method, its path after path_prefix, its
// Host, the headers that match allowed_headers and Authorization ("Host,
// Method, Path, Content-Length, and Authorization are automatically
// included") with Content-Length 0; X-Forwarded-For and -Proto are the
// connection manager's (use_remote_address). "On authorization response
// status HTTP 200 OK, the filter will allow traffic to the upstream",
// setting the answer's headers of allowed_upstream_headers on its request
// and adding those of allowed_client_headers_on_success to the client's
// answer; a 5xx is an error, answered status_on_error with no header or
// body; another status is the refusal, with its body and the headers of
// allowed_client_headers, to which Envoy adds WWW-Authenticate and
// Location.
func throughEnvoy(t *testing.T, h http.Handler, ea extAuthz, c client) proxied {
	q := httptest.NewRequest(http.MethodGet, "http://example.com"+ea.HTTPService.PathPrefix+c.target, nil)
	sent := c.header.Clone()
	sent.Set("X-Forwarded-For", "192.0.2.7")
	sent.Set("X-Forwarded-Proto", "http")
	for name, v := range sent {
		if k := strings.ToLower(name); k == "authorization" || ea.HTTPService.AuthorizationRequest.AllowedHeaders.match(t, k) {
			q.Header[name] = slices.Clone(v)
		}
	}
	q.Header.Set("Content-Length", "0")
	a := askRequest(h, q)
	resp := ea.HTTPService.AuthorizationResponse
	pick := func(m envoyMatchers) http.Header {
		out := http.Header{}
		for name, v := range a.Header() {
			if m.match(t, strings.ToLower(name)) {
				out[name] = slices.Clone(v)
			}
		}
		return out
	}
	switch {
	case a.Code == http.StatusOK:
		up := c.header.Clone()
		for name, v := range pick(resp.AllowedUpstreamHeaders) {
			up[name] = v
		}
		return proxied{passed: true, header: pick(resp.AllowedClientHeadersOnSuccess), upstream: up}
	case a.Code >= 500:
		code, ok := envoyStatus[ea.StatusOnError.Code]
		if !ok {
			t.Fatalf("envoy.yaml: status_on_error %q: a code this test does not know", ea.StatusOnError.Code)
		}
		return proxied{status: code, header: http.Header{}}
	}
	var hdr http.Header
	if resp.AllowedClientHeaders != nil {
		hdr = pick(*resp.AllowedClientHeaders)
		for _, name := range []string{"WWW-Authenticate", "Location"} {
			if v := a.Header().Values(name); len(v) > 0 {
				hdr[http.CanonicalHeaderKey(name)] = slices.Clone(v)
			}
		}
	} else {
		hdr = a.Header().Clone()
	}
	return proxied{status: a.Code, header: hdr, body: a.Body.String()}
}

// TestLicensesThroughRecipes: the Traefik and Envoy recipes as shipped,
// played as each proxy's documentation states, in front of the service on
// licensed content. Through both, a bot without a token gets the 401 with
// the License challenge and the Link (402 for a purchase); a valid token
// passes; a browser passes with neither. The Link of a yes reaches the
// client through Envoy (allowed_client_headers_on_success); forwardAuth
// adds no header to the client's answer, so through Traefik it reaches
// the site's request only. A token the service cannot check now (503):
// Traefik passes the 503 on as the service wrote it, Envoy answers its
// own 503 (status_on_error) with neither challenge nor Link.
func TestLicensesThroughRecipes(t *testing.T) {
	h, ls := licenseCheck(t)
	fa, ea := traefikRecipe(t), envoyRecipe(t)
	const link = `<http://example.com/license.xml>; rel="license"; type="application/rsl+xml"`
	challenge := noTokenChallenge(ls.URL)
	proxies := map[string]func(client) proxied{
		"traefik": func(c client) proxied { return throughTraefik(h, fa, c) },
		"envoy":   func(c client) proxied { return throughEnvoy(t, h, ea, c) },
	}
	hdr := func(ua, authorization string) http.Header {
		h := http.Header{"User-Agent": {ua}, "Accept": {"*/*"}}
		if authorization != "" {
			h.Set("Authorization", authorization)
		}
		return h
	}
	valid := "License " + ls.Token("http://example.com/", time.Hour)
	for proxy, through := range proxies {
		for _, c := range []struct {
			name            string
			req             client
			status          int    // 0: passed
			challenge, body string // parts of WWW-Authenticate and of the body, "" for none
			link            bool   // the client's answer carries the Link
		}{
			{"no token", client{"/articles/1", hdr(uaGPTBot, "")}, 401, challenge, "licen", true},
			{"a Bearer credential", client{"/articles/1", hdr(uaGPTBot, "Bearer abc")}, 401, challenge, "licen", true},
			{"a purchase", client{"/paid/x", hdr(uaGPTBot, "")}, 402, "License", "licen", true},
			{"a valid token", client{"/articles/2", hdr(uaGPTBot, valid)}, 0, "", "", proxy == "envoy"},
			{"a browser", client{"/articles/1", hdr(uaChrome, "")}, 0, "", "", false},
			{"disallowed", client{"/private/x", hdr(uaGPTBot, valid)}, 403, "", "Disallowed", false},
		} {
			got := through(c.req)
			if got.passed != (c.status == 0) || got.status != c.status || !strings.Contains(got.body, c.body) {
				t.Errorf("%s, %s: passed %v, %d %q; want %d with %q (0: passed)", proxy, c.name, got.passed, got.status, got.body, c.status, c.body)
			}
			if w := got.header.Values("WWW-Authenticate"); c.challenge == "" && len(w) > 0 || c.challenge != "" && (len(w) != 1 || !strings.Contains(w[0], c.challenge)) {
				t.Errorf("%s, %s: WWW-Authenticate %q; want one with %q", proxy, c.name, w, c.challenge)
			}
			var want []string
			if c.link {
				want = []string{link}
			}
			if !slices.Equal(got.header.Values("Link"), want) {
				t.Errorf("%s, %s: the client's Link %q; want %q", proxy, c.name, got.header.Values("Link"), want)
			}
			if got.passed && proxy == "traefik" && c.req.header.Get("User-Agent") != uaChrome && got.upstream.Get("Link") != link {
				t.Errorf("traefik, %s: the site's request has Link %q; want the licence's, for the site to copy", c.name, got.upstream.Get("Link"))
			}
			if got.header.Get("X-Robots-Guard-Trap-Link") != "" {
				t.Errorf("%s, %s: the client is told the trap link", proxy, c.name)
			}
		}
	}

	// A client's own Link never reaches the site as the service's.
	forged := client{"/other", hdr(uaGPTBot, "")}
	forged.header.Set("Link", "<http://evil.example/>; rel=\"license\"")
	if got := throughTraefik(h, fa, forged); !got.passed || got.upstream.Get("Link") != "" {
		t.Errorf("traefik, a client's Link on unlicensed content: passed %v, the site's request has Link %q", got.passed, got.upstream.Get("Link"))
	}

	ls.SetDown(true)
	opaque := client{"/articles/4", hdr(uaGPTBot, "License "+ls.Opaque("http://example.com/", time.Hour))}
	if got := throughTraefik(h, fa, opaque); got.status != 503 || got.header.Get("Link") != link ||
		!strings.Contains(got.header.Get("WWW-Authenticate"), `error="server_error"`) {
		t.Errorf("traefik, licence server down: %d %v; want the service's 503 with the challenge and the Link", got.status, got.header)
	}
	if got := throughEnvoy(t, h, ea, opaque); got.status != 503 || len(got.header) != 0 || got.body != "" {
		t.Errorf("envoy, licence server down: %d %v %q; want status_on_error's bare 503", got.status, got.header, got.body)
	}
}
