package client_test

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/client"
)

// fake is an in-process Repack server whose answers each test scripts.
type fake struct {
	pb.UnimplementedRepackServer
	calls    atomic.Int32
	deadline atomic.Value // time.Duration left when the last call arrived
	evaluate func(n int32) (*pb.EvaluateResponse, error)
	filter   func() *pb.FilterResponse
	plan     func(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error)
}

func (f *fake) record(ctx context.Context) int32 {
	if d, ok := ctx.Deadline(); ok {
		f.deadline.Store(time.Until(d))
	} else {
		f.deadline.Store(time.Duration(-1))
	}
	return f.calls.Add(1)
}

func (f *fake) Evaluate(ctx context.Context, _ *pb.EvaluateRequest) (*pb.EvaluateResponse, error) {
	return f.evaluate(f.record(ctx))
}

func (f *fake) Filter(ctx context.Context, _ *pb.FilterRequest) (*pb.FilterResponse, error) {
	f.record(ctx)
	return f.filter(), nil
}

func (f *fake) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	f.record(ctx)
	return f.plan(ctx, req)
}

// serve starts f (and a health server) on loopback; the returned health server sets statuses.
func serve(t *testing.T, f *fake) (string, *health.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxSendMsgSize(256 * client.MiB))
	pb.RegisterRepackServer(srv, f)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), hs
}

func dial(t *testing.T, addr string, opts client.Options) *client.Client {
	t.Helper()
	if opts.InitialBackoff == 0 {
		opts.InitialBackoff = 10 * time.Millisecond
	}
	c, err := client.Dial(addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ok(int32) (*pb.EvaluateResponse, error) { return &pb.EvaluateResponse{}, nil }

func TestEveryCallCarriesADeadline(t *testing.T) {
	f := &fake{evaluate: ok}
	addr, _ := serve(t, f)
	c := dial(t, addr, client.Options{Timeout: 7 * time.Second})
	if _, err := c.Evaluate(context.Background(), &pb.EvaluateRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := f.deadline.Load().(time.Duration); left <= 0 || left > 7*time.Second {
		t.Fatalf("client Timeout 7s: server saw %v left", left)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Evaluate(ctx, &pb.EvaluateRequest{}); err != nil {
		t.Fatal(err)
	}
	if left := f.deadline.Load().(time.Duration); left <= 0 || left > 2*time.Second {
		t.Fatalf("the caller's 2s deadline wins over Timeout: server saw %v left", left)
	}
}

func TestUnavailableIsRetriedOtherCodesAreNot(t *testing.T) {
	f := &fake{evaluate: func(n int32) (*pb.EvaluateResponse, error) {
		if n < 3 {
			return nil, status.Error(codes.Unavailable, "restarting")
		}
		return &pb.EvaluateResponse{Resources: []*pb.Fragmentation{{Resource: "nvidia.com/gpu"}}}, nil
	}}
	addr, _ := serve(t, f)
	c := dial(t, addr, client.Options{Attempts: 4})
	resp, err := c.Evaluate(context.Background(), &pb.EvaluateRequest{})
	if err != nil || f.calls.Load() != 3 || resp.GetResources()[0].GetResource() != "nvidia.com/gpu" {
		t.Fatalf("want success on the third try, got %v after %d calls", err, f.calls.Load())
	}

	f.calls.Store(0)
	f.evaluate = func(int32) (*pb.EvaluateResponse, error) { return nil, status.Error(codes.Unavailable, "down") }
	if _, err := c.Evaluate(context.Background(), &pb.EvaluateRequest{}); status.Code(err) != codes.Unavailable || f.calls.Load() != 4 {
		t.Fatalf("want UNAVAILABLE after 4 attempts, got %v after %d calls", err, f.calls.Load())
	}

	f.calls.Store(0)
	f.evaluate = func(int32) (*pb.EvaluateResponse, error) {
		return nil, status.Error(codes.InvalidArgument, `nodes[1].name: duplicate node "n-0"`)
	}
	if _, err := c.Evaluate(context.Background(), &pb.EvaluateRequest{}); status.Code(err) != codes.InvalidArgument || f.calls.Load() != 1 {
		t.Fatalf("INVALID_ARGUMENT must not be retried: %v after %d calls", err, f.calls.Load())
	}
}

func TestNoServerFailsWithinTheDeadline(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close() // nothing listens there now
	c := dial(t, addr, client.Options{Timeout: 3 * time.Second, Attempts: 3})
	start := time.Now()
	_, err = c.Evaluate(context.Background(), &pb.EvaluateRequest{})
	if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
		t.Fatalf("want UNAVAILABLE or DEADLINE_EXCEEDED, got %v", err)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Fatalf("the call outlived its deadline by far: %v", elapsed)
	}
}

func TestReceiveLimitIsConfigurableAndAboveGRPCsDefault(t *testing.T) {
	names := make([]string, 6*1024) // ~6 MiB of node names: above gRPC's default 4 MiB
	for i := range names {
		names[i] = strings.Repeat("n", 1023)
	}
	f := &fake{filter: func() *pb.FilterResponse { return &pb.FilterResponse{FeasibleNodes: names} }}
	addr, _ := serve(t, f)
	resp, err := dial(t, addr, client.Options{}).Filter(context.Background(), &pb.FilterRequest{})
	if err != nil || len(resp.GetFeasibleNodes()) != len(names) {
		t.Fatalf("default 64 MiB limit: %v", err)
	}
	small := dial(t, addr, client.Options{MaxMessageBytes: 1 * client.MiB})
	if _, err := small.Filter(context.Background(), &pb.FilterRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a 1 MiB limit must refuse a 6 MiB answer with RESOURCE_EXHAUSTED, got %v", err)
	}
}

func TestPlanLatestReadsTheAgeTrailer(t *testing.T) {
	f := &fake{plan: func(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
		if req.GetSessionId() != client.Latest || req.GetSpec().GetMode() != pb.RepackSpec_DryRun {
			return nil, status.Errorf(codes.InvalidArgument, "got session %q", req.GetSessionId())
		}
		_ = grpc.SetTrailer(ctx, metadata.Pairs(client.AgeMetadata, "1.5"))
		return &pb.PlanResponse{Status: &pb.RepackStatus{Phase: "Succeeded"}}, nil
	}}
	addr, _ := serve(t, f)
	c := dial(t, addr, client.Options{})
	resp, age, err := c.PlanLatest(context.Background(), &pb.RepackSpec{Mode: pb.RepackSpec_DryRun})
	if err != nil || age != 1.5 || resp.GetStatus().GetPhase() != "Succeeded" {
		t.Fatalf("got %v, age %v", err, age)
	}
	f.plan = func(context.Context, *pb.PlanRequest) (*pb.PlanResponse, error) { return &pb.PlanResponse{}, nil }
	if _, age, err = c.PlanLatest(context.Background(), &pb.RepackSpec{}); err != nil || !math.IsInf(age, 1) {
		t.Fatalf("no trailer: want +Inf, got %v (%v)", age, err)
	}
}

func TestHealth(t *testing.T) {
	addr, hs := serve(t, &fake{})
	c := dial(t, addr, client.Options{})
	hs.SetServingStatus(client.Service, healthpb.HealthCheckResponse_SERVING)
	if err := c.Healthy(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs.SetServingStatus(client.Service, healthpb.HealthCheckResponse_NOT_SERVING)
	if err := c.Healthy(context.Background()); !errors.Is(err, client.ErrNotServing) {
		t.Fatalf("want ErrNotServing, got %v", err)
	}
}
