package repack

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The plugin's metrics, in the registry vc-scheduler serves on --listen-address /metrics beside
// Volcano's own (the default one).
var (
	// sessionsTotal counts each session by what became of it: published (the sidecar took it as
	// "latest"), failed (the call or the Snapshot failed), dropped (a newer session replaced it
	// before it was sent), over_budget (the capture passed repack.budget).
	sessionsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "repack_plugin_sessions_total",
		Help: "Scheduling sessions by what the repack plugin did with them (published, failed, dropped, over_budget)",
	}, []string{"result"})
	captureSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "repack_plugin_capture_seconds",
		Help:    "Time the repack plugin held the scheduling goroutine copying a session out",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5},
	})
	publishSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "repack_plugin_publish_seconds",
		Help:    "Building a session's Snapshot and publishing it to the sidecar, off the scheduling goroutine",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	})
)
