package integration_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
)

// TestPeoplesSoftwareThroughCaddy: the headers of issue 45
// (testdata/useragents/issue45.jsonl) through the built Caddy, on a path
// that robots.txt disallows for "*". People's apps (Dillo, VLC, mpv, Dart,
// Apple News, ...) get the page; feed readers, link previews from a
// person's device and Gmail's image proxy get it too, as person agents
// that "*" does not bind, while a group that names one applies
// (WhatsApp's); under bots { person_agents star } those agents answer to
// "*" as crawlers, and people's apps still pass. Monitoring, screenshot and
// translation services, and HTTP tools that give a crawler's contact
// page, get 403.
func TestPeoplesSoftwareThroughCaddy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built Caddy")
	}
	named := newUpstream(t, "User-agent: *\nDisallow: /private/\n\nUser-agent: WhatsApp\nDisallow: /nowa/\n")
	plain := newUpstream(t, "User-agent: *\nDisallow: /private/\n")
	own, star := freePort(t), freePort(t)
	site := func(port int, up *upstream, bots string) string {
		return fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\tverify off\n%s\t}\n\treverse_proxy %s\n}\n", port, bots, up.addr())
	}
	runCaddyfile(t, "{\n\tadmin off\n\tpersist_config off\n}\n"+site(own, named, "")+site(star, plain, "\t\tbots {\n\t\t\tperson_agents star\n\t\t}\n"), own, star)
	status := func(port int, path, ua string) int {
		t.Helper()
		return browserGet(t, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), ua).status
	}
	f, err := os.Open("../testdata/useragents/issue45.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var h struct{ UA, Kind string }
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		wantOwn, wantStar := http.StatusOK, http.StatusOK
		switch h.Kind {
		case "bot":
			wantOwn, wantStar = http.StatusForbidden, http.StatusForbidden
		case "person":
		default: // a person agent: "*" binds it only under person_agents star
			wantStar = http.StatusForbidden
		}
		if got := status(own, "/private/x", h.UA); got != wantOwn {
			t.Errorf("%s (%s) on a path * disallows: %d, want %d", h.UA, h.Kind, got, wantOwn)
		}
		if got := status(star, "/private/x", h.UA); got != wantStar {
			t.Errorf("person_agents star: %s (%s): %d, want %d", h.UA, h.Kind, got, wantStar)
		}
	}
	if n < 29 {
		t.Fatalf("%d headers in issue45.jsonl, want the issue's 29", n)
	}
	if got := status(own, "/nowa/x", "WhatsApp/2.24.22.79 A"); got != http.StatusForbidden {
		t.Errorf("WhatsApp's link preview under a group that names it: %d, want 403", got)
	}
}
