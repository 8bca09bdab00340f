// Package gen holds what the generators of classify's embedded lists
// (internal/gencrawlers, internal/genapps) share: their command line, and
// the header sections that list names with their reasons.
package gen

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"slices"
)

// Main runs a generator. It reads the flags -in, the directory of the data
// sets (holding says which files, for the usage), and -out, the list to
// write (out by default); generate writes the list of the data sets in in
// to w. The list is written only once it is complete: an error ends the
// program and leaves the file as it was.
func Main(holding, out string, generate func(w io.Writer, in string) error) {
	in := flag.String("in", "../testdata/useragents", "directory holding "+holding)
	outFile := flag.String("out", out, "output file")
	flag.Parse()
	var buf bytes.Buffer
	if err := generate(&buf, *in); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*outFile, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

// WriteReasons writes a section of a list's header: title, formatted with
// the number of names, then each name of reasons with its reason, in
// sorted order.
func WriteReasons(w io.Writer, title string, reasons map[string]string) {
	names := slices.Sorted(maps.Keys(reasons))
	fmt.Fprintf(w, "#\n# "+title+"\n", len(names))
	for _, n := range names {
		fmt.Fprintf(w, "#   %s: %s\n", n, reasons[n])
	}
}
