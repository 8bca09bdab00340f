// Package license reads Really Simple Licensing (RSL 1.0) documents and
// verifies the licence tokens that crawlers present under the Crawler
// Authorization Protocol (CAP).
//
// Parse reads an RSL document (XML in the https://rslstandard.org/rsl
// namespace) into a Document: for each <content> element, the URL pattern
// it covers, the licence server that issues tokens for it, and for each of
// its <license> elements the payment type and the usage values it permits
// or prohibits; Content.TermsFor picks the licence that grants a
// crawler's documented purpose. Parse is
// bounded (MaxDocumentBytes, MaxContents and limits on attribute and text
// lengths) and names the element or attribute at fault in its errors.
// Document.For keeps the contents that apply to one site and compiles them
// into a Matcher, which finds the most specific content covering a
// request-target by the matching rules of robots.txt (RFC 9309), reusing
// package policy's matcher.
//
// A Verifier checks an "Authorization: License <token>" credential against
// the licence server named by the site's document: a JSON Web Signature
// token locally, with the server's published keys, and any other token by
// OAuth 2.0 token introspection (RFC 7662) at the server. Results are
// cached, and the Verifier never calls any address but the licence
// server's.
//
// It does not fetch RSL documents, find them through robots.txt
// or HTTP headers, decide which requests need a licence, or answer
// requests: those are the caller's. Nor does it interpret the rest of a
// licence's terms (user classes, geography, amounts, legal statements).
package license
