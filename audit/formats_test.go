package audit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// Samples of the proxies' and CDNs' logs, each from its documentation
// (no Apache, Traefik or Cloudflare runs here).
const (
	// vhostSample is the example line of Apache's mod_log_config
	// documentation (https://httpd.apache.org/docs/2.4/mod/mod_log_config.html,
	// "Combined Log Format") as Debian's apache2.conf vhost_combined
	// ("%v:%p %h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\"")
	// writes it.
	vhostSample = `www.example.com:443 127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"`
	// traefikSample is a line of Traefik's JSON access log with the
	// fields its documentation lists
	// (https://doc.traefik.io/traefik/observability/access-logs/,
	// "Limiting the Fields/Including Headers") and the User-Agent kept
	// (accessLog.fields.headers.names: User-Agent: keep).
	traefikSample = `{"ClientAddr":"192.0.2.10:54262","ClientHost":"192.0.2.10","ClientPort":"54262","ClientUsername":"-","DownstreamContentSize":19,"DownstreamStatus":200,"Duration":2318000,"OriginContentSize":19,"OriginDuration":2243000,"OriginStatus":200,"Overhead":75000,"RequestAddr":"whoami.example.com","RequestContentSize":0,"RequestCount":1,"RequestHost":"whoami.example.com","RequestMethod":"GET","RequestPath":"/private/a?b=1","RequestPort":"-","RequestProtocol":"HTTP/1.1","RequestScheme":"https","RetryAttempts":0,"RouterName":"whoami@docker","ServiceAddr":"172.18.0.2:80","ServiceName":"whoami@docker","ServiceURL":"http://172.18.0.2:80","StartLocal":"2026-10-10T13:55:36.123456789+02:00","StartUTC":"2026-10-10T11:55:36.123456789Z","TLSCipher":"TLS_AES_128_GCM_SHA256","TLSVersion":"1.3","entryPointName":"websecure","level":"info","msg":"","request_User-Agent":"FooBot/1.0","time":"2026-10-10T13:55:36+02:00"}`
	// cloudflareSample is the example of Cloudflare's Logpull
	// documentation (https://developers.cloudflare.com/logs/logpull/requesting-logs/),
	// the HTTP requests dataset's fields as Logpush writes them in JSON
	// with timestamps in unixnano.
	cloudflareSample = `{"ClientIP":"89.163.242.206","ClientRequestHost":"www.theburritobot.com","ClientRequestMethod":"GET","ClientRequestURI":"/static/img/testimonial-hipster.png","EdgeEndTimestamp":1506702504461999900,"EdgeResponseBytes":69045,"EdgeResponseStatus":200,"EdgeStartTimestamp":1506702504433000200,"RayID":"3a6050bcbe121a87"}`
)

// parseCase is a line, the Entry it is read as, or the words of its
// error.
type parseCase struct {
	name, line string
	want       Entry
	err        string
}

// checkParse runs cases through parse.
func checkParse(t *testing.T, parse func(string) (Entry, error), cases []parseCase) {
	t.Helper()
	for _, c := range cases {
		got, err := parse(c.line)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && got != c.want:
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// checkFormat fails unless each of lines, the first of a file, makes it
// one of format.
func checkFormat(t *testing.T, format string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if got := formatOf(FormatAuto, []byte(l)); got != format {
			t.Errorf("the format of %.30q: %s, want %s", l, got, format)
		}
	}
}

// testdataLines returns the lines of the file name in testdata.
func testdataLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestParseVhost: Apache's vhost_combined and "%v" first, the host the
// request's site, port 443 HTTPS.
func TestParseVhost(t *testing.T) {
	at := time.Date(2000, 10, 10, 13, 55, 36, 0, time.FixedZone("", -7*3600)).UnixNano()
	at26 := time.Date(2026, 10, 10, 13, 55, 36, 0, time.FixedZone("", -7*3600)).UnixNano()
	checkParse(t, parseVhost, []parseCase{
		{"documentation", vhostSample, Entry{At: at, ClientIP: "127.0.0.1", Method: "GET", Target: "/apache_pb.gif", Host: "www.example.com:443", HTTPS: true,
			Status: 200, UserAgent: "Mozilla/4.08 [en] (Win98; I ;Nav)"}, ""},
		{"port 80", `example.com:80 2001:db8::1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "Bot"`,
			Entry{At: at26, ClientIP: "2001:db8::1", Method: "GET", Target: "/x", Host: "example.com:80", Status: 200, UserAgent: "Bot"}, ""},
		{"no port", `example.com 192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 404 5`,
			Entry{At: at26, ClientIP: "192.0.2.1", Method: "GET", Target: "/x", Host: "example.com", Status: 404}, ""},
		{"no host", `- 192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5`, Entry{}, "no host name"},
		{"a path for a host", `/x 192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5`, Entry{}, "no host name"},
		{"combined", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "Bot"`, Entry{}, "not an IP address"},
		{"garbage", `hello`, Entry{}, "no virtual host"},
	})
}

// TestParseTraefik: Traefik's JSON access log; without the kept
// User-Agent header a request has none.
func TestParseTraefik(t *testing.T) {
	at := time.Date(2026, 10, 10, 11, 55, 36, 123456789, time.UTC).UnixNano()
	parse := func(s string) (Entry, error) { return parseTraefik([]byte(s)) }
	noUA := strings.Replace(traefikSample, `"request_User-Agent":"FooBot/1.0",`, "", 1)
	onlyAddr := `{"ClientAddr":"[2001:db8::5]:443","DownstreamStatus":403,"RequestHost":"-","RequestMethod":"HEAD","RequestPath":"/","time":"2026-10-10T13:55:36+02:00"}`
	checkParse(t, parse, []parseCase{
		{"documentation's fields", traefikSample, Entry{At: at, ClientIP: "192.0.2.10", Method: "GET", Target: "/private/a?b=1", Host: "whoami.example.com", HTTPS: true,
			Status: 200, UserAgent: "FooBot/1.0"}, ""},
		{"headers dropped", noUA, Entry{At: at, ClientIP: "192.0.2.10", Method: "GET", Target: "/private/a?b=1", Host: "whoami.example.com", HTTPS: true, Status: 200}, ""},
		{"ClientAddr and time", onlyAddr, Entry{At: at - 123456789, ClientIP: "2001:db8::5", Method: "HEAD", Target: "/", Status: 403}, ""},
		{"no path", `{"ClientHost":"192.0.2.1","RequestMethod":"GET","StartUTC":"2026-10-10T11:55:36Z"}`, Entry{}, "no StartUTC"},
		{"bad time", `{"ClientHost":"192.0.2.1","RequestMethod":"GET","RequestPath":"/","StartUTC":"yesterday"}`, Entry{}, "bad time"},
		{"old time", `{"ClientHost":"192.0.2.1","RequestMethod":"GET","RequestPath":"/","StartUTC":"0001-01-01T00:00:00Z"}`, Entry{}, "out of range"},
		{"host name", `{"ClientHost":"crawler.example","RequestMethod":"GET","RequestPath":"/","StartUTC":"2026-10-10T11:55:36Z"}`, Entry{}, "not an IP address"},
		{"cut", `{"ClientHost":`, Entry{}, "unexpected end"},
	})
}

// TestParseCloudflare: Cloudflare's HTTP requests dataset, its
// EdgeStartTimestamp in each of its formats.
func TestParseCloudflare(t *testing.T) {
	parse := func(s string) (Entry, error) { return parseCloudflare([]byte(s)) }
	doc := Entry{At: 1506702504433000200, ClientIP: "89.163.242.206", Method: "GET", Target: "/static/img/testimonial-hipster.png", Host: "www.theburritobot.com", Status: 200}
	with := func(ts string) string {
		return `{"ClientIP":"2001:db8::7","ClientRequestHost":"example.com","ClientRequestMethod":"GET","ClientRequestScheme":"https","ClientRequestURI":"/private/a",` +
			`"ClientRequestUserAgent":"FooBot/1.0","EdgeResponseStatus":403,"EdgeStartTimestamp":` + ts + `}`
	}
	at := time.Date(2026, 10, 10, 11, 55, 36, 0, time.UTC).UnixNano()
	want := Entry{At: at, ClientIP: "2001:db8::7", Method: "GET", Target: "/private/a", Host: "example.com", HTTPS: true, UserAgent: "FooBot/1.0", Status: 403}
	checkParse(t, parse, []parseCase{
		{"documentation", cloudflareSample, doc, ""},
		{"rfc3339", with(`"2026-10-10T11:55:36Z"`), want, ""},
		{"unix", with(fmt.Sprint(at / 1e9)), want, ""},
		{"unixnano", with(fmt.Sprint(at)), want, ""},
		{"milliseconds", with(fmt.Sprint(at / 1e6)), want, ""},
		{"negative", with(`-5`), Entry{}, "out of range"},
		{"far", with(`99999999999`), Entry{}, "out of range"},
		{"float", with(`1.5e9`), Entry{}, "bad time"},
		{"bad string", with(`"soon"`), Entry{}, "bad time"},
		{"no time", `{"ClientIP":"192.0.2.1","ClientRequestMethod":"GET","ClientRequestURI":"/"}`, Entry{}, "no EdgeStartTimestamp"},
		{"no client", `{"ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":1506702504}`, Entry{}, "not an IP address"},
	})
}

// TestFormatOf: each file's format from its first line.
func TestFormatOf(t *testing.T) {
	for line, want := range map[string]string{
		vhostSample:      FormatVhostCombined,
		traefikSample:    FormatTraefik,
		cloudflareSample: FormatCloudflare,
		`{"level":"info","ts":1795780545.5,"logger":"http.log.access","request":{}}`:                    FormatCaddy,
		`192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "Bot"`:                   FormatCombined,
		`crawler.example - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "Bot"`:             FormatCombined,
		`example.com:443 2001:db8::1 - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "Bot"`: FormatVhostCombined,
		`192.0.2.80 192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "Bot"`:        FormatVhostCombined,
		`hello`: FormatCombined,
	} {
		if got := formatOf(FormatAuto, []byte(line)); got != want {
			t.Errorf("%.40s: %s, want %s", line, got, want)
		}
	}
}

// TestAuditProxyLogs: each format's log read by detection and judged on
// the site the log names (with its scheme where the log tells it).
func TestAuditProxyLogs(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).UTC()
	logs := map[string]string{
		FormatVhostCombined: fmt.Sprintf("shop.example:443 192.0.2.9 - - [%s] \"GET /private/a HTTP/1.1\" 200 1 \"-\" \"FooBot/1.0\"\n", t0.Format("02/Jan/2006:15:04:05 -0700")),
		FormatTraefik: fmt.Sprintf(`{"ClientHost":"192.0.2.9","DownstreamStatus":200,"RequestHost":"shop.example","RequestMethod":"GET","RequestPath":"/private/a","RequestScheme":"https","StartUTC":%q,"request_User-Agent":"FooBot/1.0"}`+"\n",
			t0.Format(time.RFC3339Nano)),
		FormatCloudflare: fmt.Sprintf(`{"ClientIP":"192.0.2.9","ClientRequestHost":"shop.example","ClientRequestMethod":"GET","ClientRequestScheme":"https","ClientRequestURI":"/private/a","ClientRequestUserAgent":"FooBot/1.0","EdgeResponseStatus":200,"EdgeStartTimestamp":%q}`+"\n",
			t0.Format(time.RFC3339)),
		FormatALB: fmt.Sprintf(`https %s app/lb/1 192.0.2.9:1 10.0.0.1:80 0 0 0 200 200 1 1 "GET https://shop.example:443/private/a HTTP/1.1" "FooBot/1.0"`+"\n", t0.Format(time.RFC3339Nano)),
		FormatCloudFront: strings.Join([]string{t0.Format(time.DateOnly), t0.Format(time.TimeOnly), "LAX1", "1", "192.0.2.9", "GET", "d.cloudfront.net", "/private/a", "200", "-", "FooBot/1.0",
			"-", "-", "Hit", "x", "shop.example", "https"}, "\t") + "\n",
		FormatEnvoy: fmt.Sprintf(`[%s] "GET /private/a HTTP/1.1" 200 - 0 5 1 1 "192.0.2.9" "FooBot/1.0" "id" "shop.example" "-"`+"\n", t0.Format(time.RFC3339Nano)),
		FormatHAProxy: fmt.Sprintf(`192.0.2.9:4000 [%s] web~ web/s1 0/0/0/1/1 200 74 - - ---- 1/1/0/0/0 0/0 {FooBot/1.0|shop.example} "GET /private/a HTTP/1.1"`+"\n",
			t0.Local().Format("02/Jan/2006:15:04:05.000")),
	}
	for format, log := range logs {
		a := newTestAuditor(t, guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{Versions: []Version{{Name: "r", Body: []byte(robots)}}})
		if err := a.Read(context.Background(), strings.NewReader(log+log), format+".log"); err != nil {
			t.Fatal(err)
		}
		res := a.Result()
		if f := res.Files[0]; f.Format != format || f.Entries != 2 || f.Malformed != 0 {
			t.Errorf("%s: file %+v", format, f)
		}
		site := "https://shop.example"
		if format == FormatEnvoy { // the default format tells no scheme
			site = "http://shop.example"
		}
		if len(res.Sites) != 1 || res.Sites[0].Site != site || len(res.Sites[0].Offenders) != 1 || res.Sites[0].Offenders[0].Disallowed != 2 {
			t.Errorf("%s: sites %+v", format, res.Sites)
		}
	}
}

// FuzzParseProxyLogs: no line makes the proxies' parsers fail other than
// with an error, and a line one reads has a target, a method, a client
// address and a time from 1990 to 2200.
func FuzzParseProxyLogs(f *testing.F) {
	for _, s := range []string{vhostSample, traefikSample, cloudflareSample, envoySample, albHTTP, "2019-12-04\t21:02:31\tLAX1\t392\t192.0.2.100\tGET\td.net\t/\t200\t-\tBot%20\t-\t-\tHit\tx\t-\thttps", `127.0.0.1:45482 [28/Nov/2026:05:10:24.097] web web/<NOSRV> 0/-1/-1/-1/0 200 74 - - LR-- 1/1/0/0/0 0/0 {FooBot/1.0|h} "GET /a HTTP/1.1"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, parse := range []func(string) (Entry, error){parseVhost, parseHAProxy, parseEnvoy, parseCloudFront, parseALB,
			func(s string) (Entry, error) { return parseTraefik([]byte(s)) },
			func(s string) (Entry, error) { return parseCloudflare([]byte(s)) }} {
			e, err := parse(line)
			if err == nil && (e.Target == "" || e.Method == "" || e.ClientIP == "" || e.At < minTime || e.At >= maxTime) {
				t.Errorf("read %+v", e)
			}
		}
	})
}

// TestParseHAProxy: the lines HAProxy 2.6.12 (Debian 12) wrote with
// option httplog and the User-Agent and Host captured
// (testdata/haproxy.cfg says how), with its syslog header too, and the
// lines that are none. The accept date is read in the local time zone.
func TestParseHAProxy(t *testing.T) {
	real := testdataLines(t, "haproxy-2.6.log")
	at := func(ms int) int64 { return time.Date(2026, 11, 28, 5, 10, 24, ms*1e6, time.Local).UnixNano() }
	syslog := "<134>Nov 28 05:10:24 haproxy[4242]: 2001:db8::1:45482 [28/Nov/2026:05:10:24.097] web~ web/s1 0/0/0/1/1 301 74 - - ---- 1/1/0/0/0 0/0 {Bot/2|example.com} {text/html} \"GET / HTTP/2.0\""
	checkParse(t, parseHAProxy, []parseCase{
		{"haproxy 1", real[0], Entry{At: at(97), ClientIP: "127.0.0.1", Method: "GET", Target: "/a?b=1", Host: "127.0.0.1:18481", Status: 200,
			UserAgent: "FooBot/1.0 (+https://foo.example/bot)"}, ""},
		{"haproxy 2", real[1], Entry{At: at(110), ClientIP: "127.0.0.1", Method: "GET", Target: "/private/x", Host: "shop.example", Status: 403, UserAgent: googleUA}, ""},
		{"haproxy escapes", real[2], Entry{At: at(143), ClientIP: "127.0.0.1", Method: "GET", Target: "/%22x", Host: "127.0.0.1:18481", Status: 200, UserAgent: `Q"uote|Bot{1}`}, ""},
		{"haproxy no User-Agent", real[3], Entry{At: at(154), ClientIP: "127.0.0.1", Method: "HEAD", Target: "/", Host: "127.0.0.1:18481", Status: 200}, ""},
		{"syslog, TLS, IPv6", syslog, Entry{At: at(97), ClientIP: "2001:db8::1", Method: "GET", Target: "/", Host: "example.com", HTTPS: true, Status: 301, UserAgent: "Bot/2"}, ""},
		{"no capture", `192.0.2.1:1 [28/Nov/2026:05:10:24.097] web web/s1 0/0/0/1/1 200 74 - - ---- 1/1/0/0/0 0/0 "GET /x HTTP/1.1"`,
			Entry{At: at(97), ClientIP: "192.0.2.1", Method: "GET", Target: "/x", Status: 200}, ""},
		{"bad request", `192.0.2.1:1 [28/Nov/2026:05:10:24.097] web web/<NOSRV> -1/-1/-1/-1/0 400 0 - - PR-- 1/1/0/0/0 0/0 "<BADREQ>"`, Entry{}, "request line"},
		{"tcp log", `192.0.2.1:1 [28/Nov/2026:05:10:24.097] web web/s1 0/0/5 100 -- 1/1/0/0/0 0/0`, Entry{}, "no quoted request line"},
		{"bad date", `192.0.2.1:1 [31/Feb/2026:05:10:24.097] web web/s1 0/0/0/1/1 200 74 - - ---- 1/1/0/0/0 0/0 "GET /x HTTP/1.1"`, Entry{}, "bad time"},
		{"no port", `192.0.2.1 [28/Nov/2026:05:10:24.097] web web/s1 0/0/0/1/1 200 74 - - ---- 1/1/0/0/0 0/0 "GET /x HTTP/1.1"`, Entry{}, "no client address"},
		{"no status", `192.0.2.1:1 [28/Nov/2026:05:10:24.097] web web/s1 0/0/0/1/1 "GET /x HTTP/1.1"`, Entry{}, "no frontend"},
		{"combined", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "Bot"`, Entry{}, "no [accept date]"},
	})
	checkFormat(t, FormatHAProxy, real[0], syslog)
}

// envoySample is the example line of Envoy's documentation
// (https://www.envoyproxy.io/docs/envoy/latest/configuration/observability/access_log/usage,
// "Default format string").
const envoySample = `[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"`

// TestParseEnvoy: Envoy's default format, the client the last address
// of X-Forwarded-For.
func TestParseEnvoy(t *testing.T) {
	at := time.Date(2016, 4, 15, 20, 17, 0, 310e6, time.UTC).UnixNano()
	checkParse(t, parseEnvoy, []parseCase{
		{"documentation", envoySample, Entry{At: at, ClientIP: "10.0.35.28", Method: "POST", Target: "/api/v1/locations", Host: "locations", Status: 204, UserAgent: "nsq2http"}, ""},
		{"proxies before", `[2016-04-15T20:17:00.310Z] "GET /x HTTP/1.1" 200 - 0 5 1 1 "203.0.113.1, 2001:db8::9" "-" "id" "-" "-"`,
			Entry{At: at, ClientIP: "2001:db8::9", Method: "GET", Target: "/x", Status: 200}, ""},
		{"no X-Forwarded-For", `[2016-04-15T20:17:00.310Z] "GET /x HTTP/1.1" 200 - 0 5 1 1 "-" "Bot" "id" "a" "-"`, Entry{}, "not an IP address"},
		{"no response", `[2016-04-15T20:17:00.310Z] "GET /x HTTP/1.1" 0 DC 0 0 1 - "192.0.2.1" "Bot" "id" "a" "-"`, Entry{}, "no status"},
		{"cut", `[2016-04-15T20:17:00.310Z] "GET /x HTTP/1.1" 200 - 0 5 1 1 "192.0.2.1" "Bot`, Entry{}, "fewer quoted fields"},
		{"bad time", `[2016-04-15Tnoon] "GET /x HTTP/1.1" 200 - 0 5 1 1 "192.0.2.1" "Bot" "id" "a" "-"`, Entry{}, "bad time"},
		{"tcp", `[2016-04-15T20:17:00.310Z] "- - -" 0 - 0 0 1 - "-" "-" "-" "-" "10.0.2.1:80"`, Entry{}, "request line"},
		{"combined", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "Bot"`, Entry{}, "no [start time]"},
	})
	checkFormat(t, FormatEnvoy, envoySample)
}

// TestParseCloudFront: testdata/cloudfront.log is the example log file
// of CloudFront's standard logs reference
// (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/standard-logs-reference.html):
// its header lines skipped, the URL-encoded User-Agent decoded, the
// viewer's Host (x-host-header) the site.
func TestParseCloudFront(t *testing.T) {
	lines := testdataLines(t, "cloudfront.log")
	chrome78 := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/78.0.3904.108 Safari/537.36"
	swap := func(i int, to string) string {
		f := strings.Split(lines[2], "\t")
		f[i] = to
		return strings.Join(f, "\t")
	}
	checkParse(t, parseCloudFront, []parseCase{
		{"first request", lines[2], Entry{At: time.Date(2019, 12, 4, 21, 2, 31, 0, time.UTC).UnixNano(), ClientIP: "192.0.2.100", Method: "GET", Target: "/index.html",
			Host: "d111111abcdef8.cloudfront.net", HTTPS: true, Status: 200, UserAgent: chrome78}, ""},
		{"alternate domain", lines[5], Entry{At: time.Date(2019, 12, 13, 22, 36, 27, 0, time.UTC).UnixNano(), ClientIP: "192.0.2.200", Method: "GET", Target: "/favicon.ico",
			Host: "www.example.com", Status: 502, UserAgent: chrome78}, ""},
		{"query", swap(cfQuery, "a=1"), Entry{At: time.Date(2019, 12, 4, 21, 2, 31, 0, time.UTC).UnixNano(), ClientIP: "192.0.2.100", Method: "GET", Target: "/index.html?a=1",
			Host: "d111111abcdef8.cloudfront.net", HTTPS: true, Status: 200, UserAgent: chrome78}, ""},
		{"header", lines[0], Entry{}, "not an access log line"},
		{"fields", lines[1], Entry{}, "not an access log line"},
		{"bad date", swap(cfDate, "2019-02-31"), Entry{}, "bad time"},
		{"no status", swap(cfStatus, "000"), Entry{}, "no status"},
		{"no client", swap(cfClient, "-"), Entry{}, "not an IP address"},
		{"cut", strings.Join(strings.Split(lines[2], "\t")[:10], "\t"), Entry{}, "fewer tab-separated fields"},
	})
	checkFormat(t, FormatCloudFront, lines...)
}

// albHTTP and albHTTPS are the example entries of the ALB access logs
// documentation
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-access-logs.html,
// "Example HTTP entry", "Example HTTPS entry").
const (
	albHTTP  = `http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_1234abcd5678ef90`
	albHTTPS = `https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/p?q=1 HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_1234abcd5678ef90`
)

// TestParseALB: an ALB's access log, the site and scheme from the
// request's URL, the time when the request came.
func TestParseALB(t *testing.T) {
	at := time.Date(2018, 7, 2, 22, 22, 48, 364e6, time.UTC).UnixNano()
	checkParse(t, parseALB, []parseCase{
		{"http", albHTTP, Entry{At: at, ClientIP: "192.168.131.39", Method: "GET", Target: "/", Host: "www.example.com:80", Status: 200, UserAgent: "curl/7.46.0"}, ""},
		{"https", albHTTPS, Entry{At: at, ClientIP: "192.168.131.39", Method: "GET", Target: "/p?q=1", Host: "www.example.com:443", HTTPS: true, Status: 200, UserAgent: "curl/7.46.0"}, ""},
		{"old fields only", `h2 2018-07-02T22:23:00.186641Z app/lb/1 [2001:db8::1]:2817 10.0.0.1:80 0 0 0 403 403 1 1 "GET https://a.example:443 HTTP/2.0" "-"`,
			Entry{At: time.Date(2018, 7, 2, 22, 23, 0, 186641e3, time.UTC).UnixNano(), ClientIP: "2001:db8::1", Method: "GET", Target: "/", Host: "a.example:443", HTTPS: true, Status: 403}, ""},
		{"dropped", strings.Replace(albHTTP, " 200 200 ", " - - ", 1), Entry{}, "no elb_status_code"},
		{"bad request", strings.Replace(albHTTP, "GET http://www.example.com:80/ HTTP/1.1", "- - - ", 1), Entry{}, "is not METHOD URL PROTOCOL"},
		{"cut", albHTTP[:120], Entry{}, "fewer fields"},
		{"no port", strings.Replace(albHTTP, "192.168.131.39:2817", "192.168.131.39", 1), Entry{}, "no client"},
	})
	checkFormat(t, FormatALB, albHTTP, albHTTPS)
}

// TestHAProxyLive: the haproxy installed here (skipped without one),
// run with testdata/haproxy.cfg on a free loopback port, writes lines
// the parser reads as the requests made.
func TestHAProxyLive(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("no haproxy")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg, err := os.ReadFile("testdata/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, logPath := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "haproxy.log")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(cfg), "127.0.0.1:18481", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-f", path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	before := time.Now().Add(-time.Second).UnixNano()
	req, _ := http.NewRequest("GET", "http://"+addr+"/private/x?y=1", nil)
	req.Host, req.Header["User-Agent"] = "shop.example", []string{"FooBot/1.0 (+https://foo.example/bot)"}
	var resp *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err = http.DefaultClient.Do(req); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var line string
	for deadline := time.Now().Add(5 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		line, _, _ = strings.Cut(string(b), "\n")
	}
	e, err := parseHAProxy(line)
	want := Entry{At: e.At, ClientIP: "127.0.0.1", Method: "GET", Target: "/private/x?y=1", Host: "shop.example", Status: 403, UserAgent: "FooBot/1.0 (+https://foo.example/bot)"}
	if err != nil || e != want || e.At < before || e.At > time.Now().UnixNano() {
		t.Errorf("%q:\n got %+v, %v\nwant %+v", line, e, err, want)
	}
}
