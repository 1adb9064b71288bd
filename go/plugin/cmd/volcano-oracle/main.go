// Command volcano-oracle answers fidelity cases with Volcano's compiled predicates and node
// order (package fidelity): one JSON Case per stdin line, one JSON Answer per stdout line, in
// order, until stdin closes. bench/fidelity.py drives it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/klog/v2"

	"volcano.sh/repack/plugin/fidelity"
	// Volcano's actions and plugins register themselves; the conf of each case picks among them
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
)

func main() {
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	_ = flags.Set("logtostderr", "false")
	_ = flags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard) // Volcano's cache logs at error level on ordinary input

	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var c fidelity.Case
			var ans fidelity.Answer
			if jerr := json.Unmarshal(line, &c); jerr != nil {
				ans = fidelity.Answer{Error: fmt.Sprintf("case: %v", jerr)}
			} else {
				ans = fidelity.Evaluate(c)
			}
			if werr := enc.Encode(&ans); werr != nil {
				os.Exit(1)
			}
			if werr := out.Flush(); werr != nil {
				os.Exit(1)
			}
		}
		if err != nil {
			return
		}
	}
}
