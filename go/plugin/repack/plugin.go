// Package repack is a Volcano scheduler plugin that publishes every scheduling session to the
// repack sidecar as its session "latest" (the view the RepackRun watcher plans on), and can
// optionally take part in placement through the sidecar's Filter and Prioritize.
//
// It is compiled into vc-scheduler (cmd/vc-scheduler: Volcano's own main plus this import) and
// enabled in volcano-scheduler.conf:
//
//   - plugins:
//   - name: repack
//     arguments:
//     repack.address: 127.0.0.1:50151
package repack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/client"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// PluginName is the name volcano-scheduler.conf enables the plugin by.
const PluginName = "repack"

// The plugin's arguments in volcano-scheduler.conf.
const (
	ArgAddress        = "repack.address"        // the sidecar's gRPC address (default 127.0.0.1:50151)
	ArgPublish        = "repack.publish"        // publish each session as "latest" (default true)
	ArgPublishTimeout = "repack.publishTimeout" // deadline of one publish call (default 800ms)
	ArgBudget         = "repack.budget"         // most time a cycle may spend capturing the session (default 100ms)
	ArgSessionTTL     = "repack.sessionTTL"     // how long the sidecar keeps "latest" (default: its --session-ttl)
	ArgPredicate      = "repack.predicate"      // register a predicate on the sidecar's Filter (default false)
	ArgNodeOrder      = "repack.nodeOrder"      // register a batch node order on its Prioritize (default false)
	ArgHookTimeout    = "repack.hookTimeout"    // deadline of one Filter/Prioritize call (default 50ms)
)

// Config is the plugin's arguments, defaults applied.
type Config struct {
	Address        string
	Publish        bool
	PublishTimeout time.Duration
	Budget         time.Duration
	SessionTTL     time.Duration
	Predicate      bool
	NodeOrder      bool
	HookTimeout    time.Duration
}

// DefaultConfig is what an empty arguments block means.
func DefaultConfig() Config {
	return Config{
		Address: "127.0.0.1:50151", Publish: true, PublishTimeout: 800 * time.Millisecond,
		Budget: 100 * time.Millisecond, HookTimeout: 50 * time.Millisecond,
	}
}

// ParseConfig reads the arguments; a bad value is an error naming its key (New logs it and
// keeps that key's default, since a Volcano plugin builder cannot fail).
func ParseConfig(args framework.Arguments) (Config, error) {
	cfg := DefaultConfig()
	var errs []error
	for key, value := range args {
		var err error
		switch key {
		case ArgAddress:
			cfg.Address, err = stringArg(value)
			if err == nil && cfg.Address == "" {
				err = errors.New("empty")
			}
		case ArgPublish:
			cfg.Publish, err = boolArg(value)
		case ArgPredicate:
			cfg.Predicate, err = boolArg(value)
		case ArgNodeOrder:
			cfg.NodeOrder, err = boolArg(value)
		case ArgPublishTimeout:
			cfg.PublishTimeout, err = durationArg(value, false)
		case ArgBudget:
			cfg.Budget, err = durationArg(value, true)
		case ArgSessionTTL:
			cfg.SessionTTL, err = durationArg(value, true)
		case ArgHookTimeout:
			cfg.HookTimeout, err = durationArg(value, false)
		default:
			if strings.HasPrefix(key, "repack.") {
				err = errors.New("unknown argument")
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
			def := DefaultConfig()
			switch key { // a bad value keeps the default, never a half-parsed one
			case ArgAddress:
				cfg.Address = def.Address
			case ArgPublishTimeout:
				cfg.PublishTimeout = def.PublishTimeout
			case ArgBudget:
				cfg.Budget = def.Budget
			case ArgSessionTTL:
				cfg.SessionTTL = def.SessionTTL
			case ArgHookTimeout:
				cfg.HookTimeout = def.HookTimeout
			}
		}
	}
	return cfg, errors.Join(errs...)
}

func stringArg(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T %v", v, v)
	}
	return strings.TrimSpace(s), nil
}

func boolArg(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("want true or false, got %T %v", v, v)
}

// durationArg reads "800ms"-style strings (a bare integer is milliseconds); zero only if allowed.
func durationArg(v any, zeroOK bool) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case string:
		parsed, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("want a duration like 800ms: %v", err)
		}
		d = parsed
	case int:
		d = time.Duration(x) * time.Millisecond
	case float64:
		d = time.Duration(x * float64(time.Millisecond))
	default:
		return 0, fmt.Errorf("want a duration like 800ms, got %T %v", v, v)
	}
	if d < 0 || (d == 0 && !zeroOK) {
		return 0, fmt.Errorf("want a positive duration, got %s", d)
	}
	return d, nil
}

type plugin struct {
	cfg Config
	pub *publisher
	// set when a hook call finds the sidecar unavailable: the other calls of this session
	// abstain at once, so a slow sidecar costs a cycle one hook deadline, not one per call
	hooksOff atomic.Bool
}

// New builds the plugin for one session (Volcano calls it every cycle); the connection it
// uses is the package's, made on the first cycle.
func New(args framework.Arguments) framework.Plugin {
	cfg, err := ParseConfig(args)
	if err != nil {
		klog.Errorf("repack: volcano-scheduler.conf arguments: %v (defaults kept for those)", err)
	}
	p := &plugin{cfg: cfg}
	if p.pub, err = publisherFor(cfg.Address); err != nil {
		klog.Errorf("repack: sidecar address %s: %v", cfg.Address, err)
	}
	return p
}

func (p *plugin) Name() string { return PluginName }

// OnSessionOpen captures the session on the scheduling goroutine (actions change it afterwards,
// so it cannot be read later), within the budget, and hands the capture to the publisher, which
// builds and sends the Snapshot on its own goroutine.
func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	if p.pub == nil {
		return
	}
	if p.cfg.Publish {
		c, err := CaptureSession(Session{UID: string(ssn.UID), Jobs: ssn.Jobs, Nodes: ssn.Nodes, Tiers: ssn.Tiers}, p.cfg.Budget)
		if err != nil {
			p.pub.stats.Failed.Add(1)
			sessionsTotal.WithLabelValues("over_budget").Inc()
			klog.Warningf("repack: session %s not published: %v", ssn.UID, err)
		} else {
			captureSeconds.Observe(c.Took.Seconds())
			p.pub.submit(&job{capture: c, timeout: p.cfg.PublishTimeout, ttl: int32(p.cfg.SessionTTL / time.Second)})
		}
	}
	if p.cfg.Predicate {
		ssn.AddPredicateFn(p.Name(), p.predicate)
	}
	if p.cfg.NodeOrder {
		ssn.AddBatchNodeOrderFn(p.Name(), p.nodeOrder)
	}
}

func (p *plugin) OnSessionClose(*framework.Session) {}

// Code is the Volcano status code of a Filter failure group: the contract's codes are
// Volcano's less one (pkg/scheduler/api/types.go: 2 Unschedulable, 3 UnschedulableAndUnresolvable).
func Code(c pb.FailureCode) int {
	if c == pb.FailureCode_UNSCHEDULABLE_AND_UNRESOLVABLE {
		return api.UnschedulableAndUnresolvable
	}
	return api.Unschedulable
}

// hookTask is the task as the contract's inline Task (its node and status are ignored by Filter).
func hookTask(t *api.TaskInfo) *pb.Task {
	cpu, mem := nonzero(t.Pod)
	return &pb.Task{
		Uid: string(t.UID), Namespace: t.Namespace, Name: t.Name, Requests: requests(t.InitResreq),
		Priority: t.Priority, Profile: Profile(t.Pod), Role: t.TaskRole,
		NonzeroRequests: &pb.NonZeroRequests{Cpu: cpu, Memory: mem},
	}
}

// unavailable: the sidecar cannot answer now (no "latest" yet, restarting, slow). The hooks then
// abstain — no veto, no score — so scheduling goes on exactly as without the plugin.
func unavailable(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted:
		return true
	}
	return false
}

func (p *plugin) abstain(err error) {
	if unavailable(err) && !p.hooksOff.Swap(true) {
		klog.Warningf("repack: sidecar unavailable for placement hooks this session: %v", err)
	}
}

func (p *plugin) predicate(task *api.TaskInfo, node *api.NodeInfo) error {
	if p.hooksOff.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.HookTimeout)
	defer cancel()
	resp, err := p.pub.client.Filter(ctx, &pb.FilterRequest{
		Source:  &pb.FilterRequest_SessionId{SessionId: client.Latest},
		Subject: &pb.FilterRequest_Task{Task: hookTask(task)},
		Nodes:   []string{node.Name},
	})
	if err != nil {
		p.abstain(err)
		if !unavailable(err) {
			klog.V(3).Infof("repack: predicate %s/%s on %s: %v", task.Namespace, task.Name, node.Name, err)
		}
		return nil
	}
	for _, f := range resp.Failures {
		return api.NewFitErrWithStatus(task, node, &api.Status{
			Code: Code(f.Code), Reason: strings.Join(f.Reasons, ", "), Plugin: PluginName,
		})
	}
	return nil
}

func (p *plugin) nodeOrder(task *api.TaskInfo, nodes []*api.NodeInfo) (map[string]float64, error) {
	if p.hooksOff.Load() {
		return map[string]float64{}, nil
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.HookTimeout)
	defer cancel()
	resp, err := p.pub.client.Prioritize(ctx, &pb.PrioritizeRequest{
		Source:  &pb.PrioritizeRequest_SessionId{SessionId: client.Latest},
		Subject: &pb.PrioritizeRequest_Task{Task: hookTask(task)},
		Nodes:   names,
	})
	if err != nil {
		p.abstain(err)
		if !unavailable(err) {
			klog.V(3).Infof("repack: node order %s/%s: %v", task.Namespace, task.Name, err)
		}
		return map[string]float64{}, nil
	}
	scores := make(map[string]float64, len(resp.Scores))
	for _, s := range resp.Scores {
		scores[s.Node] = s.Score
	}
	return scores, nil
}

func init() {
	framework.RegisterPluginBuilder(PluginName, New)
}
