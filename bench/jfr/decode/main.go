// Command decode decodes JFR files with format/jfr and prints the number of
// samples per file; bench/jfr/vs_jdk.sh times it against the JDK's jfr tool.
package main

import (
	"fmt"
	"os"

	"github.com/sparkprof/sparkprof/format/jfr"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: decode FILE.jfr...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		p, err := jfr.Decode(data, name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d samples\n", name, len(p.Samples))
	}
}
