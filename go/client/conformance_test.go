package client_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/client"
)

// conformanceCase is one entry of cases.json, written by tests/mirror/test_go_conformance.py.
type conformanceCase struct {
	Name     string `json:"name"`
	Snapshot string `json:"snapshot"`
	Run      string `json:"run"`
	TaskUID  string `json:"taskUid"`
	// PipelineUID, when set, is a pending task pipelined onto the first node Filter finds for it
	// (Statement.Pipeline); ThenUID is a pending task filtered afterwards, which must see it there.
	PipelineUID string `json:"pipelineUid"`
	ThenUID     string `json:"thenUid"`
	// PendingGroups are PodGroups (namespace/name, comma-separated) CheckPending is asked about.
	PendingGroups string `json:"pendingGroups"`
}

// TestConformance drives a real sidecar (REPACK_CONFORMANCE_TARGET) through the calls a
// scheduler plugin makes and writes each answer's deterministic bytes to
// REPACK_CONFORMANCE_DIR/go/<case>/<step>.pb; the Python test makes the same calls with the
// Python client and compares the files byte for byte. Session ids and expiry differ per
// session by design, so OpenSession answers are written with those two fields cleared.
func TestConformance(t *testing.T) {
	dir, target := os.Getenv("REPACK_CONFORMANCE_DIR"), os.Getenv("REPACK_CONFORMANCE_TARGET")
	if dir == "" || target == "" {
		t.Skip("REPACK_CONFORMANCE_DIR and REPACK_CONFORMANCE_TARGET unset (tests/mirror/test_go_conformance.py sets them)")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases struct {
		Cases []conformanceCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(target, client.Options{Timeout: 120 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Healthy(context.Background()); err != nil {
		t.Fatalf("health: %v", err)
	}
	for _, cc := range cases.Cases {
		t.Run(cc.Name, func(t *testing.T) { runCase(t, c, dir, cc) })
	}
}

func runCase(t *testing.T, c *client.Client, dir string, cc conformanceCase) {
	ctx := context.Background()
	snap, err := client.LoadSnapshot(filepath.Join(dir, cc.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := client.LoadRepackSpec(filepath.Join(dir, cc.Run))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "go", cc.Name)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	save := func(step string, m proto.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		data, err := client.MarshalDeterministic(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, step+".pb"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ev, err := c.Evaluate(ctx, &pb.EvaluateRequest{Source: &pb.EvaluateRequest_Snapshot{Snapshot: snap}})
	save("evaluate-inline", ev, err)
	plan, err := c.Plan(ctx, &pb.PlanRequest{Source: &pb.PlanRequest_Snapshot{Snapshot: snap}, Spec: spec})
	save("plan-inline", plan, err)

	opened, err := c.OpenSession(ctx, &pb.OpenSessionRequest{Snapshot: snap, TtlSeconds: 300})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	id := opened.GetSessionId()
	if id == "" || opened.GetExpiresAt().AsTime().Before(time.Now()) {
		t.Fatalf("open: want an id and a future expiry, got %v", opened)
	}
	opened.SessionId, opened.ExpiresAt = "", nil
	save("open", opened, nil)

	ev, err = c.Evaluate(ctx, &pb.EvaluateRequest{Source: &pb.EvaluateRequest_SessionId{SessionId: id}})
	save("evaluate", ev, err)
	plan, err = c.Plan(ctx, &pb.PlanRequest{Source: &pb.PlanRequest_SessionId{SessionId: id}, Spec: spec})
	save("plan", plan, err)
	filtered, err := c.Filter(ctx, &pb.FilterRequest{
		Source:  &pb.FilterRequest_SessionId{SessionId: id},
		Subject: &pb.FilterRequest_TaskUid{TaskUid: cc.TaskUID},
	})
	save("filter", filtered, err)
	scored, err := c.Prioritize(ctx, &pb.PrioritizeRequest{
		Source:  &pb.PrioritizeRequest_SessionId{SessionId: id},
		Subject: &pb.PrioritizeRequest_TaskUid{TaskUid: cc.TaskUID},
	})
	save("prioritize", scored, err)
	if cc.PipelineUID != "" {
		pending, err := c.Filter(ctx, &pb.FilterRequest{
			Source:  &pb.FilterRequest_SessionId{SessionId: id},
			Subject: &pb.FilterRequest_TaskUid{TaskUid: cc.PipelineUID},
		})
		save("filter-pending", pending, err)
		if len(pending.GetFeasibleNodes()) == 0 {
			t.Fatalf("pipeline: no feasible node for %s", cc.PipelineUID)
		}
		piped, err := c.Pipeline(ctx, &pb.PipelineRequest{
			SessionId: id, TaskUid: cc.PipelineUID, Node: pending.GetFeasibleNodes()[0],
		})
		save("pipeline", piped, err)
		after, err := c.Filter(ctx, &pb.FilterRequest{
			Source:  &pb.FilterRequest_SessionId{SessionId: id},
			Subject: &pb.FilterRequest_TaskUid{TaskUid: cc.ThenUID},
		})
		save("filter-after-pipeline", after, err)
		waiting, err := c.CheckPending(ctx, &pb.CheckPendingRequest{
			Source:    &pb.CheckPendingRequest_SessionId{SessionId: id},
			Spec:      spec,
			PodGroups: strings.Split(cc.PendingGroups, ","),
		})
		save("check-pending", waiting, err)
	}
	closed, err := c.CloseSession(ctx, id)
	save("close", closed, err)
}
