// Command vc-scheduler is Volcano's scheduler with the repack plugin compiled in: the same
// flags, actions and plugins as volcano.sh/volcano/cmd/scheduler of the release go.mod pins, plus
// the plugin "repack" (volcano-scheduler.conf enables it by name).
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	_ "go.uber.org/automaxprocs"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/scheduler/app"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	commonutil "volcano.sh/volcano/pkg/util"
	"volcano.sh/volcano/pkg/version"

	// Volcano's actions and plugins, and the scheduler's own startup checks
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	_ "volcano.sh/volcano/pkg/scheduler/util/assert"

	// the repack plugin registers itself with framework.RegisterPluginBuilder
	_ "volcano.sh/repack/plugin/repack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run mirrors volcano.sh/volcano/cmd/scheduler's main step for step, so a flag or option that
// works there works here.
func run() error {
	runtime.GOMAXPROCS(runtime.NumCPU())
	klog.InitFlags(nil)
	flushEvery := pflag.Duration("log-flush-frequency", 5*time.Second, "Maximum number of seconds between log flushes")

	flags := pflag.CommandLine
	opts := options.NewServerOption()
	opts.AddFlags(flags)
	utilfeature.DefaultMutableFeatureGate.AddFlag(flags)
	commonutil.LeaderElectionDefault(&opts.LeaderElection)
	opts.LeaderElection.ResourceName = commonutil.GenerateComponentName(opts.SchedulerNames)
	componentbaseoptions.BindLeaderElectionFlags(&opts.LeaderElection, flags)
	opts.RegisterOptions()
	cliflag.InitFlags()

	if opts.PrintVersion {
		version.PrintVersionAndExit()
		return nil
	}
	if err := opts.CheckOptionOrDie(); err != nil {
		return err
	}
	if opts.CaCertFile != "" && opts.CertFile != "" && opts.KeyFile != "" {
		if err := opts.ParseCAFiles(nil); err != nil {
			return fmt.Errorf("failed to parse CA file: %w", err)
		}
	}
	klog.StartFlushDaemon(*flushEvery)
	defer klog.Flush()
	return app.Run(opts)
}
