// Command configref writes docs/reference.md, the reference of every
// setting of robots_guard, from the doc comments of the configuration's Go
// types (guard.Config and the blocks it composes), as Caddy's JSON
// docs are made from its modules' godoc: one source for the code and the
// docs. Run it with go generate ./guard; TestReferenceIsCurrent fails
// when the committed file is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("out", "docs/reference.md", "the file to write, relative to -root")
	flag.Parse()
	b, err := Generate(*root)
	if err == nil {
		err = os.WriteFile(filepath.Join(*root, *out), b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "configref:", err)
		os.Exit(1)
	}
}

// pkgTypes is the struct types of one package, by name, with their docs.
type pkgTypes struct {
	name  string
	types map[string]*typeInfo
}

type typeInfo struct {
	doc    string
	fields []*ast.Field
}

// load reads the struct types of the package in dir.
func load(dir string) (*pkgTypes, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	d, err := doc.NewFromFiles(fset, files, "github.com/robotsguard/robotsguard/"+filepath.Base(dir))
	if err != nil {
		return nil, err
	}
	pt := &pkgTypes{name: d.Name, types: map[string]*typeInfo{}}
	for _, t := range d.Types {
		for _, spec := range t.Decl.Specs {
			ts := spec.(*ast.TypeSpec)
			if st, ok := ts.Type.(*ast.StructType); ok {
				pt.types[ts.Name.Name] = &typeInfo{doc: t.Doc, fields: st.Fields.List}
			}
		}
	}
	return pt, nil
}

// block is one table of the reference: a struct type and where it sits.
type block struct {
	path  string // the JSON path, e.g. "robots_txt" or "verify.web_bot_auth"
	pkg   *pkgTypes
	name  string // the Go type
	isArr bool   // a list of such objects
}

// Generate returns the reference's Markdown.
func Generate(root string) ([]byte, error) {
	loaded := map[string]*pkgTypes{}
	pkg := func(name string) (*pkgTypes, error) {
		if p := loaded[name]; p != nil {
			return p, nil
		}
		p, err := load(filepath.Join(root, name))
		loaded[name] = p
		return p, err
	}
	mw, err := pkg("guard")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	queue := []block{{path: "", pkg: mw, name: "Config"}}
	for len(queue) > 0 {
		bl := queue[0]
		queue = queue[1:]
		ti := bl.pkg.types[bl.name]
		if ti == nil {
			return nil, fmt.Errorf("no struct type %s.%s", bl.pkg.name, bl.name)
		}
		title := "robots_guard"
		if bl.path != "" {
			title = bl.path
		}
		if bl.isArr {
			title += "[]"
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		fmt.Fprintf(&b, "`%s.%s`. %s\n\n", bl.pkg.name, bl.name, oneLine(ti.doc))
		b.WriteString("| field | value | meaning |\n|---|---|---|\n")
		var children []block
		for _, f := range ti.fields {
			if len(f.Names) == 0 || !f.Names[0].IsExported() || f.Tag == nil {
				continue
			}
			tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
			jname, _, _ := strings.Cut(tag, ",")
			if jname == "" || jname == "-" {
				continue
			}
			kind, from, sub, arr := describe(f.Type)
			if sub != "" {
				p := bl.pkg
				if from != "" {
					if p, err = pkg(from); err != nil {
						return nil, err
					}
				}
				path := jname
				if bl.path != "" {
					path = bl.path + "." + jname
				}
				children = append(children, block{path: path, pkg: p, name: sub, isArr: arr})
				kind = fmt.Sprintf("[%s](#%s)", kind, strings.ReplaceAll(path, ".", ""))
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", jname, kind, escape(oneLine(f.Doc.Text())))
		}
		queue = append(children, queue...) // each block's own blocks follow it
	}
	return b.Bytes(), nil
}

// describe names the kind of value a field takes, and the struct type of
// a block (or list of blocks) it opens, with its package when that is
// another one.
func describe(e ast.Expr) (kind, pkg, sub string, arr bool) {
	switch t := e.(type) {
	case *ast.StarExpr:
		return describe(t.X)
	case *ast.ArrayType:
		k, p, s, _ := describe(t.Elt)
		if s != "" {
			return "list of objects", p, s, true
		}
		return "list of " + k + "s", "", "", false
	case *ast.SelectorExpr:
		k, _, s, a := describe(t.Sel)
		if s != "" {
			return k, t.X.(*ast.Ident).Name, s, a
		}
		return k, "", "", a
	case *ast.Ident:
		switch t.Name {
		case "bool":
			return "flag", "", "", false
		case "int", "int64":
			return "integer", "", "", false
		case "float64":
			return "number", "", "", false
		case "string":
			return "string", "", "", false
		case "Duration":
			return "duration", "", "", false
		}
		return "object", "", t.Name, false
	}
	return "value", "", "", false
}

// oneLine joins a doc comment's lines into one paragraph.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// escape keeps a table cell one cell.
func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

const header = `<!-- Generated by "go generate ./guard" (internal/configref) from the doc comments of the configuration's Go types. Do not edit: edit the comments. -->

# Configuration reference

Every setting of ` + "`robots_guard`" + `, in the order of its JSON configuration,
with its default and bounds. The same names serve the Caddyfile: each
block below is a subdirective of ` + "`robots_guard`" + ` and each field a line
of its block (` + "`robots_txt { refresh 1m }`" + ` is ` + "`{\"robots_txt\": {\"refresh\": \"1m\"}}`" + `),
except that ` + "`robots_txt`" + `'s source, ` + "`bots`" + `' tokens and ` + "`traps`" + `' paths are
the arguments of their block's line (` + "`traps /no-robots/ { grace 1h }`" + `),
` + "`store redis <url>`" + ` names the server, ` + "`bans { after <denials> <window> }`" + `
takes two values, ` + "`verify`" + `'s operators are ` + "`operator <name> { ... }`" + `
blocks and ` + "`web_bot_auth`" + `'s agents ` + "`agent <origin> [<operator>] { key <file...> }`" + `.
A flag is written alone (or followed by ` + "`on`" + ` / ` + "`off`" + `); a duration is
Go's form with Caddy's ` + "`d`" + ` unit (` + "`90s`" + `, ` + "`1d12h`" + `) or integer nanoseconds
in JSON. A zero or absent value takes the default. How the settings work
together is in [configuration.md](configuration.md).
`
