package license

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testlicense"
)

// FuzzParse checks that Parse never panics, that what it accepts keeps its
// promises, and that a matcher of it answers any target.
func FuzzParse(f *testing.F) {
	for _, s := range []string{specAIAll, specCAP, specScopes, benchDoc,
		`<rsl><content url="/a" server="http://[::1]:80"/></rsl>`,
		`<r:rsl xmlns:r="https://rslstandard.org/rsl"><r:content url="*.pdf$"><r:license><r:payment type="free"/></r:license></r:content></r:rsl>`,
		"<rsl><content url=\"/\"><license><permits type=\"usage\">a,b c</permits></license></content></rsl><!-- x -->",
		"<rsl>", "", "<?xml version=\"1.0\"?><rsl/>"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := Parse(body)
		if err != nil {
			if doc != nil {
				t.Fatal("a document and an error")
			}
			if !strings.HasPrefix(err.Error(), "rsl: ") {
				t.Fatalf("error %q without the rsl: prefix", err)
			}
			return
		}
		if len(doc.Contents) == 0 || len(doc.Contents) > MaxContents {
			t.Fatalf("%d contents", len(doc.Contents))
		}
		for i, c := range doc.Contents {
			if c.URL == "" || len(c.URL) > MaxURLLength {
				t.Fatalf("content %d: url %q", i, c.URL)
			}
			if c.Server != "" && checkServer(c.Server) != nil {
				t.Fatalf("content %d: server %q accepted", i, c.Server)
			}
		}
		for _, s := range []string{"https://example.com", "http://[::1]", "x"} {
			m := doc.For(s)
			for _, target := range []string{"/", "/a", "/robots.txt", "/x.pdf", "?q", "https://example.com/a"} {
				if c := m.Match(target); c != nil && describe(doc, c)[:7] != "content" {
					t.Fatalf("Match(%q) returned a foreign content", target)
				}
			}
		}
	})
}

// FuzzToken checks that Verify never panics on any token, that a token the
// server did not issue is refused as invalid (the server is up, so nothing
// else can fail), and that a malformed JWS is refused without any call to
// the server.
func FuzzToken(f *testing.F) {
	srv := testlicense.Start(f)
	valid := srv.Token(site, 24*time.Hour)
	for _, s := range []string{valid, testlicense.TamperSignature(valid), srv.Opaque(site, 24*time.Hour), "", "a.b.c", "..", "e30.e30.e30",
		"eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJFUzI1NiJ9.eyJleHAiOjEsImF1ZCI6IngifQ.c2ln", "a b", "abc==", "=",
		strings.Repeat("x", MaxTokenLength+1)} {
		f.Add(s)
	}
	v := NewVerifier(VerifierConfig{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, tok string) {
		before := srv.Requests("/key") + srv.Requests("/introspect")
		err := v.Verify(ctx, srv.URL, pageURL, tok)
		calls := srv.Requests("/key") + srv.Requests("/introspect") - before
		if err == nil {
			return // a token the server issued
		}
		if !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("Verify(%q): %v, want an invalid token", tok, err)
		}
		if looksLikeJWS(tok) {
			if _, perr := parseJWS(tok); perr != nil && calls != 0 {
				t.Fatalf("Verify(%q) called the server %d times for a malformed JWS (%v)", tok, calls, perr)
			}
		}
		if (tok == "" || len(tok) > MaxTokenLength || !looksLikeJWS(tok) && !isB64Token(tok)) && calls != 0 {
			t.Fatalf("Verify(%q) called the server for a malformed token", tok)
		}
	})
}
