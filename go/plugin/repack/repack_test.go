package repack_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/plugin/repack"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
	"volcano.sh/volcano/pkg/scheduler/uthelper"
	"volcano.sh/volcano/pkg/scheduler/util"
)

const gpu = "nvidia.com/gpu"

func TestMain(m *testing.M) {
	// Volcano's cache logs every session at error level; keep the test output readable
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	_ = flags.Set("logtostderr", "false")
	_ = flags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// sidecar is an in-process Repack server standing in for the Python sidecar: it records what
// the plugin publishes and answers Filter/Prioritize as each test scripts.
type sidecar struct {
	pb.UnimplementedRepackServer
	published  chan *pb.OpenSessionRequest
	delay      time.Duration
	filter     func(*pb.FilterRequest) (*pb.FilterResponse, error)
	prioritize func(*pb.PrioritizeRequest) (*pb.PrioritizeResponse, error)
}

func (s *sidecar) OpenSession(ctx context.Context, req *pb.OpenSessionRequest) (*pb.OpenSessionResponse, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, status.Error(codes.DeadlineExceeded, "slow sidecar")
	}
	s.published <- req
	return &pb.OpenSessionResponse{SessionId: req.PublishAs, NodeCount: int32(len(req.Snapshot.Nodes))}, nil
}

func (s *sidecar) Filter(_ context.Context, req *pb.FilterRequest) (*pb.FilterResponse, error) {
	return s.filter(req)
}

func (s *sidecar) Prioritize(_ context.Context, req *pb.PrioritizeRequest) (*pb.PrioritizeResponse, error) {
	return s.prioritize(req)
}

func serve(t *testing.T, s *sidecar) string {
	t.Helper()
	if s.published == nil {
		s.published = make(chan *pb.OpenSessionRequest, 16)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterRepackServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func gpus(cpu, mem, cards string) v1.ResourceList {
	return api.BuildResourceList(cpu, mem, api.ScalarResource{Name: gpu, Value: cards})
}

func node(name, zone string) *v1.Node {
	alloc := api.BuildResourceList("32", "256Gi", api.ScalarResource{Name: gpu, Value: "8"}, api.ScalarResource{Name: "pods", Value: "110"})
	return util.BuildNode(name, alloc, map[string]string{"zone": zone})
}

// cluster is a small GPU pool as Volcano's plugin tests build one: two PodGroups running, a
// pending task with every kind of placement rule, a pod of another scheduler, a cordoned and a
// NotReady node.
func cluster() *uthelper.TestCommonStruct {
	n1 := node("gpu-1", "a")
	n2 := node("gpu-2", "a")
	n3 := node("gpu-3", "b")
	n3.Spec.Unschedulable = true
	n3.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "infer", Effect: v1.TaintEffectNoSchedule}}
	n4 := node("gpu-4", "b")
	n4.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}

	train := func(name, node string) *v1.Pod {
		p := util.BuildPod("ml", name, node, v1.PodRunning, gpus("4", "32Gi", "2"), "train", map[string]string{"app": "train"}, nil)
		p.Annotations["volcano.sh/task-spec"] = "worker"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "train", UID: "j-1", Controller: ptr(true)}}
		return p
	}
	infer := util.BuildPod("serve", "infer-0", "gpu-2", v1.PodRunning, gpus("2", "8Gi", "1"), "infer", nil, nil)
	infer.Spec.Containers = append(infer.Spec.Containers, v1.Container{Name: "sidecar"}) // no request: non-zero defaults
	pending := util.BuildPod("ml", "eval-0", "", v1.PodPending, gpus("8", "64Gi", "4"), "eval", map[string]string{"app": "eval"}, map[string]string{"zone": "a"})
	pending.Spec.Priority = ptr(int32(100))
	pending.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "infer", Effect: v1.TaintEffectNoSchedule}}
	pending.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 8470, ContainerPort: 8470, Protocol: v1.ProtocolTCP}, {HostPort: 53, Protocol: v1.ProtocolUDP}}
	pending.Spec.Affinity = &v1.Affinity{
		NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
				{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a", "b"}}}},
			}},
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
				{Weight: 5, Preference: v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpNotIn, Values: []string{"gpu-4"}}}}},
			},
		},
		PodAntiAffinity: &v1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: v1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}}, TopologyKey: "zone",
				NamespaceSelector: &metav1.LabelSelector{},
			}}},
		},
	}
	pending.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway, MinDomains: nil,
		LabelSelector:  &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
		MatchLabelKeys: []string{"pod-template-hash"},
	}}
	other := util.BuildPod("kube-system", "dns-0", "gpu-1", v1.PodRunning, api.BuildResourceList("1", "1Gi"), "", nil, nil)
	other.Spec.SchedulerName = "default-scheduler"

	return &uthelper.TestCommonStruct{
		Nodes: []*v1.Node{n1, n2, n3, n4},
		Pods:  []*v1.Pod{train("train-0", "gpu-1"), train("train-1", "gpu-2"), infer, pending, other},
		PodGroups: []*schedulingv1beta1.PodGroup{
			util.BuildPodGroup("train", "ml", "default", 2, map[string]int32{"worker": 2}, schedulingv1beta1.PodGroupRunning),
			util.BuildPodGroup("infer", "serve", "default", 1, nil, schedulingv1beta1.PodGroupRunning),
			util.BuildPodGroup("eval", "ml", "default", 1, nil, schedulingv1beta1.PodGroupInqueue),
		},
		Queues: []*schedulingv1beta1.Queue{util.BuildQueue("default", 1, nil)},
	}
}

func ptr[T any](v T) *T { return &v }

func tiers(args framework.Arguments) []conf.Tier {
	return []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: "gang"}, {Name: "predicates"}}},
		{Plugins: []conf.PluginOption{{Name: repack.PluginName, Arguments: args, EnabledPredicate: ptr(true), EnabledNodeOrder: ptr(true)}, {Name: "nodeorder", Arguments: framework.Arguments{"leastrequested.weight": 2}}}},
	}
}

func open(t *testing.T, args framework.Arguments) (*uthelper.TestCommonStruct, *framework.Session) {
	t.Helper()
	test := cluster()
	test.Plugins = map[string]framework.PluginBuilder{repack.PluginName: repack.New}
	ssn := test.RegisterSession(tiers(args), nil)
	t.Cleanup(test.Close)
	return test, ssn
}

func next(t *testing.T, s *sidecar, within time.Duration) *pb.OpenSessionRequest {
	t.Helper()
	select {
	case req := <-s.published:
		return req
	case <-time.After(within):
		t.Fatalf("nothing published within %s", within)
	}
	return nil
}

func TestEachSessionIsPublishedAsLatest(t *testing.T) {
	s := &sidecar{}
	addr := serve(t, s)
	_, ssn := open(t, framework.Arguments{repack.ArgAddress: addr, repack.ArgSessionTTL: "30s"})
	req := next(t, s, 5*time.Second)
	if req.PublishAs != "latest" || req.TtlSeconds != 30 {
		t.Fatalf("publish_as %q ttl %d", req.PublishAs, req.TtlSeconds)
	}
	snap := req.Snapshot
	if snap.Name != string(ssn.UID) {
		t.Errorf("name %q, want the session's UID %q", snap.Name, ssn.UID)
	}
	var names []string
	for _, n := range snap.Nodes {
		names = append(names, n.Name)
	}
	if strings.Join(names, ",") != "gpu-1,gpu-2,gpu-3,gpu-4" {
		t.Errorf("nodes %v", names)
	}
	if a := snap.Nodes[0].Allocatable; a["cpu"] != 32000 || a[gpu] != 8000 || a["memory"] != 256*(1<<30) || a["pods"] != 110 || len(a) != 4 {
		t.Errorf("allocatable in Volcano units: %v", a)
	}
	if n := snap.Nodes[2]; !n.Unschedulable || len(n.Taints) != 1 || n.Taints[0].Key != "dedicated" {
		t.Errorf("cordoned, tainted gpu-3: %v", n)
	}
	if n := snap.Nodes[3]; len(n.Taints) != 1 || n.Taints[0].Key != "node.kubernetes.io/not-ready" {
		t.Errorf("NotReady gpu-4 gets the lifecycle taint: %v", n)
	}
	rows := rows(snap)
	want := []string{"kube-system/dns-0", "ml/eval-0", "ml/train-0", "ml/train-1", "serve/infer-0"}
	if got := keys(rows); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tasks in the API's list order: %v, want %v", got, want)
	}
	dns, eval, train0, infer := rows[0], rows[1], rows[2], rows[4]
	if dns.PodGroup != "" || dns.Node != "gpu-1" || dns.Status != pb.Task_Running || dns.Profile.SchedulerName != "default-scheduler" {
		t.Errorf("another scheduler's pod, from its node: %v", dns)
	}
	if eval.Node != "" || eval.Status != pb.Task_Pending || eval.Priority != 100 || eval.PodGroup != "eval" {
		t.Errorf("pending task: %v", eval)
	}
	if train0.Node != "gpu-1" || train0.Status != pb.Task_Running || train0.Role != "worker" || train0.Profile.OwnerKind != "Job" {
		t.Errorf("running gang member: %v", train0)
	}
	if r := train0.Requests; r["cpu"] != 4000 || r[gpu] != 2000 || len(r) != 3 {
		t.Errorf("requests: %v", r)
	}
	if nz := infer.NonzeroRequests; nz.Cpu != 2100 || nz.Memory != 8*(1<<30)+200*(1<<20) {
		t.Errorf("non-zero requests count 100m/200Mi for the container without one: %v", nz)
	}
	p := eval.Profile
	if len(p.HostPorts) != 2 || p.HostPorts[0].Protocol != "" || p.HostPorts[1].Protocol != "UDP" {
		t.Errorf("host ports: %v", p.HostPorts)
	}
	if len(p.Tolerations) != 1 || len(p.RequiredNodeAffinity) != 1 || len(p.PreferredNodeAffinity) != 1 ||
		len(p.PreferredPodAntiAffinity) != 1 || p.PreferredPodAntiAffinity[0].Term.NamespaceSelector == nil ||
		len(p.TopologySpreadConstraints) != 1 || p.NodeSelector["zone"] != "a" {
		t.Errorf("placement rules: %v", p)
	}
	groups := map[string]*pb.PodGroup{}
	for _, g := range snap.PodGroups {
		groups[g.Namespace+"/"+g.Name] = g
	}
	if g := groups["ml/train"]; g == nil || g.MinMember != 2 || g.MinTaskMember["worker"] != 2 || g.Phase != "Running" || g.Queue != "default" {
		t.Errorf("PodGroup ml/train: %v", g)
	}
	conf := snap.SchedulerConfig
	if len(conf.Tiers) != 2 || conf.Tiers[1].Plugins[1].Arguments["leastrequested.weight"] != "2" {
		t.Errorf("scheduler conf from the session's tiers: %v", conf)
	}
	if len(snap.Profiles) != 3 { // the train replicas share one, and so do infer-0 and dns-0 (no rules)
		t.Errorf("%d profiles, want 3", len(snap.Profiles))
	}
}

// rows is the columnar snapshot as Task rows (sidecar/snapshot/forms.py to_rows).
func rows(s *pb.Snapshot) []*pb.Task {
	c := s.TaskColumns
	out := make([]*pb.Task, len(c.Uid))
	for i := range c.Uid {
		t := &pb.Task{Uid: c.Uid[i], Name: c.Name[i], Namespace: s.Namespaces[c.Namespace[i]].Name, Status: c.Status[i],
			Priority: c.Priority[i], Role: c.Role[i], Profile: s.Profiles[c.Profile[i]], Requests: map[string]float64{},
			NonzeroRequests: &pb.NonZeroRequests{Cpu: c.NonzeroCpu[i], Memory: c.NonzeroMemory[i]}}
		if c.Node[i] >= 0 {
			t.Node = s.Nodes[c.Node[i]].Name
		}
		if c.PodGroup[i] >= 0 {
			t.PodGroup = s.PodGroups[c.PodGroup[i]].Name
		}
		for _, col := range c.Requests {
			if col.Values[i] != 0 {
				t.Requests[col.Resource] = col.Values[i]
			}
		}
		out[i] = t
	}
	return out
}

func keys(tasks []*pb.Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.Namespace+"/"+t.Name)
	}
	return out
}

// A slow or absent sidecar never holds the scheduling cycle: OnSessionOpen only converts and
// hands over; of snapshots the publisher could not send yet only the newest is kept.
func TestASlowSidecarNeverHoldsTheCycle(t *testing.T) {
	s := &sidecar{delay: 3 * time.Second}
	addr := serve(t, s)
	args := framework.Arguments{repack.ArgAddress: addr, repack.ArgPublishTimeout: "5s"}
	published, dropped := sessions(t, "published"), sessions(t, "dropped")
	for i := 0; i < 4; i++ {
		test := cluster()
		test.Plugins = map[string]framework.PluginBuilder{repack.PluginName: repack.New}
		started := time.Now()
		test.RegisterSession(tiers(args), nil)
		// waiting on the sidecar even once would take its 3 s
		if took := time.Since(started); took > 1500*time.Millisecond {
			t.Fatalf("session %d opened in %s beside a sidecar taking 3 s per publish", i, took)
		}
		test.Close()
	}
	first := next(t, s, 10*time.Second)
	last := next(t, s, 10*time.Second)
	if first.Snapshot.Name == last.Snapshot.Name {
		t.Fatal("the same session published twice")
	}
	select {
	case extra := <-s.published:
		t.Fatalf("a superseded session was published: %s", extra.Snapshot.Name)
	case <-time.After(4 * time.Second):
	}
	// what vc-scheduler's /metrics shows: two published, the two superseded ones dropped (the
	// counters are the process's: an earlier test's publish may land in this window too)
	if got := sessions(t, "published") - published; got < 2 {
		t.Errorf("repack_plugin_sessions_total{result=published} grew by %v, want at least 2", got)
	}
	if got := sessions(t, "dropped") - dropped; got != 2 {
		t.Errorf("repack_plugin_sessions_total{result=dropped} grew by %v, want 2", got)
	}
}

// sessions reads repack_plugin_sessions_total{result} from the registry vc-scheduler serves.
func sessions(t *testing.T, result string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "repack_plugin_sessions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestNoSidecarCostsNothing(t *testing.T) {
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := lis.Addr().String()
	_ = lis.Close() // nothing listens there
	started := time.Now()
	_, ssn := open(t, framework.Arguments{repack.ArgAddress: addr, repack.ArgPredicate: true, repack.ArgNodeOrder: true, repack.ArgHookTimeout: "200ms"})
	task := pendingTask(t, ssn)
	for _, n := range ssn.NodeList {
		if err := ssn.PredicateFn(task, n); err != nil {
			t.Errorf("no sidecar must mean no veto: %v", err)
		}
	}
	scores, err := ssn.BatchNodeOrderFn(task, ssn.NodeList)
	if err != nil || len(scores) != 0 {
		t.Errorf("no sidecar must mean no score: %v %v", scores, err)
	}
	// the first hook call finds the sidecar down; the others abstain without calling
	if took := time.Since(started); took > 1500*time.Millisecond {
		t.Errorf("session with an absent sidecar took %s", took)
	}
}

func pendingTask(t *testing.T, ssn *framework.Session) *api.TaskInfo {
	t.Helper()
	for _, job := range ssn.Jobs {
		for _, task := range job.Tasks {
			if task.Name == "eval-0" {
				return task
			}
		}
	}
	t.Fatal("no eval-0 in the session")
	return nil
}

// The hooks delegate to Filter and Prioritize on "latest" with the task inline, and Filter's
// codes become Volcano's: a node moving pods cannot help is UnschedulableAndUnresolvable (3).
func TestHooksMapTheSidecarsAnswersToVolcanos(t *testing.T) {
	s := &sidecar{
		filter: func(req *pb.FilterRequest) (*pb.FilterResponse, error) {
			if req.GetSessionId() != "latest" || req.GetTask().GetName() != "eval-0" || len(req.Nodes) != 1 {
				return nil, status.Errorf(codes.InvalidArgument, "unexpected %v", req)
			}
			switch req.Nodes[0] {
			case "gpu-3":
				return &pb.FilterResponse{Failures: []*pb.FailureGroup{{Reasons: []string{"node(s) were unschedulable"}, Nodes: req.Nodes, Code: pb.FailureCode_UNSCHEDULABLE_AND_UNRESOLVABLE}}}, nil
			case "gpu-2":
				return &pb.FilterResponse{Failures: []*pb.FailureGroup{{Reasons: []string{"Insufficient nvidia.com/gpu"}, Nodes: req.Nodes, Code: pb.FailureCode_UNSCHEDULABLE}}}, nil
			}
			return &pb.FilterResponse{FeasibleNodes: req.Nodes}, nil
		},
		prioritize: func(req *pb.PrioritizeRequest) (*pb.PrioritizeResponse, error) {
			return &pb.PrioritizeResponse{Scores: []*pb.NodeScore{{Node: "gpu-1", Score: 70}, {Node: "gpu-4", Score: 12.5}}}, nil
		},
	}
	addr := serve(t, s)
	_, ssn := open(t, framework.Arguments{repack.ArgAddress: addr, repack.ArgPredicate: true, repack.ArgNodeOrder: true, repack.ArgHookTimeout: "2s"})
	task := pendingTask(t, ssn)
	codesByNode := map[string]int{}
	for _, n := range ssn.NodeList {
		err := ssn.PredicateFn(task, n)
		var fit *api.FitError
		if errors.As(err, &fit) {
			for _, st := range fit.Status {
				if st.Plugin == repack.PluginName {
					codesByNode[n.Name] = st.Code
				}
			}
		}
	}
	if codesByNode["gpu-3"] != api.UnschedulableAndUnresolvable || codesByNode["gpu-2"] != api.Unschedulable || len(codesByNode) != 2 {
		t.Errorf("Volcano codes by node: %v", codesByNode)
	}
	scores, err := ssn.BatchNodeOrderFn(task, ssn.NodeList)
	if err != nil || scores["gpu-1"] != 70 || scores["gpu-4"] != 12.5 {
		t.Errorf("batch node order: %v %v", scores, err)
	}
}

func TestArgumentsAreCheckedAndNamed(t *testing.T) {
	cfg, err := repack.ParseConfig(framework.Arguments{
		repack.ArgAddress: "10.0.0.1:50151", repack.ArgPublishTimeout: "300ms", repack.ArgBudget: 0,
		repack.ArgPredicate: "true", repack.ArgNodeOrder: true,
	})
	if err != nil || cfg.Address != "10.0.0.1:50151" || cfg.PublishTimeout != 300*time.Millisecond || cfg.Budget != 0 || !cfg.Predicate || !cfg.NodeOrder {
		t.Fatalf("%+v %v", cfg, err)
	}
	cfg, err = repack.ParseConfig(framework.Arguments{
		repack.ArgPublishTimeout: "soon", repack.ArgHookTimeout: "-1s", repack.ArgPredicate: "yes", "repack.adress": "x",
	})
	for _, key := range []string{repack.ArgPublishTimeout, repack.ArgHookTimeout, repack.ArgPredicate, "repack.adress"} {
		if err == nil || !strings.Contains(err.Error(), key+":") {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
	if def := repack.DefaultConfig(); cfg.PublishTimeout != def.PublishTimeout || cfg.HookTimeout != def.HookTimeout {
		t.Errorf("a bad value keeps the default: %+v", cfg)
	}
}

func TestConversionStopsAtItsBudget(t *testing.T) {
	test := cluster()
	ssn := test.RegisterSession(nil, nil)
	defer test.Close()
	s := repack.Session{UID: string(ssn.UID), Jobs: ssn.Jobs, Nodes: bigNodes(ssn.Nodes, 3000)}
	if _, err := repack.Convert(s, time.Nanosecond); !errors.Is(err, repack.ErrBudget) {
		t.Fatalf("want ErrBudget, got %v", err)
	}
	conv, err := repack.Convert(s, 0)
	if err != nil || len(conv.Snapshot.Nodes) != 3000 {
		t.Fatalf("without a budget: %v", err)
	}
}

func bigNodes(base map[string]*api.NodeInfo, n int) map[string]*api.NodeInfo {
	var proto *api.NodeInfo
	for _, info := range base {
		proto = info
		break
	}
	out := make(map[string]*api.NodeInfo, n)
	for i := 0; i < n; i++ {
		name := "n-" + strings.Repeat("0", 5-len(itoa(i))) + itoa(i)
		out[name] = proto
	}
	return out
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

// TestConversionMatchesTheExtenderDecoder writes one session in both forms the sidecar
// receives: the JSON Volcano's extender plugin marshals (extender.OnSessionOpenRequest) and the
// plugin's Snapshot. tests/go/test_go_plugin.py runs it with REPACK_PLUGIN_FIXTURES set and checks
// the sidecar's decoder of the JSON reads the same cluster as the Snapshot.
func TestConversionMatchesTheExtenderDecoder(t *testing.T) {
	test := cluster()
	ssn := test.RegisterSession(tiers(framework.Arguments{repack.ArgPublish: false}), nil)
	defer test.Close()
	conv, err := repack.Convert(repack.Session{UID: string(ssn.UID), Jobs: ssn.Jobs, Nodes: ssn.Nodes, Tiers: ssn.Tiers}, 0)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(&extender.OnSessionOpenRequest{
		Jobs: ssn.Jobs, Nodes: ssn.Nodes, Queues: ssn.Queues, NamespaceInfo: ssn.NamespaceInfo, RevocableNodes: ssn.RevocableNodes,
	})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := proto.Marshal(conv.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("REPACK_PLUGIN_FIXTURES")
	if dir == "" {
		t.Skip("REPACK_PLUGIN_FIXTURES not set: tests/go/test_go_plugin.py sets it and compares")
	}
	for name, data := range map[string][]byte{"session.json": body, "snapshot.pb": snap} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(ssn.Nodes))
	for n := range ssn.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("wrote %d-node session (%d bytes JSON, %d bytes snapshot) to %s", len(names), len(body), len(snap), dir)
}

// Real sessions dangle: Volcano's snapshot leaves out a node whose Node object is gone while its
// Jobs keep their tasks, and a Job whose PodGroup is gone while its pods stay on their nodes.
// Nothing is dropped: the first are kept on no node (the sidecar's decode warns), the second are
// kept in no PodGroup with the Snapshot's warning naming one.
func TestDanglingReferencesAreKeptAndNamed(t *testing.T) {
	test := cluster()
	ssn := test.RegisterSession(nil, nil)
	defer test.Close()
	all, err := repack.Convert(repack.Session{UID: string(ssn.UID), Jobs: ssn.Jobs, Nodes: ssn.Nodes}, 0)
	if err != nil {
		t.Fatal(err)
	}

	nodes := map[string]*api.NodeInfo{}
	for name, info := range ssn.Nodes {
		if name != "gpu-2" {
			nodes[name] = info
		}
	}
	conv, err := repack.Convert(repack.Session{UID: string(ssn.UID), Jobs: ssn.Jobs, Nodes: nodes}, 0)
	if err != nil {
		t.Fatal(err)
	}
	onNone := map[string]bool{}
	for _, task := range rows(conv.Snapshot) {
		if task.Node == "" && task.Status != pb.Task_Pending {
			onNone[task.Namespace+"/"+task.Name] = true
		}
	}
	if conv.Orphans != 2 || !onNone["ml/train-1"] || !onNone["serve/infer-0"] {
		t.Fatalf("tasks on gpu-2 should stay on no node: orphans %d, on none %v", conv.Orphans, onNone)
	}
	if got, want := len(conv.Snapshot.TaskColumns.Uid), len(all.Snapshot.TaskColumns.Uid); got != want {
		t.Fatalf("%d tasks, want all %d", got, want)
	}

	jobs := map[api.JobID]*api.JobInfo{}
	for id, job := range ssn.Jobs {
		if id != "ml/train" {
			jobs[id] = job
		}
	}
	conv, err = repack.Convert(repack.Session{UID: string(ssn.UID), Jobs: jobs, Nodes: ssn.Nodes}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "2 tasks of PodGroups the session does not hold (e.g. pod ml/train-0: PodGroup ml/train): not movable, so their nodes are no candidates"
	if len(conv.Snapshot.Warnings) != 1 || conv.Snapshot.Warnings[0] != want {
		t.Fatalf("warnings %q, want [%q]", conv.Snapshot.Warnings, want)
	}
	for _, task := range rows(conv.Snapshot) {
		if strings.HasPrefix(task.Name, "train-") && (task.PodGroup != "" || task.Node == "") {
			t.Fatalf("%s: want on its node, in no PodGroup; got node %q group %q", task.Name, task.Node, task.PodGroup)
		}
	}
}
