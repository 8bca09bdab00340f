package nethttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/nethttp"
)

// The site serves its own robots.txt; the guard reads it through the mux and
// enforces it on bots, while browsers pass.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: GPTBot\nDisallow: /private/\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})

	e, err := guard.New(guard.Config{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	site := nethttp.Handler(e, mux) // e.g. http.ListenAndServe(":8080", site)

	for _, ua := range []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
	} {
		req := httptest.NewRequest("GET", "/private/report", nil)
		req.Header.Set("User-Agent", ua)
		req.Header.Set("Accept-Language", "en-US,en;q=0.9") // every browser sends one
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 hello
	// 403 Disallowed by robots.txt line 2 for GPTBot
}
