package repack

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/client"
)

// Volcano builds every plugin anew each session (framework.OpenSession calls the builder), so
// what must outlive a cycle lives here, at package level: one connection per sidecar address and
// one publishing goroutine with a one-slot mailbox. A cycle only drops its snapshot in the slot
// (replacing one not yet sent: the newest session wins, as in the sidecar's extender intake);
// it never waits for the sidecar.

var (
	publishersMu sync.Mutex
	publishers   = map[string]*publisher{}
)

// Stats counts what a publisher did (read by tests and logged).
type Stats struct {
	Published, Failed, Dropped atomic.Int64
	// the last publish: building the Snapshot, and that plus the call, in microseconds
	BuildMicros, LastMicros atomic.Int64
}

type job struct {
	capture *Capture
	timeout time.Duration
	ttl     int32
}

type publisher struct {
	addr   string
	client *client.Client
	mu     sync.Mutex
	next   *job
	wake   chan struct{}
	stats  Stats
	memo   Memo // the last build's pod facts (only the publishing goroutine touches it)
}

// publisherFor returns the publisher of addr, dialling it once (the dial is lazy: no I/O here).
func publisherFor(addr string) (*publisher, error) {
	publishersMu.Lock()
	defer publishersMu.Unlock()
	if p, ok := publishers[addr]; ok {
		return p, nil
	}
	c, err := client.Dial(addr, client.Options{})
	if err != nil {
		return nil, err
	}
	p := &publisher{addr: addr, client: c, wake: make(chan struct{}, 1)}
	publishers[addr] = p
	go p.run()
	return p, nil
}

// submit leaves the capture for the publishing goroutine, replacing one it has not taken yet.
func (p *publisher) submit(j *job) {
	p.mu.Lock()
	if p.next != nil {
		p.stats.Dropped.Add(1)
		sessionsTotal.WithLabelValues("dropped").Inc()
	}
	p.next = j
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *publisher) take() *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.next
	p.next = nil
	return j
}

func (p *publisher) run() {
	for range p.wake {
		j := p.take()
		if j == nil {
			continue
		}
		started := time.Now()
		conv, memo, err := j.capture.Build(p.memo)
		if err != nil {
			p.stats.Failed.Add(1)
			sessionsTotal.WithLabelValues("failed").Inc()
			klog.Warningf("repack: session %s not converted: %v", j.capture.uid, err)
			continue
		}
		if conv.Orphans > 0 {
			klog.V(3).Infof("repack: session %s: %d tasks on nodes not in the session (counted on no node)", j.capture.uid, conv.Orphans)
		}
		p.memo = memo
		built := time.Since(started)
		ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
		resp, err := p.client.OpenSession(ctx, &pb.OpenSessionRequest{Snapshot: conv.Snapshot, TtlSeconds: j.ttl, PublishAs: client.Latest})
		cancel()
		p.stats.BuildMicros.Store(built.Microseconds())
		p.stats.LastMicros.Store(time.Since(started).Microseconds())
		publishSeconds.Observe(time.Since(started).Seconds())
		if err != nil {
			p.stats.Failed.Add(1)
			sessionsTotal.WithLabelValues("failed").Inc()
			klog.Warningf("repack: publishing session %s to %s failed after %s: %v",
				j.capture.uid, p.addr, time.Since(started).Round(time.Millisecond), err)
			continue
		}
		p.stats.Published.Add(1)
		sessionsTotal.WithLabelValues("published").Inc()
		klog.V(4).Infof("repack: session %s published as %q to %s in %s (built in %s; %d nodes, %d tasks)",
			j.capture.uid, resp.SessionId, p.addr, time.Since(started).Round(time.Millisecond),
			built.Round(time.Millisecond), resp.NodeCount, resp.TaskCount)
	}
}
