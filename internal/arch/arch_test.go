// Package arch_test holds the house rules of docs/ARCHITECTURE.md: the
// import arrows between the rooms, the sizes of files and functions, the
// budget of each package's exported API, and the document's own sizes
// table and request walk. Each rule fails the build when broken; an
// exception is named here, with its reason.
package arch_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const mod = "github.com/robotsguard/robotsguard/"

// root is the repository, from this package's directory.
const root = "../.."

// arrows lists, for every package of the module, the packages of ours it
// may import. A package missing here fails TestImportArrows: a new room
// states its arrows when it is made.
var arrows = map[string][]string{
	"policy":                        {},
	"duration":                      {},
	"limit":                         {"duration", "internal/settings"},
	"internal/stripe":               {},
	"internal/logsample":            {"internal/stripe"},
	"internal/sfv":                  {},
	"internal/settings":             {},
	"internal/configref":            {},
	"internal/testclock":            {},
	"internal/testdns":              {},
	"internal/testkeys":             {},
	"internal/testorigin":           {},
	"internal/testredis":            {"internal/testport"},
	"internal/testport":             {},
	"sites":                         {"duration", "policy"},
	"identity":                      {"duration", "internal/settings", "internal/sfv", "policy"},
	"report":                        {"identity", "limit", "policy"},
	"dashboard":                     {"identity", "report"},
	"classify":                      {"identity", "internal/settings", "policy"},
	"classify/internal/gen":         {},
	"classify/internal/gencrawlers": {"classify/internal/gen"},
	"classify/internal/genapps":     {"classify/internal/gen"},
	"guard":                         {"classify", "duration", "identity", "internal/logsample", "license", "limit", "policy", "report", "sites", "traps"},
	"caddymodule":                   {"caddymodule/robotscmd", "classify", "dashboard", "duration", "identity", "guard", "license", "limit", "nethttp", "policy", "report", "sites", "traps"},
	"nethttp":                       {"dashboard", "guard", "identity", "report"},
	"caddymodule/robotscmd":         {"audit", "dashboard", "guard", "identity", "policy", "report", "sites", "traps"},
	"audit":                         {"classify", "guard", "identity", "license", "limit", "policy", "report", "sites"},
	"license":                       {"duration", "internal/settings", "policy"},
	"internal/testlicense":          {},
	"traps":                         {"duration", "limit", "policy"},
	"cmd/caddy":                     {"caddymodule"},
}

// fronts are the packages that serve requests and so may draw the
// operator's page; no other package imports dashboard.
var fronts = []string{"nethttp", "caddymodule", "caddymodule/robotscmd"} // the CLI draws the audit's page

// Sizes: no non-test file over maxFileLines, no function over
// maxFuncLines, but for these, each with its reason.
const (
	maxFileLines = 600
	maxFuncLines = 100
)

var bigFiles = map[string]string{
	"policy/match.go": "the matcher and its compiler, kept whole so that one file shows the linear-time match",
}

var bigFuncs = map[string]string{
	"identity/builtin.go builtinOperators": "the registry's data table, one entry per operator",
	"policy/match.go flatten":              "the matcher's compiler, one pass over a group's rules",
}

// budgets caps each package's exported API, as "go doc -short" lists it
// (one line per function, type, method-less constructor and const or var
// group). Growing past it is a decision, made here in the same change.
var budgets = map[string]int{
	"policy":       35, // ViewOptions: the decoded view's readings (backslash kept, path parameters dropped)
	"sites":        33, // issue 36: OriginSource, the decision service's robots.txt source; issue 37: Version and HistoryStore, each site's robots.txt history; issue 49: Foreign, the fetches whose URL a site's file chose
	"identity":     57, // issue 38: SignLegacy (the string form of Signature-Agent for verifiers before -01); FeedDocument and FeedPrefix (ParseFeed reads JAFAR services); ErrMalformed (the 400 of -01)
	"limit":        36, // issue 34: NetOf, NetKey and NetBitsV4/V6, the network keys of aggregated bans
	"report":       13,
	"audit":        16, // issue 37: the audit of access logs (New, Options, Version, the Result types, the formats)
	"dashboard":    15, // issue 37: Version, a site's robots.txt history on its page; the audit's page (AuditPage, AuditSite, AuditClient, LineCount, WriteAudit)
	"guard":        42, // the engine: issue 35 holds it to 40; issue 36: Forwarded, the decision service's question; issue 37: WithHistory; issue 38: SetAnswerHeaders (Caddy's handle_errors answers carry what Respond's do); issue 49: SetLicenseHeaders (the Link and challenge of licensed content, which the fronts set on answers the site writes) and LicenseObserver (the RSL documents' fetches); WithOfflineLicenses (the audit judges licences by the documents it was given, and asks no licence server)
	"license":      15, // issue 49: RSL 1.0 documents (Parse, Document, Content and its licences' Terms, Matcher), tokens (Verifier, VerifierConfig, ErrInvalidToken) and the licenses block (Config, modes, defaults)
	"caddymodule":  4,  // issue 36: RobotsGuardCheck, the decision service
	"nethttp":      16, // issue 36: Check, CheckConfig and WithTrustedProxy, the decision service; ErrSelfSource, its refusal of an engine that asks the sites themselves, the text both fronts give
	"traps":        16,
	"internal/sfv": 9,
}

// packages returns the module's packages (directories with Go files),
// relative to root, without testdata and the bench module.
func packages(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			if dir := filepath.ToSlash(filepath.Dir(rel)); !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// goFiles returns the non-test Go files of the module, relative to root.
func goFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pkg := range packages(t) {
		names, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		for _, n := range names {
			if !strings.HasSuffix(n, "_test.go") {
				rel, _ := filepath.Rel(root, n)
				out = append(out, filepath.ToSlash(rel))
			}
		}
	}
	return out
}

// imports returns the packages of ours that the non-test files of pkg import.
func imports(t *testing.T, pkg string) []string {
	t.Helper()
	var out []string
	names, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), n, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if ours, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), mod); ok && !slices.Contains(out, ours) {
				out = append(out, ours)
			}
		}
	}
	return out
}

// TestImportArrows: each package imports only the packages of ours listed
// for it, so no import runs back up (and none sideways that the document
// does not draw); only the fronts import dashboard.
func TestImportArrows(t *testing.T) {
	for _, pkg := range packages(t) {
		allowed, ok := arrows[pkg]
		if !ok {
			t.Errorf("%s: a package with no arrows: list what it may import in arrows (internal/arch)", pkg)
			continue
		}
		for _, imp := range imports(t, pkg) {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s: not an arrow of docs/ARCHITECTURE.md", pkg, imp)
			}
			if imp == "dashboard" && !slices.Contains(fronts, pkg) {
				t.Errorf("%s imports dashboard: only the fronts (%s) draw the operator's page", pkg, strings.Join(fronts, ", "))
			}
		}
	}
}

// TestFileSizes: no non-test file over maxFileLines lines.
func TestFileSizes(t *testing.T) {
	for _, f := range goFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(b, []byte("\n"))
		if _, ok := bigFiles[f]; !ok && n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: cut it where its jobs part", f, n, maxFileLines)
		}
	}
}

// TestFunctionSizes: no function over maxFuncLines lines.
func TestFunctionSizes(t *testing.T) {
	for _, f := range goFiles(t) {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if _, ok := bigFuncs[f+" "+fd.Name.Name]; !ok && n > maxFuncLines {
				t.Errorf("%s: %s has %d lines, more than %d", f, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

// TestExportBudgets: no package's exported API grows past its budget.
func TestExportBudgets(t *testing.T) {
	for pkg, budget := range budgets {
		cmd := exec.Command("go", "doc", "-short", "./"+pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go doc -short ./%s: %v", pkg, err)
		}
		if n := bytes.Count(out, []byte("\n")); n > budget {
			t.Errorf("%s exports %d identifiers (go doc -short), its budget is %d: unexport what only it uses, or raise the budget in internal/arch with the reason", pkg, n, budget)
		}
	}
}

var update = flag.Bool("update", false, "rewrite docs/ARCHITECTURE.md's sizes table")

// sizesTable is the sizes section's table: each room's lines, rounded to
// the hundred so that ordinary edits leave it true, and its file count.
func sizesTable(t *testing.T) string {
	t.Helper()
	lines, files := map[string]int{}, map[string]int{}
	for _, f := range goFiles(t) {
		b, _ := os.ReadFile(filepath.Join(root, f))
		room := filepath.ToSlash(filepath.Dir(f))
		lines[room] += bytes.Count(b, []byte("\n"))
		files[room]++
	}
	var rooms []string
	for r := range lines {
		rooms = append(rooms, r)
	}
	sort.Strings(rooms)
	var b strings.Builder
	b.WriteString("| package | files | lines (to the hundred) |\n|---|--:|--:|\n")
	for _, r := range rooms {
		fmt.Fprintf(&b, "| `%s` | %d | %d |\n", r, files[r], (lines[r]+50)/100*100)
	}
	return b.String()
}

// TestArchitectureDocument: docs/ARCHITECTURE.md's sizes table is the
// code's (go test ./internal/arch -update rewrites it), and every name of
// ours its request walk mentions exists.
func TestArchitectureDocument(t *testing.T) {
	path := filepath.Join(root, "docs", "ARCHITECTURE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- sizes: generated by internal/arch -->\n", "<!-- /sizes -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("docs/ARCHITECTURE.md has no %q ... %q section", begin, end)
	}
	want := sizesTable(t)
	got := string(doc[i+len(begin) : j])
	if *update && got != want {
		doc = append(append(append([]byte{}, doc[:i+len(begin)]...), want...), doc[j:]...)
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		got = want
	}
	if !sizesAgree(got, want) {
		t.Errorf("docs/ARCHITECTURE.md's sizes are stale (go test ./internal/arch -update):\n%s", want)
	}
	checkWalk(t, string(doc))
}

// sizeRow is a row of the sizes table: `package` | files | lines.
var sizeRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| (\\d+) \\| (\\d+) \\|$")

// sizesAgree reports whether the document's table (doc) lists the packages
// of the code's (code) with their file counts, and lines within a tenth
// or 200 of them, so that ordinary edits leave it true and a room that
// grows or moves does not.
func sizesAgree(doc, code string) bool {
	rows := func(s string) map[string][2]int {
		m := map[string][2]int{}
		for _, r := range sizeRow.FindAllStringSubmatch(s, -1) {
			var f, l int
			fmt.Sscan(r[2], &f)
			fmt.Sscan(r[3], &l)
			m[r[1]] = [2]int{f, l}
		}
		return m
	}
	d, c := rows(doc), rows(code)
	if len(d) != len(c) {
		return false
	}
	for pkg, cv := range c {
		dv, ok := d[pkg]
		diff := dv[1] - cv[1]
		if !ok || dv[0] != cv[0] || diff*diff > max(200*200, cv[1]*cv[1]/100) {
			return false
		}
	}
	return true
}

// checkWalk fails on a `Type.Method` or `pkg.Name` of the walk section that
// names a package or type of ours but no declaration of the code.
func checkWalk(t *testing.T, doc string) {
	t.Helper()
	start := strings.Index(doc, "## One request's walk")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no request walk")
	}
	walk := doc[start:]
	if k := strings.Index(walk[3:], "\n## "); k >= 0 {
		walk = walk[:k+3]
	}
	decls, types, pkgs := declarations(t)
	ref := regexp.MustCompile("`([A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*)+)`")
	checked := 0
	for _, m := range ref.FindAllStringSubmatch(walk, -1) {
		parts := strings.Split(m[1], ".")
		if pkgs[parts[0]] {
			parts = parts[1:]
		} else if !types[parts[0]] {
			continue // not ours (Caddy's Replacer.Map, ...)
		}
		checked++
		if !decls[strings.Join(parts, ".")] {
			t.Errorf("docs/ARCHITECTURE.md's walk names %s, which the code does not declare", m[1])
		}
	}
	if checked < 10 {
		t.Errorf("the walk names only %d identifiers of ours: is the section still there?", checked)
	}
}

// declarations returns every top-level name ("Func", "Type", "Type.Method")
// of the module, its types, and its package names.
func declarations(t *testing.T) (decls, types, pkgs map[string]bool) {
	t.Helper()
	decls, types, pkgs = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, f := range goFiles(t) {
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkgs[file.Name.Name] = true
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil {
					rt := d.Recv.List[0].Type
					if s, ok := rt.(*ast.StarExpr); ok {
						rt = s.X
					}
					if id, ok := rt.(*ast.Ident); ok {
						name = id.Name + "." + name
					}
				}
				decls[name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decls[s.Name.Name], types[s.Name.Name] = true, true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									decls[s.Name.Name+"."+n.Name] = true
								}
							}
						}
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, fl := range it.Methods.List {
								for _, n := range fl.Names {
									decls[s.Name.Name+"."+n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							decls[n.Name] = true
						}
					}
				}
			}
		}
	}
	return decls, types, pkgs
}

// notPackages are the words that follow "package" in prose without naming
// one ("the package only ...", "this package has ...").
var notPackages = map[string]bool{"only": true, "has": true, "also": true, "is": true, "that": true, "of": true, "and": true, "it": true, "to": true, "in": true}

// TestPackageComments: every package's comment opens with its own name
// ("Package guard ...", or "Command caddy ..." for a command), and every
// package it names ("package sites", "packages limit") is one of the
// module's or of the standard library's, so that a renamed or removed
// package leaves no comment behind that still names it.
func TestPackageComments(t *testing.T) {
	known := map[string]bool{}
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		known[p[strings.LastIndexByte(p, '/')+1:]] = true
	}
	docs := map[string]string{} // package directory: its comment
	names := map[string]string{}
	for _, f := range goFiles(t) {
		file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, f), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.ToSlash(filepath.Dir(f))
		names[dir] = file.Name.Name
		known[file.Name.Name], known[dir[strings.LastIndexByte(dir, '/')+1:]] = true, true
		if file.Doc != nil {
			docs[dir] += file.Doc.Text()
		}
	}
	mention := regexp.MustCompile(`(?i)\bpackages? ([a-z][a-z0-9]*)\b`)
	for _, dir := range packages(t) {
		doc, name := docs[dir], names[dir]
		want := "Package " + name + " "
		if name == "main" {
			want = "Command " + dir[strings.LastIndexByte(dir, '/')+1:] + " "
		}
		if !strings.HasPrefix(doc, want) {
			t.Errorf("%s: the package comment does not open with %q: %.60q", dir, want, doc)
		}
		for _, m := range mention.FindAllStringSubmatch(doc, -1) {
			if w := m[1]; !known[w] && !notPackages[strings.ToLower(w)] {
				t.Errorf("%s: the package comment names package %q, which is none of the module's or the standard library's", dir, w)
			}
		}
	}
}
