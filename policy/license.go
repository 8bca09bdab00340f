package policy

import (
	"net/url"
	"strconv"
)

// maxLicenses bounds the License lines a Robots keeps; later ones are
// reported by Lint and ignored.
const maxLicenses = 16

// license handles a License line (RSL 1.0, SEMANTICS.md §8b): a global
// record, like Sitemap, wherever it stands; its value is the absolute URL
// of an RSL document. Several are allowed.
func (p *parser) license(n int, value string) {
	u, err := url.Parse(value)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		p.diag(n, Warning, "license-url", "License must be the absolute http:// or https:// URL of an RSL document; \""+value+"\" is ignored")
	case len(p.r.licenses) >= maxLicenses:
		p.diag(n, Warning, "too-many-licenses", "more than "+strconv.Itoa(maxLicenses)+" License lines: this one is ignored")
	default:
		p.r.licenses = append(p.r.licenses, value)
		if p.cur >= 0 && !p.blankSince {
			p.diag(n, Info, "license-global", "License is a global record: it applies to the whole site, not to the group above it")
		}
	}
}
