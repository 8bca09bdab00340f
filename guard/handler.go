package guard

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/identity"
)

// signedRequest returns the parts of r a Web Bot Auth signature covers,
// or nil when r carries no signature or signatures are not checked.
func (e *Engine) signedRequest(r *http.Request, scheme string) *identity.SignedRequest {
	if e.verifier == nil || !e.verifier.WebBotAuth() || len(r.Header["Signature-Input"]) == 0 {
		return nil
	}
	return signedRequestOf(r, scheme)
}

// signedRequestOf returns what a Web Bot Auth signature of r covers (front
// ends that fill Request themselves put it in Request.Signed).
func signedRequestOf(r *http.Request, scheme string) *identity.SignedRequest {
	u := r.URL
	return &identity.SignedRequest{Method: r.Method, Scheme: scheme, Authority: r.Host, Path: u.EscapedPath(), Query: u.RawQuery, Header: r.Header}
}

// DecideHTTP is Decide for an http.Request: it maps r as RequestOf does,
// in place, and decides it. The fronts (package nethttp, the Caddy module)
// call it.
func (e *Engine) DecideHTTP(r, orig *http.Request, clientIP string, origin http.Handler) Verdict {
	var req Request
	e.fillRequest(&req, r, orig, clientIP, origin)
	return e.decideReq(r.Context(), &req)
}

// RequestOf maps r to the Request that Decide takes: the one mapping of the
// net/http front (Handler) and the Caddy module. orig is the request as
// the client sent it, when the front end rewrote r before the guard
// (Caddy's original request): its RequestURI and URL are the target judged
// and the path and query a Web Bot Auth signature covers; nil means r. The
// rest comes from r. clientIP is the client's address as the front end
// resolved it (behind trusted proxies, the forwarded one); origin is the
// handler that serves the site, which the default robots.txt source asks.
// Fetch metadata is read only when traps are set, and the signature parts
// only when Web Bot Auth is on and r carries a signature.
func (e *Engine) RequestOf(r, orig *http.Request, clientIP string, origin http.Handler) Request {
	var req Request
	e.fillRequest(&req, r, orig, clientIP, origin)
	return req
}

// fillRequest is RequestOf into a zero Request.
func (e *Engine) fillRequest(req *Request, r, orig *http.Request, clientIP string, origin http.Handler) {
	if orig == nil {
		orig = r
	}
	req.Scheme = "http"
	if r.TLS != nil {
		req.Scheme = "https"
	}
	req.Target = orig.RequestURI
	if req.Target == "" && orig.URL != nil {
		req.Target = orig.URL.RequestURI()
	}
	if req.Target == "" {
		req.Target = r.URL.RequestURI()
	}
	req.Host, req.Port, req.Method = r.Host, localPort(r), r.Method
	req.Origin = origin
	e.fillHeader(req, r, clientIP)
	if req.Signed = e.signedRequest(r, req.Scheme); req.Signed != nil && orig != r && orig.URL != nil {
		// The signature covers the request as the client sent it: the
		// path before any rewrite.
		req.Signed.Path, req.Signed.Query = orig.URL.EscapedPath(), orig.URL.RawQuery
	}
}

// fillHeader fills in what req takes from r's header and connection.
func (e *Engine) fillHeader(req *Request, r *http.Request, clientIP string) {
	req.UserAgent, req.ClientIP = userAgent(r.Header), clientIP
	req.header, req.peer = r.Header, r.RemoteAddr
	if e.cfg.Bots.Undeclared != classify.UndeclaredOff {
		req.Evidence = classify.EvidenceOf(r.Header)
	}
	if e.lic != nil {
		if a := r.Header["Authorization"]; len(a) > 0 && len(a[0]) > 8 && strings.EqualFold(a[0][:8], "License ") {
			req.LicenseToken = strings.TrimSpace(a[0][8:])
		}
	}
	if e.traps != nil { // only traps read fetch metadata
		req.SecFetchSite = headerValue(r.Header, "Sec-Fetch-Site")
		req.SecFetchDest = headerValue(r.Header, "Sec-Fetch-Dest")
		if req.SecPurpose = headerValue(r.Header, "Sec-Purpose"); req.SecPurpose == "" {
			req.SecPurpose = headerValue(r.Header, "Purpose")
		}
	}
}

// Forwarded is the request a proxy holds when it asks the decision
// service about it (package nethttp's Check reads it from the proxy's
// headers): its method, scheme, Host and request-target as the client
// sent them to the proxy, and the port the proxy took it on.
type Forwarded struct {
	Method, Scheme, Host, Target string
	// Port is the proxy's own port for the request; 0 means the scheme's
	// default. As Request.Port, it makes one site of every spelling of
	// the Host header's port.
	Port int
}

// DecideForwarded is DecideHTTP for the decision service: f is the request
// a proxy asks about, r the proxy's question, whose header carries the
// client's User-Agent, fetch metadata and signature headers as the client
// sent them, and clientIP the client's address as the proxy forwarded it
// (from a proxy the front trusts). r's own method, host and target play no
// part; no origin handler is known, so the robots.txt source must be
// another than the default (robots_txt origin, a URL or a file).
func (e *Engine) DecideForwarded(r *http.Request, f *Forwarded, clientIP string) Verdict {
	req := Request{Scheme: f.Scheme, Host: f.Host, Port: f.Port, Target: f.Target, Method: f.Method}
	if req.Port == 0 {
		req.Port = 80
		if req.Scheme == "https" {
			req.Port = 443
		}
	}
	e.fillHeader(&req, r, clientIP)
	if r.Header.Get("X-Robots-Guard-Headers") != "all" {
		// The proxy may forward the client's User-Agent and a few
		// headers only: the absence of the others says nothing, and no
		// undeclared-bot rule applies. A recipe whose proxy forwards
		// them all says so (docs/proxies).
		req.Evidence = classify.Evidence{}
	}
	// The question's peer is the proxy that asks, trusted by the front
	// (and its X-Forwarded-For the client's address by contract), never
	// an untrusted proxy in front of the site.
	req.peer = ""
	if e.verifier != nil && e.verifier.WebBotAuth() && len(r.Header["Signature-Input"]) > 0 {
		path, query, _ := strings.Cut(f.Target, "?")
		req.Signed = &identity.SignedRequest{Method: f.Method, Scheme: req.Scheme, Authority: f.Host, Path: path, Query: query, Header: r.Header}
	}
	return e.decideReq(r.Context(), &req)
}

// localPort returns the port of the server's side of r's connection (from
// http.LocalAddrContextKey: TCP, or UDP for HTTP/3), or 0 when there is
// none (a Unix socket). Front ends put it into Request.Port.
func localPort(r *http.Request) int {
	switch a := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		return a.Port
	case *net.UDPAddr: // HTTP/3 (quic-go stores the UDP address)
		return a.Port
	}
	return 0
}

// userAgent returns the User-Agent header; the key is canonical already, so
// the map is read directly.
func userAgent(h http.Header) string {
	if v := h["User-Agent"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// retryAfterTexts are the Retry-After values of 0 to 3600 seconds, made
// once, so that a 429 does not format its number.
var retryAfterTexts = func() []string {
	t := make([]string, 3601)
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// retryAfterText returns the header value of secs seconds.
func retryAfterText(secs int64) string {
	if secs >= 0 && secs < int64(len(retryAfterTexts)) {
		return retryAfterTexts[secs]
	}
	return strconv.FormatInt(secs, 10)
}

// headerValue returns the first value of the canonical header key without
// allocating.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SetAnswerHeaders sets in h the headers of the answer to a request that
// v stops, whoever writes its body: Cache-Control: no-store (the answer
// depends on the User-Agent), Retry-After for a throttle or a ban, and
// Accept-Signature for an unsigned claim of an operator whose agents sign
// (verify.web_bot_auth.accept_signature). Respond sets them; a front that
// lets another handler write the answer (Caddy's handle_errors) sets them
// first.
func (e *Engine) SetAnswerHeaders(h http.Header, v Verdict) {
	h["Cache-Control"] = []string{"no-store"}
	SetLicenseHeaders(h, v)
	if e.acceptSig && v.Operator != "" && v.Method != identity.MethodSignature && e.verifier.SignsFor(v.Operator) {
		h["Accept-Signature"] = []string{`sig1=("@authority" "signature-agent";key="sig1");created;expires;tag="web-bot-auth"`}
	}
	switch {
	case v.Action == Throttle:
		h["Retry-After"] = []string{retryAfterText(v.RetryAfterSeconds())}
	case v.BanUntil != 0:
		secs := (v.BanUntil - e.now().UnixNano() + int64(time.Second) - 1) / int64(time.Second)
		h["Retry-After"] = []string{retryAfterText(max(secs, 1))}
	}
}

// SetLicenseHeaders sets on h what an answer to a bot on licensed content
// carries (RSL 1.0): a Link to the licence's RSL document, on every
// answer (the fronts set it before the site answers a request that
// passes); for ReasonLicense and ReasonLicenseUnavailable, enforced, the
// WWW-Authenticate: License challenge. Set again on the same header (the
// decision service sets them before Respond does), it adds no second
// Link.
func SetLicenseHeaders(h http.Header, v Verdict) {
	if v.License == "" {
		return
	}
	if link := "<" + v.License + `>; rel="license"; type="application/rsl+xml"`; !slices.Contains(h["Link"], link) {
		h["Link"] = append(h["Link"], link)
	}
	if v.Reason != ReasonLicense && v.Reason != ReasonLicenseUnavailable || !v.Enforced() {
		return // a dry run's answer is the site's: no challenge
	}
	// RSL's CAP guide answers a request without a token with
	// error="invalid_request" and this description.
	c := `License error="invalid_request", error_description="Access to this resource requires a valid license",`
	if v.LicenseError != "" {
		c = `License error="` + v.LicenseError + `", error_description=` + strconv.Quote(headerSafe(v.LicenseDetail)) + ","
	}
	h["Www-Authenticate"] = []string{c + ` authorization_uri="` + strings.TrimSuffix(v.LicenseServer, "/") + `/token"`}
}

// headerSafe is s without the bytes a header value cannot hold.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}

// Respond writes the answer to a request that v stops (v.Enforced()): 403
// or 429 with Retry-After and a short text body that no cache may keep.
// The fronts answer with it (package nethttp unless told otherwise).
func (e *Engine) Respond(w http.ResponseWriter, _ *http.Request, v Verdict) {
	// Each answer gets header values of its own: a handler after the
	// guard may rewrite a value in place (Caddy's header directive does,
	// when it is deferred).
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	e.SetAnswerHeaders(h, v)
	w.WriteHeader(v.StatusCode())
	bp := e.bufs.Get().(*respBuf)
	bp.b = append(v.AppendMessage(bp.b[:0]), '\n')
	_, _ = w.Write(bp.b)
	e.bufs.Put(bp)
}
