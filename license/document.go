package license

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Limits applied by Parse.
const (
	// MaxDocumentBytes is the largest RSL document Parse reads; a longer
	// one is an error.
	MaxDocumentBytes = 512 << 10

	// MaxContents is the largest number of <content> elements a document
	// may hold; a document with more is an error.
	MaxContents = 1000

	// MaxURLLength is the longest url or server attribute Parse accepts,
	// in bytes.
	MaxURLLength = 2048

	// maxLicenses is the largest number of <license> elements of one
	// content; a content with more is an error.
	maxLicenses = 16

	// maxUsages is the largest number of distinct usage values outside
	// RSL 1.0's six that a licence's permits (or prohibits) keep; later
	// ones are dropped (they cover no purpose): each request of a bot on
	// licensed content reads the list (Terms.Grants).
	maxUsages = 16

	// maxText is the longest text of a <permits> or <prohibits> element
	// and the longest value of any other attribute read.
	maxText = 4096

	// maxDepth is the deepest element nesting Parse accepts.
	maxDepth = 64
)

// Namespace is the XML namespace of RSL 1.0 documents.
const Namespace = "https://rslstandard.org/rsl"

// Document is an RSL document as far as an enforcer needs it.
type Document struct {
	// Contents holds the <content> elements in document order.
	Contents []Content
}

// Content is one <content> element of an RSL document.
type Content struct {
	// URL is the url attribute as written (surrounding white space
	// removed): a path pattern in robots.txt syntax ("/articles/*") or an
	// absolute URL.
	URL string
	// Server is the server attribute, the base URL of the licence server
	// that issues tokens for this content; "" when there is none.
	Server string
	// Licenses holds its <license> elements in document order, at most
	// maxLicenses; nil when it has none.
	Licenses []Terms
}

// Terms is one <license> element of a content.
type Terms struct {
	// Payment is the type attribute of its first <payment> element
	// ("purchase", "subscription", "free", ...); "" when it has none,
	// which means it is free.
	Payment string
	// Permits and Prohibits are the usage values ("all", "ai-train",
	// "search", ...) of its <permits type="usage"> and <prohibits
	// type="usage"> elements, lower-cased, each once, in the order
	// written; nil when there is no such element.
	Permits, Prohibits []string
}

// Parse reads an RSL document. The root element must be <rsl>, in the RSL
// namespace or in none; elements in other namespaces and elements it does
// not know are skipped. Every <content> must have a url attribute, and a
// server attribute must be an absolute http or https URL without user
// information, query or fragment, and a content holds at most 16 <license>
// elements. Usage values are kept lower-cased, each once: RSL 1.0's six
// always, and at most 16 others per element kind of a licence. The document must be UTF-8 (or declared as such) and at most
// MaxDocumentBytes long, with at most MaxContents contents. An error names
// the element at fault, counting from 1, as in
// "rsl: content[3]: server: not an absolute http(s) URL". Parse never
// panics.
func Parse(body []byte) (*Document, error) {
	if len(body) > MaxDocumentBytes {
		return nil, fmt.Errorf("rsl: the document is %d bytes, more than %d", len(body), MaxDocumentBytes)
	}
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF")) // a UTF-8 byte order mark
	p := &docParser{dec: xml.NewDecoder(bytes.NewReader(body))}
	p.dec.Strict = true
	doc, err := p.document()
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// docParser reads a document token by token.
type docParser struct {
	dec   *xml.Decoder
	depth int
}

// token returns the next token, counting the element depth.
func (p *docParser) token() (xml.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch tok.(type) {
	case xml.StartElement:
		p.depth++
		if p.depth > maxDepth {
			return nil, fmt.Errorf("elements nested more than %d deep", maxDepth)
		}
	case xml.EndElement:
		p.depth--
	}
	return tok, nil
}

// skip reads up to the end of the element just started.
func (p *docParser) skip() error {
	for depth := 1; depth > 0; {
		tok, err := p.token()
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// child returns the next child element of the element being read, ok
// false at that element's end; the tokens between (text, comments) are
// passed over.
func (p *docParser) child() (se xml.StartElement, ok bool, err error) {
	for {
		tok, err := p.token()
		if err != nil {
			return se, false, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, true, nil
		case xml.EndElement:
			return se, false, nil
		}
	}
}

// childNamed returns the next child element named local (rslName) of the
// element being read, skipping the others; ok is false at that
// element's end.
func (p *docParser) childNamed(local string) (se xml.StartElement, ok bool, err error) {
	for {
		se, ok, err = p.child()
		if err != nil || !ok || rslName(se.Name, local) {
			return se, ok, err
		}
		if err := p.skipChild(se); err != nil {
			return se, false, err
		}
	}
}

// skipChild reads up to the end of the child element se, just started;
// its error names se.
func (p *docParser) skipChild(se xml.StartElement) error {
	if err := p.skip(); err != nil {
		return fmt.Errorf("%s: %w", clip(se.Name.Local), err)
	}
	return nil
}

// rslName reports whether n is the element local in the RSL namespace or
// in none.
func rslName(n xml.Name, local string) bool {
	return n.Local == local && (n.Space == Namespace || n.Space == "")
}

func (p *docParser) document() (*Document, error) {
	// The prolog: up to the root element.
	var root xml.StartElement
	for {
		tok, err := p.dec.Token()
		if err == io.EOF {
			return nil, errors.New("rsl: no root element")
		}
		if err != nil {
			return nil, fmt.Errorf("rsl: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			root = se
			p.depth = 1
			break
		}
		if _, ok := tok.(xml.CharData); ok && len(bytes.TrimSpace(tok.(xml.CharData))) > 0 {
			return nil, errors.New("rsl: text before the root element")
		}
	}
	if !rslName(root.Name, "rsl") {
		if root.Name.Local == "rsl" {
			return nil, fmt.Errorf("rsl: the root element <rsl> is in the namespace %q, not %q", clip(root.Name.Space), Namespace)
		}
		return nil, fmt.Errorf("rsl: the root element is <%s>, not <rsl>", clip(root.Name.Local))
	}
	doc := &Document{}
	for {
		se, ok, err := p.childNamed("content")
		if err != nil {
			return nil, fmt.Errorf("rsl: %w", err)
		}
		if !ok {
			break
		}
		if len(doc.Contents) == MaxContents {
			return nil, fmt.Errorf("rsl: more than %d content elements", MaxContents)
		}
		where := "content[" + strconv.Itoa(len(doc.Contents)+1) + "]"
		c, err := p.content(se)
		if err != nil {
			return nil, fmt.Errorf("rsl: %s: %w", where, err)
		}
		doc.Contents = append(doc.Contents, c)
	}
	// Only white space, comments and processing instructions may follow.
	for {
		tok, err := p.dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("rsl: after </rsl>: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return nil, fmt.Errorf("rsl: element <%s> after the root element", clip(t.Name.Local))
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return nil, errors.New("rsl: text after the root element")
			}
		}
	}
	if len(doc.Contents) == 0 {
		return nil, errors.New("rsl: no content element")
	}
	return doc, nil
}

// attrs reads the attributes of se named by names (without a namespace or
// in the RSL namespace) into vals, in the order of names, with surrounding
// white space removed. It fails on a repeated or overlong attribute.
func attrs(se xml.StartElement, limit int, names []string, vals []*string) error {
	seen := 0
	for _, a := range se.Attr {
		if a.Name.Space != "" && a.Name.Space != Namespace {
			continue
		}
		for i, n := range names {
			if a.Name.Local != n {
				continue
			}
			if seen&(1<<i) != 0 {
				return fmt.Errorf("%s: repeated attribute", n)
			}
			seen |= 1 << i
			v := strings.TrimSpace(a.Value)
			if len(v) > limit {
				return fmt.Errorf("%s: %d bytes, more than %d", n, len(v), limit)
			}
			*vals[i] = v
		}
	}
	return nil
}

func (p *docParser) content(se xml.StartElement) (Content, error) {
	var c Content
	hasURL := false
	for _, a := range se.Attr {
		if a.Name.Local == "url" && (a.Name.Space == "" || a.Name.Space == Namespace) {
			hasURL = true
		}
	}
	if err := attrs(se, MaxURLLength, []string{"url", "server"}, []*string{&c.URL, &c.Server}); err != nil {
		return c, err
	}
	switch {
	case !hasURL:
		return c, errors.New("no url attribute")
	case c.URL == "":
		return c, errors.New("url: empty")
	}
	if c.Server != "" {
		if err := checkServer(c.Server); err != nil {
			return c, fmt.Errorf("server: %w", err)
		}
	}
	licenses := 0
	for {
		_, ok, err := p.childNamed("license")
		if err != nil || !ok {
			return c, err
		}
		licenses++
		where := "license[" + strconv.Itoa(licenses) + "]"
		if licenses > maxLicenses {
			return c, fmt.Errorf("%s: more than %d licences in one content", where, maxLicenses)
		}
		var t Terms
		if err := p.license(&t); err != nil {
			return c, fmt.Errorf("%s: %w", where, err)
		}
		c.Licenses = append(c.Licenses, t)
	}
}

// license reads a <license> of a content into c.
func (p *docParser) license(c *Terms) error {
	payments := 0
	for {
		se, ok, err := p.child()
		if err != nil || !ok {
			return err
		}
		name := se.Name.Local
		switch {
		case rslName(se.Name, "permits"), rslName(se.Name, "prohibits"):
			var typ string
			if err := attrs(se, maxText, []string{"type"}, []*string{&typ}); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			text, err := p.text()
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if typ != "usage" {
				continue
			}
			words := strings.FieldsFunc(text, func(r rune) bool {
				return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
			})
			if len(words) == 0 {
				continue
			}
			if name == "permits" {
				c.Permits = addUsages(c.Permits, words)
			} else {
				c.Prohibits = addUsages(c.Prohibits, words)
			}
		case rslName(se.Name, "payment"):
			payments++
			if payments == 1 {
				typ, hasType := "", false
				for _, a := range se.Attr {
					hasType = hasType || a.Name.Local == "type" && (a.Name.Space == "" || a.Name.Space == Namespace)
				}
				if err := attrs(se, maxText, []string{"type"}, []*string{&typ}); err != nil {
					return fmt.Errorf("payment: %w", err)
				}
				if !hasType || typ == "" {
					return errors.New("payment: no type attribute")
				}
				c.Payment = typ
			}
			if err := p.skip(); err != nil {
				return fmt.Errorf("payment: %w", err)
			}
		default:
			if err := p.skipChild(se); err != nil {
				return err
			}
		}
	}
}

// text reads the character data of the element just started, up to its
// end; child elements are skipped.
func (p *docParser) text() (string, error) {
	var b []byte
	for {
		tok, err := p.token()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return string(b), nil
		case xml.CharData:
			if len(b)+len(t) > maxText {
				return "", fmt.Errorf("text longer than %d bytes", maxText)
			}
			b = append(b, t...)
		case xml.StartElement:
			if err := p.skip(); err != nil {
				return "", err
			}
		}
	}
}

// checkServer checks a licence server's base URL: an absolute http or
// https URL with a host and without user information, query or fragment.
func checkServer(s string) error {
	_, ok := splitURL(s)
	switch {
	case !ok:
		return fmt.Errorf("not an absolute http(s) URL: %q", clip(s))
	case strings.ContainsAny(s, "?#"):
		return fmt.Errorf("has a query or fragment: %q", clip(s))
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("holds white space or a control character: %q", clip(s))
	case strings.ContainsAny(s, `"\`):
		// It is quoted in a challenge (authorization_uri).
		return fmt.Errorf("holds a quote or a backslash: %q", clip(s))
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// parsedURL is an absolute http(s) URL split into its normalised origin and
// the rest.
type parsedURL struct {
	// origin is "scheme://host[:port]", scheme and host in lower case, the
	// port left out when it is the scheme's default.
	origin string
	// rest is the path and query as written (no fragment), "/" when the
	// path is empty.
	rest string
}

// splitURL splits an absolute http or https URL. ok is false for anything
// else, and for a URL with user information, no host or a bad port.
func splitURL(s string) (u parsedURL, ok bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return u, false
	}
	scheme := strings.ToLower(s[:i])
	def := ""
	switch scheme {
	case "http":
		def = "80"
	case "https":
		def = "443"
	default:
		return u, false
	}
	after := s[i+3:]
	j := strings.IndexAny(after, "/?#")
	if j < 0 {
		j = len(after)
	}
	auth, rest := after[:j], after[j:]
	if k := strings.IndexByte(rest, '#'); k >= 0 {
		rest = rest[:k]
	}
	if rest == "" || rest[0] == '?' {
		rest = "/" + rest
	}
	if strings.IndexByte(auth, '@') >= 0 {
		return u, false
	}
	host, port := auth, ""
	if strings.HasPrefix(auth, "[") {
		k := strings.IndexByte(auth, ']')
		if k < 0 {
			return u, false
		}
		host, port = auth[:k+1], auth[k+1:]
		if port != "" {
			if port[0] != ':' {
				return u, false
			}
			port = port[1:]
		}
	} else if k := strings.LastIndexByte(auth, ':'); k >= 0 {
		host, port = auth[:k], auth[k+1:]
	}
	if host == "" || host == "[]" || strings.ContainsAny(host, " \t\r\n%*$\\") {
		return u, false
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 || port[0] == '+' || port[0] == '-' {
			return u, false
		}
		port = strconv.Itoa(n)
	}
	origin := scheme + "://" + strings.ToLower(host)
	if port != "" && port != def {
		origin += ":" + port
	}
	return parsedURL{origin: origin, rest: rest}, true
}

// addUsages adds the usage values words to list, lower-cased (the values
// are compared as written in RSL's vocabulary), each once: every value of
// RSL's vocabulary, and of the others ("tdm", a typo) at most maxUsages,
// so that no value that counts is ever dropped.
func addUsages(list, words []string) []string {
	for _, w := range words {
		w = strings.ToLower(w)
		if slices.Contains(list, w) {
			continue
		}
		if known(w) || unknownUsages(list) < maxUsages {
			list = append(list, w)
		}
	}
	return list
}

// known reports whether u is a usage value of RSL 1.0.
func known(u string) bool {
	switch u {
	case "all", "ai-all", "ai-train", "ai-input", "ai-index", "search":
		return true
	}
	return false
}

// unknownUsages counts the values of list that RSL 1.0 does not define.
func unknownUsages(list []string) int {
	n := 0
	for _, u := range list {
		if !known(u) {
			n++
		}
	}
	return n
}
