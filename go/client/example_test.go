package client_test

import (
	"context"
	"log"
	"time"

	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/client"
)

// cycle plans on a private session: upload a snapshot once and plan on it off the caller's
// goroutine, under a deadline shorter than the caller's period, so a slow or restarting sidecar
// never delays it; cancel the returned context from the next period. (The scheduler plugin in
// go/plugin publishes the shared session "latest" instead: docs/volcano-plugin.md.)
func cycle(c *client.Client, snap *pb.Snapshot, spec *pb.RepackSpec, period time.Duration) context.CancelFunc {
	ctx, cancel := context.WithTimeout(context.Background(), period*8/10)
	go func() {
		defer cancel()
		opened, err := c.OpenSession(ctx, &pb.OpenSessionRequest{Snapshot: snap, TtlSeconds: 10})
		if err != nil {
			log.Printf("repack sidecar unavailable this cycle: %v", err) // schedule as without it
			return
		}
		defer func() { _, _ = c.CloseSession(context.Background(), opened.GetSessionId()) }()
		plan, err := c.Plan(ctx, &pb.PlanRequest{Source: &pb.PlanRequest_SessionId{SessionId: opened.GetSessionId()}, Spec: spec})
		if err != nil {
			log.Printf("no plan this cycle: %v", err)
			return
		}
		log.Printf("would free %d nodes", plan.GetStatus().GetPlan().GetSummary().GetFreedNodeCount())
	}()
	return cancel
}

// Example_cycle dials once (lazily) and runs one cycle; compiled with the tests, not run
// (it needs a sidecar).
func Example_cycle() {
	c, err := client.Dial("127.0.0.1:50151", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	spec := &pb.RepackSpec{Mode: pb.RepackSpec_DryRun, Goals: []*pb.RepackGoal{{Resource: "nvidia.com/gpu"}}}
	cancel := cycle(c, &pb.Snapshot{Name: "session-uid"}, spec, time.Second)
	defer cancel()
}
