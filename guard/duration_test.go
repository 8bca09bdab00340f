package guard

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
)

// TestConfigDurationsTakeDays: every duration of Config reads "1d" in JSON
// (they used to differ from the Caddy module's top-level ones).
func TestConfigDurationsTakeDays(t *testing.T) {
	var c Config
	in := `{"robots_txt":{"refresh":"1d","fetch_timeout":"1d"},"traps":{"grace":"1d"},
		"bans":{"for":"1d","max":"1d","after":{"denials":2,"window":"1d"}},
		"verify":{"refresh":"1d","dns_timeout":"1d","web_bot_auth":{"max_window":"1d"}},
		"store":{"redis":"redis://127.0.0.1:6379","timeout":"1d"}}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	const day = duration.Duration(24 * time.Hour)
	for name, d := range map[string]duration.Duration{
		"robots_txt.refresh": c.RobotsTxt.Refresh, "robots_txt.fetch_timeout": c.RobotsTxt.FetchTimeout, "traps.grace": *c.Traps.Grace,
		"bans.for": c.Bans.For, "bans.max": c.Bans.Max, "bans.after.window": c.Bans.After.Window,
		"verify.refresh": c.Verify.Refresh, "verify.dns_timeout": c.Verify.DNSTimeout,
		"verify.web_bot_auth.max_window": c.Verify.WebBotAuth.MaxWindow, "store.timeout": c.Store.Timeout,
	} {
		if d != day {
			t.Errorf("%s = %v, want 24h", name, time.Duration(d))
		}
	}
}
