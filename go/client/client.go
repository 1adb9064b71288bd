// Package client is a small Go client of the sidecar's Repack service: the calls a Volcano
// scheduler plugin makes each cycle (OpenSession, Plan, Filter, Prioritize, Evaluate,
// CloseSession), Pipeline, Supplement and CheckPending, plus the grpc.health.v1 check, each
// under a deadline.
//
// It mirrors sidecar/client.py: the same message-size limits (snapshots are far above gRPC's
// default 4 MiB), keepalive, and retries of UNAVAILABLE only (the sidecar restarting beside the
// scheduler), within each call's deadline. grpc-go 1.33 (Debian bookworm) honours a service
// config retryPolicy only with GRPC_GO_RETRY=on, so the retry loop lives here instead.
package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "volcano.sh/repack/api/v1alpha1"
)

const (
	// MiB is 2^20 bytes.
	MiB = 1 << 20
	// Service is the gRPC service name, also the health-check name the sidecar reports.
	Service = "volcano.repack.v1alpha1.Repack"
	// Latest is the session the scheduler keeps current, through the repack plugin or the
	// extender intake (sidecar/api/sessions.py).
	Latest = "latest"
	// AgeMetadata is the trailer carrying the age in seconds of Latest.
	AgeMetadata = "repack-session-age-seconds"
)

// Options are the channel and call settings; the zero value takes the defaults below.
type Options struct {
	// MaxMessageBytes caps received messages (default 64 MiB, as the Python client and the
	// server's --max-message-mib); sends may be up to twice that plus 1 MiB, the server's
	// transport ceiling, so the sidecar (not the transport) words an oversized request.
	MaxMessageBytes int
	// Timeout is each call's deadline when its context has none (default 30 s).
	Timeout time.Duration
	// KeepaliveTime is the idle time before a ping on an active connection (default 30 s; the
	// server accepts pings every 5 s).
	KeepaliveTime time.Duration
	// Attempts is how many times a call failing with UNAVAILABLE is tried (default 4; 1 = no retry).
	Attempts int
	// InitialBackoff and MaxBackoff bound the random wait before retry n: up to
	// InitialBackoff·2^n, capped at MaxBackoff (defaults 0.2 s and 2 s, as sidecar/client.py).
	InitialBackoff, MaxBackoff time.Duration
	// DialOptions are appended (e.g. a custom dialer); insecure transport is always used, the
	// sidecar listening on loopback beside the scheduler.
	DialOptions []grpc.DialOption
}

func (o Options) withDefaults() Options {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 64 * MiB
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.KeepaliveTime <= 0 {
		o.KeepaliveTime = 30 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = 200 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 2 * time.Second
	}
	return o
}

// Client is safe for concurrent use; Close it when done.
type Client struct {
	conn   *grpc.ClientConn
	repack pb.RepackClient
	health healthpb.HealthClient
	opts   Options
}

// Dial connects lazily (like grpc.Dial): a sidecar not yet listening fails the first call with
// UNAVAILABLE, which is retried within that call's deadline.
func Dial(target string, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	dial := []grpc.DialOption{
		grpc.WithInsecure(),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(opts.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(2*opts.MaxMessageBytes+MiB),
		),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: opts.KeepaliveTime, Timeout: 10 * time.Second}),
	}
	conn, err := grpc.Dial(target, append(dial, opts.DialOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	return &Client{conn: conn, repack: pb.NewRepackClient(conn), health: healthpb.NewHealthClient(conn), opts: opts}, nil
}

// Close releases the connection.
func (c *Client) Close() error { return c.conn.Close() }

// call runs one RPC under the context's deadline (or the client's Timeout), retrying UNAVAILABLE.
func call[Req, Resp any](ctx context.Context, c *Client, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, callOpts ...grpc.CallOption) (Resp, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	for attempt := 1; ; attempt++ {
		resp, err := rpc(ctx, req, callOpts...)
		if err == nil || status.Code(err) != codes.Unavailable || attempt >= c.opts.Attempts {
			return resp, err
		}
		limit := math.Min(float64(c.opts.InitialBackoff)*math.Pow(2, float64(attempt-1)), float64(c.opts.MaxBackoff))
		wait := time.Duration(rand.Float64() * limit)
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(wait):
		}
	}
}

// Evaluate returns the fragmentation rate per resource.
func (c *Client) Evaluate(ctx context.Context, req *pb.EvaluateRequest) (*pb.EvaluateResponse, error) {
	return call(ctx, c, c.repack.Evaluate, req)
}

// Plan returns a repack plan (a RepackRun status) for the request's spec.
func (c *Client) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	return call(ctx, c, c.repack.Plan, req)
}

// PlanLatest plans on the extender's session Latest and returns the answer with that session's
// age in seconds (+Inf when the trailer is missing or unreadable).
func (c *Client) PlanLatest(ctx context.Context, spec *pb.RepackSpec) (*pb.PlanResponse, float64, error) {
	var trailer metadata.MD
	resp, err := call(ctx, c, c.repack.Plan, &pb.PlanRequest{Source: &pb.PlanRequest_SessionId{SessionId: Latest}, Spec: spec}, grpc.Trailer(&trailer))
	age := math.Inf(1)
	if values := trailer.Get(AgeMetadata); len(values) > 0 {
		if parsed, perr := strconv.ParseFloat(values[0], 64); perr == nil {
			age = parsed
		}
	}
	return resp, age, err
}

// Filter checks one task against nodes: feasible ones and Volcano-worded reasons for the rest.
func (c *Client) Filter(ctx context.Context, req *pb.FilterRequest) (*pb.FilterResponse, error) {
	return call(ctx, c, c.repack.Filter, req)
}

// Prioritize scores the feasible candidates for one task, best first.
func (c *Client) Prioritize(ctx context.Context, req *pb.PrioritizeRequest) (*pb.PrioritizeResponse, error) {
	return call(ctx, c, c.repack.Prioritize, req)
}

// OpenSession uploads a snapshot once; later calls name it by the returned id.
func (c *Client) OpenSession(ctx context.Context, req *pb.OpenSessionRequest) (*pb.OpenSessionResponse, error) {
	return call(ctx, c, c.repack.OpenSession, req)
}

// CloseSession drops a session (closed is false when the id was unknown or expired).
func (c *Client) CloseSession(ctx context.Context, sessionID string) (*pb.CloseSessionResponse, error) {
	return call(ctx, c, c.repack.CloseSession, &pb.CloseSessionRequest{SessionId: sessionID})
}

// CheckPending says why each of the PodGroups waits (Running, FitsNow, Enqueue, Capacity,
// Fragmentation, NoPlan, Unchecked, NotFound, NotVolcano): a RepackPolicy's whenPending check.
func (c *Client) CheckPending(ctx context.Context, req *pb.CheckPendingRequest) (*pb.CheckPendingResponse, error) {
	return call(ctx, c, c.repack.CheckPending, req)
}

// Pipeline records in an open session that a pending task is pipelined onto a node (Volcano's
// Statement.Pipeline): later Filter and Prioritize calls on the session count it there.
func (c *Client) Pipeline(ctx context.Context, req *pb.PipelineRequest) (*pb.PipelineResponse, error) {
	return call(ctx, c, c.repack.Pipeline, req)
}

// Supplement sends namespace labels and PDBs that a pushed session does not carry.
func (c *Client) Supplement(ctx context.Context, req *pb.SupplementRequest) (*pb.SupplementResponse, error) {
	return call(ctx, c, c.repack.Supplement, req)
}

// ErrNotServing is returned by Healthy when the sidecar answers but is not SERVING (draining).
var ErrNotServing = errors.New("sidecar not serving")

// Health is the grpc.health.v1 status of service ("" for the server as a whole, or Service).
func (c *Client) Health(ctx context.Context, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	resp, err := call(ctx, c, c.health.Check, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN, err
	}
	return resp.GetStatus(), nil
}

// Healthy is nil only when the Repack service reports SERVING.
func (c *Client) Healthy(ctx context.Context) error {
	st, err := c.Health(ctx, Service)
	if err != nil {
		return err
	}
	if st != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%w: %s", ErrNotServing, st)
	}
	return nil
}
