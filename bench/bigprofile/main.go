// Command bigprofile writes a folded profile of the shape a long Spark SQL
// executor gives: deep Scala stacks (40 to 120 frames) of which each new
// one shares a prefix with one before it, so that 60,000 stacks make a
// call tree of 1.6 million nodes (bench/server/bigrender.sh). The output is the same for the
// same flags.
//
//	go run ./bench/bigprofile [-stacks 60000] [-nodes 1300000] > big.folded
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

func main() {
	stacks := flag.Int("stacks", 60000, "distinct stacks")
	nodes := flag.Int("nodes", 1300000, "new call-tree nodes per stack times stacks, before stacks are cut at 120 frames or grown to 40")
	flag.Parse()
	if err := write(bufio.NewWriter(os.Stdout), *stacks, *nodes); err != nil {
		fmt.Fprintln(os.Stderr, "bigprofile:", err)
		os.Exit(1)
	}
}

// write writes the profile: stack i copies a prefix of an earlier stack
// and adds new frames, on average nodes/stacks of them, so each stack adds
// that many call-tree nodes.
func write(w *bufio.Writer, stacks, nodes int) error {
	r := rand.New(rand.NewPCG(1, 2))
	newPerStack := max(1, nodes/stacks)
	var prev [][]string
	for range stacks {
		var frames []string
		if len(prev) > 0 {
			base := prev[r.IntN(len(prev))]
			frames = append(frames, base[:r.IntN(len(base))]...)
		}
		add := 1 + r.IntN(2*newPerStack)
		if len(frames) < 40 {
			add = max(add, 40-len(frames))
		}
		for range add {
			frames = append(frames, frame(r, len(frames)))
		}
		if len(frames) > 120 {
			frames = frames[:120]
		}
		prev = append(prev, frames)
		if _, err := fmt.Fprintf(w, "%s %d\n", strings.Join(frames, ";"), 1+r.IntN(1000)); err != nil {
			return err
		}
	}
	return w.Flush()
}

// frame names a frame at depth d as Spark SQL's generated and Scala code
// names them.
func frame(r *rand.Rand, d int) string {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("org.apache.spark.sql.execution.Operator%d$$anonfun$doExecute$%d.apply", r.IntN(300), d)
	case 1:
		return fmt.Sprintf("scala.collection.Iterator$$anon$%d.hasNext", r.IntN(50))
	case 2:
		return fmt.Sprintf("org.apache.spark.sql.catalyst.expressions.GeneratedClass$GeneratedIteratorForCodegenStage%d.processNext", r.IntN(200))
	default:
		return fmt.Sprintf("com.example.etl.Transform%d.method%d", r.IntN(500), r.IntN(40))
	}
}
