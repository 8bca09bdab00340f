// Command signedload measures what garbage Web Bot Auth signatures cost a
// real Caddy: one site with robots_guard and web_bot_auth on (an agent's
// key pinned), and bot requests with 1 KB and 16 KB of headers, unsigned,
// with garbage signature headers under a key nobody has (24 covered
// components, repeated header lines), and with the same garbage under the
// pinned key's id (key ids are public), which costs one verification. The
// figure is Caddy's CPU time per request (user + system), with Caddy
// pinned to one core and this program to the other, as in ./loadtest.
//
// Run it from the bench directory (it builds ../cmd/caddy):
//
//	go run ./signedload                 # 3 rounds of 5 s per phase
//	go run ./signedload -d 10s -rounds 5
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/bench/internal/caddyrun"
	"github.com/robotsguard/robotsguard/internal/testkeys"
)

const (
	robotsTxt = "User-agent: AcmeBot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /admin/\n"
	page      = "<!doctype html><title>page</title><p>A small page.</p>\n"
	botUA     = "AcmeBot/2.0 (+https://bot.acme.example)"
)

func main() {
	dur := flag.Duration("d", 5*time.Second, "duration of one phase")
	rounds := flag.Int("rounds", 3, "rounds of the phases")
	conc := flag.Int("c", 50, "concurrent keep-alive clients")
	caddyCPU := flag.Int("caddy-cpu", 0, "core Caddy is pinned to; this program takes the others")
	flag.Parse()
	if err := run(*dur, *rounds, *conc, *caddyCPU); err != nil {
		fmt.Fprintln(os.Stderr, "signedload:", err)
		os.Exit(1)
	}
}

// header returns a bot request's header with size bytes of X-Pad lines and,
// unless keyid is empty, garbage signature headers under keyid.
func header(size int, keyid string) http.Header {
	h := http.Header{"User-Agent": {botUA}}
	for i, n := 0, 0; n < size; i++ {
		v := fmt.Sprintf("%06d%s", i, strings.Repeat("v", 84))
		h.Add("X-Pad", v)
		n += len("X-Pad: \r\n") + len(v)
	}
	if keyid == "" {
		return h
	}
	now := time.Now()
	comps := `"@authority" "signature-agent"`
	for i := range 22 {
		comps += fmt.Sprintf(` "x-pad";bs;n=%d`, i)
	}
	h.Set("Signature-Agent", `"https://bot.acme.example"`)
	h.Set("Signature-Input", fmt.Sprintf(`sig1=(%s);created=%d;expires=%d;keyid=%q;alg="ed25519";tag="web-bot-auth"`,
		comps, now.Unix(), now.Add(time.Hour).Unix(), keyid))
	h.Set("Signature", "sig1=:"+strings.Repeat("A", 86)+"==:")
	return h
}

func run(dur time.Duration, rounds, conc, caddyCPU int) error {
	taskset, others, err := caddyrun.PinAway(caddyCPU)
	if err != nil {
		return err
	}
	tmp, bin, upstream, cleanup, err := caddyrun.Setup("signedload", robotsTxt, page)
	if err != nil {
		return err
	}
	defer cleanup()
	keyFile := filepath.Join(tmp, "acme.jwk")
	if err := os.WriteFile(keyFile, testkeys.PublicJWK, 0o644); err != nil {
		return err
	}
	port := caddyrun.FreePort()
	caddyfile := fmt.Sprintf(`{
	admin off
	persist_config off
	storage file_system %[1]s/storage
}

http://127.0.0.1:%[2]d {
	robots_guard {
		verify {
			builtin off
			operator acme {
				tokens AcmeBot
				signature_agents https://bot.acme.example
			}
			web_bot_auth {
				agent https://bot.acme.example acme {
					key %[3]s
				}
			}
		}
	}
	reverse_proxy %[4]s
}
`, tmp, port, keyFile, upstream)
	pid, stop, err := caddyrun.Start(bin, tmp, caddyfile, taskset, caddyCPU)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2, DisableCompression: true}, Timeout: 10 * time.Second}
	if err := caddyrun.WaitUp(client, port); err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/page", port)
	type phase struct {
		name string
		h    http.Header
	}
	var phases []phase
	sizes := []int{1 << 10, 16 << 10}
	for _, size := range sizes {
		phases = append(phases,
			phase{fmt.Sprintf("%d KB, unsigned", size>>10), header(size, "")},
			phase{fmt.Sprintf("%d KB, garbage", size>>10), header(size, "nobody-has-this-key")},
			phase{fmt.Sprintf("%d KB, garbage, pinned key id", size>>10), header(size, testkeys.Thumbprint)})
	}
	for _, p := range phases {
		caddyrun.Load(client, url, p.h, conc, time.Second) // warm up
	}
	fmt.Printf("Caddy pid %d on core %d, load on cores %s, %d clients, %d rounds × %s per phase\n",
		pid, caddyCPU, strings.Join(others, ","), conc, rounds, dur)
	reqs := make([]int64, len(phases))
	cpu := make([]time.Duration, len(phases))
	for r := range rounds {
		for i, p := range phases {
			before, err := caddyrun.CPUTime(pid)
			if err != nil {
				return err
			}
			n, bad := caddyrun.Load(client, url, p.h, conc, dur)
			after, err := caddyrun.CPUTime(pid)
			if err != nil {
				return err
			}
			if bad > 0 {
				return fmt.Errorf("%s: %d requests failed or got a status other than 200", p.name, bad)
			}
			reqs[i] += n
			cpu[i] += after - before
			fmt.Printf("  round %d %-32s %8d req  %7.0f req/s  %6.1f µs CPU/req\n", r+1, p.name, n,
				float64(n)/dur.Seconds(), float64((after-before).Microseconds())/float64(n))
		}
	}
	per := func(i int) float64 { return float64(cpu[i].Nanoseconds()) / 1e3 / float64(reqs[i]) }
	fmt.Println()
	fmt.Println("| headers | unsigned µs CPU/req | garbage, unknown key (ratio) | garbage, pinned key id (ratio) |")
	fmt.Println("|---|--:|--:|--:|")
	for i := 0; i < len(phases); i += 3 {
		fmt.Printf("| %d KB | %.1f | %.1f (%.2f×) | %.1f (%.2f×) |\n", sizes[i/3]>>10, per(i), per(i+1), per(i+1)/per(i), per(i+2), per(i+2)/per(i))
	}
	return nil
}
