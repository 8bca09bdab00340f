package testlicense

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, s *Server, path string, form url.Values, user, pass string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, m
}

func TestTokenEndpoint(t *testing.T) {
	s := Start(t)
	s.Client("crawler", "s3cret")
	good := url.Values{"grant_type": {"client_credentials"}, "client_id": {"crawler"}, "client_secret": {"s3cret"},
		"resource": {"https://example.com/articles/*"}}
	status, m := post(t, s, "/token", good, "", "")
	if status != 200 || m["token_type"] != "License" || m["expires_in"] != float64(3600) {
		t.Fatalf("/token: %d %v", status, m)
	}
	tok, _ := m["access_token"].(string)
	// The token introspects as active for the resource's prefix.
	status, m = post(t, s, "/introspect", url.Values{"token": {tok}, "resource": {"https://example.com/articles/x"}}, "", "")
	if status != 200 || m["active"] != true || m["aud"] != "https://example.com/articles/" || m["permitted"] != true {
		t.Errorf("/introspect: %d %v", status, m)
	}
	_, m = post(t, s, "/introspect", url.Values{"token": {tok}, "resource": {"https://example.com/news"}}, "", "")
	if m["permitted"] != false {
		t.Errorf("/introspect of another resource: %v", m)
	}
	// HTTP Basic works too.
	basic := url.Values{"grant_type": {"client_credentials"}, "resource": {"https://example.com/"}}
	if status, m = post(t, s, "/token", basic, "crawler", "s3cret"); status != 200 {
		t.Errorf("/token with Basic: %d %v", status, m)
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"wrong secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {"crawler"}, "client_secret": {"x"}, "resource": {"https://example.com/"}}, 401, "invalid_client"},
		{"unknown client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"x"}, "client_secret": {"s3cret"}, "resource": {"https://example.com/"}}, 401, "invalid_client"},
		{"no grant", url.Values{"client_id": {"crawler"}, "client_secret": {"s3cret"}, "resource": {"https://example.com/"}}, 400, "invalid_request"},
		{"other grant", url.Values{"grant_type": {"password"}, "client_id": {"crawler"}, "client_secret": {"s3cret"}, "resource": {"https://example.com/"}}, 400, "unsupported_grant_type"},
		{"no resource", url.Values{"grant_type": {"client_credentials"}, "client_id": {"crawler"}, "client_secret": {"s3cret"}}, 400, "invalid_request"},
		{"path resource", url.Values{"grant_type": {"client_credentials"}, "client_id": {"crawler"}, "client_secret": {"s3cret"}, "resource": {"/articles/*"}}, 400, "invalid_resource"},
	} {
		status, m := post(t, s, "/token", tc.form, "", "")
		if status != tc.status || m["error"] != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, status, m, tc.status, tc.code)
		}
	}
	if n := s.Requests("/token"); n != 8 {
		t.Errorf("Requests(/token) = %d, want 8", n)
	}
}

func TestIntrospectOpaque(t *testing.T) {
	s := Start(t)
	tok := s.Opaque("https://example.com", time.Hour)
	if _, m := post(t, s, "/introspect", url.Values{"token": {tok}}, "", ""); m["active"] != true || m["aud"] != "https://example.com" {
		t.Errorf("active token: %v", m)
	}
	for _, bad := range []string{"nope", s.Opaque("https://example.com", -time.Second), s.Token("https://example.com", -time.Second)} {
		if _, m := post(t, s, "/introspect", url.Values{"token": {bad}}, "", ""); m["active"] != false {
			t.Errorf("%q: %v", bad, m)
		}
	}
}

func TestKeysAndRotation(t *testing.T) {
	s := Start(t)
	keys := func() []string {
		resp, err := http.Get(s.URL + "/key")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var set struct {
			Keys []struct {
				Kid, Kty, Crv, Alg string
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			t.Fatal(err)
		}
		var kids []string
		for _, k := range set.Keys {
			if k.Kty != "EC" || k.Crv != "P-256" || k.Alg != "ES256" {
				t.Errorf("key %+v", k)
			}
			kids = append(kids, k.Kid)
		}
		return kids
	}
	first := s.KeyID()
	if got := keys(); len(got) != 1 || got[0] != first {
		t.Fatalf("keys %v, want [%s]", got, first)
	}
	s.Rotate()
	second := s.KeyID()
	if got := keys(); len(got) != 2 || got[0] != second || got[1] != first {
		t.Fatalf("keys after Rotate %v, want [%s %s]", got, second, first)
	}
	s.Rotate()
	if got := keys(); len(got) != 2 || got[1] != second {
		t.Fatalf("keys after two Rotates %v", got)
	}
	if n := s.Requests("/key"); n != 3 {
		t.Errorf("Requests(/key) = %d, want 3", n)
	}
}

func TestSetDown(t *testing.T) {
	s := Start(t)
	s.SetDown(true)
	if status, m := post(t, s, "/introspect", url.Values{"token": {"x"}}, "", ""); status != 503 {
		t.Errorf("down: %d %v", status, m)
	}
	s.SetDown(false)
	if status, _ := post(t, s, "/introspect", url.Values{"token": {"x"}}, "", ""); status != 200 {
		t.Errorf("up: %d", status)
	}
	if n := s.Requests("/introspect"); n != 2 {
		t.Errorf("Requests = %d, want 2", n)
	}
}
