// The crontable differential tool: a module of its own, like go/tools and go/controlplane, so the
// client module the scheduler plugin links gains no dependency for a test. robfig/cron is pinned
// at the version Kubernetes v1.34.1 requires.
module volcano.sh/repack/tools/crontable

go 1.26

require github.com/robfig/cron/v3 v3.0.1
