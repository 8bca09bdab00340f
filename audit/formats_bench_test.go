package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/guard"
)

// benchFormats are the formats BenchmarkAuditFormats and
// TestBenchFormats write the benchmarks' requests in: every format the
// audit reads.
var benchFormats = []string{FormatCaddy, FormatCombined, FormatVhostCombined, FormatTraefik, FormatCloudflare, FormatHAProxy, FormatEnvoy, FormatCloudFront, FormatALB}

// benchRequest is one request of the benchmarks' logs, which formatLine
// writes in each format.
type benchRequest struct {
	// Seq numbers the request from 0; the formats' request IDs are made
	// of it.
	Seq int
	// At is when the request was made.
	At time.Time
	// Client is the client's address, Port its source port.
	Client string
	Port   int
	// Target is the request's path and query; UserAgent its User-Agent.
	Target, UserAgent string
}

// benchRequests returns the n requests of the benchmarks' logs: 10 ms
// apart from 2026-11-01, from 500 addresses, on allowed and disallowed
// paths, by browsers (two in three) and a bot. The host is example.com
// and the scheme https wherever a format carries them; every request is
// a GET answered with a 200 of 5120 bytes.
func benchRequests(n int) []benchRequest {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	uas := []string{chromeUA, "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1", "FooBot/1.0 (+https://foo.example/bot)"}
	paths := []string{"/", "/blog/2026/11/post-1?ref=home", "/private/x", "/static/site.css"}
	reqs := make([]benchRequest, n)
	for i := range reqs {
		reqs[i] = benchRequest{Seq: i, At: t0.Add(time.Duration(i) * 10 * time.Millisecond), Client: fmt.Sprintf("192.0.%d.%d", i%2, i%250),
			Port: 32768 + i%28000, Target: paths[i%len(paths)], UserAgent: uas[i%len(uas)]}
	}
	return reqs
}

// benchFormatLog is the log of reqs in format, one line each.
func benchFormatLog(format string, reqs []benchRequest) []byte {
	var b bytes.Buffer
	for _, r := range reqs {
		b.WriteString(formatLine(format, r))
	}
	return b.Bytes()
}

// jsonString is s as a JSON string, quotes included.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// formatLine writes r as a line of format, its newline included, with
// the fields a server of that format writes besides the ones the audit
// reads, so that the benchmark reads lines of a real log's length. The
// Combined line is the one benchLog has always written.
func formatLine(format string, r benchRequest) string {
	path, query, _ := strings.Cut(r.Target, "?")
	utc := r.At.UTC()
	switch format {
	case FormatCaddy:
		return fmt.Sprintf(`{"level":"info","ts":%d.%06d,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":%q,"remote_port":"%d","client_ip":%q,`+
			`"proto":"HTTP/1.1","method":"GET","host":"example.com","uri":%s,"headers":{"User-Agent":[%s],"Accept-Language":["en-US,en;q=0.9"],"Sec-Ch-Ua":["\"Chromium\";v=\"137\""],"Sec-Fetch-Mode":["navigate"],"Referer":["https://example.com/"],"Accept":["*/*"],"Accept-Encoding":["gzip, br"]},`+
			`"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"http/1.1","server_name":"example.com"}},"bytes_read":0,"user_id":"","duration":0.000912345,"size":5120,"status":200,`+
			`"resp_headers":{"Server":["Caddy"],"Content-Type":["text/html; charset=utf-8"]}}`+"\n",
			r.At.Unix(), r.At.Nanosecond()/1e3, r.Client, r.Port, r.Client, jsonString(r.Target), jsonString(r.UserAgent))
	case FormatCombined:
		return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" 200 5120 \"https://example.com/\" %q\n",
			r.Client, r.At.Format("02/Jan/2006:15:04:05 -0700"), r.Target, r.UserAgent)
	case FormatVhostCombined:
		return "example.com:443 " + formatLine(FormatCombined, r)
	case FormatTraefik:
		return fmt.Sprintf(`{"ClientAddr":"%s:%d","ClientHost":%q,"ClientPort":"%d","ClientUsername":"-","DownstreamContentSize":5120,"DownstreamStatus":200,"Duration":912345,`+
			`"OriginContentSize":5120,"OriginDuration":850000,"OriginStatus":200,"Overhead":62345,"RequestAddr":"example.com","RequestContentSize":0,"RequestCount":%d,`+
			`"RequestHost":"example.com","RequestMethod":"GET","RequestPath":%s,"RequestPort":"-","RequestProtocol":"HTTP/1.1","RequestScheme":"https","RetryAttempts":0,`+
			`"RouterName":"site@docker","ServiceAddr":"172.18.0.2:80","ServiceName":"site@docker","ServiceURL":"http://172.18.0.2:80","StartLocal":%q,"StartUTC":%q,`+
			`"TLSCipher":"TLS_AES_128_GCM_SHA256","TLSVersion":"1.3","entryPointName":"websecure","level":"info","msg":"","request_User-Agent":%s,"time":%q}`+"\n",
			r.Client, r.Port, r.Client, r.Port, r.Seq+1, jsonString(r.Target), r.At.Format(time.RFC3339Nano), utc.Format(time.RFC3339Nano),
			jsonString(r.UserAgent), r.At.Format(time.RFC3339))
	case FormatCloudflare:
		return fmt.Sprintf(`{"ClientIP":%q,"ClientRequestHost":"example.com","ClientRequestMethod":"GET","ClientRequestProtocol":"HTTP/1.1","ClientRequestReferer":"https://example.com/",`+
			`"ClientRequestScheme":"https","ClientRequestURI":%s,"ClientRequestUserAgent":%s,"EdgeEndTimestamp":%d,"EdgeResponseBytes":5120,"EdgeResponseStatus":200,`+
			`"EdgeStartTimestamp":%d,"RayID":"%016x"}`+"\n",
			r.Client, jsonString(r.Target), jsonString(r.UserAgent), r.At.Add(time.Millisecond).UnixNano(), r.At.UnixNano(), 0x3a6050bcbe120000+r.Seq)
	case FormatHAProxy:
		// The accept date is in the local time zone, as HAProxy writes
		// it; "web~" is a frontend that took the request over TLS.
		return fmt.Sprintf("%s:%d [%s] web~ web/s1 0/0/0/1/1 200 5120 - - ---- 1/1/0/0/0 0/0 {%s|example.com} \"GET %s HTTP/1.1\"\n",
			r.Client, r.Port, r.At.Local().Format("02/Jan/2006:15:04:05.000"), r.UserAgent, r.Target)
	case FormatEnvoy:
		return fmt.Sprintf("[%s] \"GET %s HTTP/1.1\" 200 - 0 5120 1 1 \"%s\" \"%s\" \"%08x-0000-4000-8000-%012x\" \"example.com\" \"10.0.2.1:80\"\n",
			utc.Format("2006-01-02T15:04:05.000Z"), r.Target, r.Client, r.UserAgent, r.Seq, r.Seq)
	case FormatCloudFront:
		// No "#Version" and "#Fields" header: every line is a request.
		if query == "" {
			query = "-"
		}
		return strings.Join([]string{utc.Format(time.DateOnly), utc.Format(time.TimeOnly), "LAX1", "5512", r.Client, "GET", "d111111abcdef8.cloudfront.net", path, "200",
			"https://example.com/", strings.ReplaceAll(r.UserAgent, " ", "%20"), query, "-", "Hit", fmt.Sprintf("SOX4xwn4XV6Q4rgb7XiVGOHms_%030d==", r.Seq), "example.com", "https",
			"23", "0.001", "-", "TLSv1.3", "TLS_AES_128_GCM_SHA256", "Hit", "HTTP/1.1", "-", "-", fmt.Sprint(r.Port), "0.001", "Hit", "text/html", "5120", "-", "-"}, "\t") + "\n"
	case FormatALB:
		// time is when the answer went, request_creation_time when the
		// request came.
		return fmt.Sprintf(`https %s app/my-loadbalancer/50dc6c495c0c9188 %s:%d 10.0.0.1:80 0.000 0.001 0.000 200 200 34 5120 "GET https://example.com:443%s HTTP/1.1" %q `+
			`TLS_AES_128_GCM_SHA256 TLSv1.3 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-%08x-%024x" "example.com" `+
			`"arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 0 %s "forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_%032x`+"\n",
			utc.Add(time.Millisecond).Format("2006-01-02T15:04:05.000000Z"), r.Client, r.Port, r.Target, r.UserAgent, r.At.Unix(), r.Seq,
			utc.Format("2006-01-02T15:04:05.000000Z"), r.Seq)
	}
	panic("formatLine: no format " + format)
}

// BenchmarkAuditFormats: lines per second through the whole audit, as
// BenchmarkAuditCombined measures them, of the same 200,000 requests
// written in each format the audit reads (the JSON formats are read
// from bytes by encoding/json, the others from text).
func BenchmarkAuditFormats(b *testing.B) {
	reqs := benchRequests(200000)
	for _, format := range benchFormats {
		b.Run(format, func(b *testing.B) {
			log := benchFormatLog(format, reqs)
			auditBench(b, format, log, len(reqs))
		})
	}
}

// TestBenchFormats: the benchmarks' lines of every format are entries,
// read with the format given and detected, each the request generated
// (its time to the format's precision, the host and scheme where the
// format carries them).
func TestBenchFormats(t *testing.T) {
	reqs := benchRequests(50)
	for _, format := range benchFormats {
		host, https, precision := "example.com", true, time.Millisecond
		switch format {
		case FormatCombined:
			host, https, precision = "", false, time.Second
		case FormatVhostCombined:
			host, precision = "example.com:443", time.Second
		case FormatALB:
			host = "example.com:443"
		case FormatEnvoy: // the default format tells no scheme
			https = false
		case FormatCloudFront:
			precision = time.Second
		case FormatCaddy:
			precision = time.Microsecond
		}
		log := benchFormatLog(format, reqs)
		for _, asked := range []string{format, FormatAuto} {
			a := newTestAuditor(t, guard.Config{}, Options{Format: asked, Site: "https://example.com"})
			if err := a.Read(context.Background(), bytes.NewReader(log), format+".log"); err != nil {
				t.Fatal(err)
			}
			if f := a.Result().Files[0]; f.Format != format || f.Lines != 50 || f.Entries != 50 || f.Malformed != 0 || f.NoUserAgent != 0 {
				t.Errorf("%s read as %s: file %+v", format, asked, f)
			}
		}
		a := newTestAuditor(t, guard.Config{}, Options{Format: format, Site: "https://example.com"})
		for i, line := range strings.SplitAfter(string(log), "\n")[:len(reqs)] {
			r := reqs[i]
			if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
				t.Fatalf("%s line %d is not one line: %q", format, i, line)
			}
			line = strings.TrimSuffix(line, "\n")
			if got := formatOf(FormatAuto, []byte(line)); got != format {
				t.Errorf("%s line %d is detected as %s", format, i, got)
			}
			e, err := a.parse(parserOf(format), []byte(line), line)
			want := Entry{At: e.At, ClientIP: r.Client, Method: "GET", Target: r.Target, Host: host, HTTPS: https, UserAgent: r.UserAgent, Status: 200}
			if format == FormatCaddy { // a browser's headers, as Caddy logs them
				want.Evidence = classify.Evidence{Read: true, AcceptLanguage: true, SecCHUA: true, SecFetchMode: true, Navigate: true}
			}
			if at := r.At.Truncate(precision).UnixNano(); e.At < at-1000 || e.At > at+1000 {
				t.Errorf("%s line %d: at %v, want %v", format, i, time.Unix(0, e.At).UTC(), r.At.Truncate(precision))
			}
			if err != nil || e != want {
				t.Errorf("%s line %d: %q:\n got %+v, %v\nwant %+v", format, i, line, e, err, want)
			}
		}
	}
}
