package robotscmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/report"
)

// TestPrintReportLicences: a site whose rows count licence decisions gets
// their columns, in both tables; a site without them does not.
func TestPrintReportLicences(t *testing.T) {
	rep := report.Report{Since: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Sites: []report.SiteReport{
		{Site: "https://licensed.example",
			LastHour: []report.ClientReport{{Client: "11.0.113.7/32", Group: "GPTBot", Verification: "verified", Denials: 1}},
			LastDay:  []report.ClientReport{{Client: "11.0.113.7/32", Group: "GPTBot", Verification: "verified", Denials: 1, Licensed: 7, Unlicensed: 2, InvalidTokens: 3, LicenseUnavailable: 4}}},
		{Site: "https://plain.example",
			LastDay: []report.ClientReport{{Client: "11.0.113.8/32", Group: "*", Verification: "none", Denials: 5}}},
	}}
	var out bytes.Buffer
	printReport(&out, rep)
	licensed, plain, _ := strings.Cut(out.String(), "https://plain.example")
	want := []string{"last hour:", "LICENSED  UNLICENSED  INVALID TOKEN  LICENSE UNAVAILABLE", "0         0           0              0",
		"last day:", "LICENSED  UNLICENSED  INVALID TOKEN  LICENSE UNAVAILABLE", "7         2           3              4"}
	if w, ok := containsInOrder(licensed, want); !ok {
		t.Errorf("the licensed site's tables lack %q:\n%s", w, licensed)
	}
	if strings.Contains(plain, "LICENSED") || !strings.Contains(plain, "UNATTRIBUTED") {
		t.Errorf("a site without licence decisions:\n%s", plain)
	}
}
