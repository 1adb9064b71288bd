package repack_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/repack/plugin/repack"
	"volcano.sh/volcano/pkg/scheduler"
	_ "volcano.sh/volcano/pkg/scheduler/actions" // the actions UnmarshalSchedulerConf looks up
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/plugins/binpack"
	"volcano.sh/volcano/pkg/scheduler/plugins/conformance"
	"volcano.sh/volcano/pkg/scheduler/plugins/drf"
	"volcano.sh/volcano/pkg/scheduler/plugins/gang"
	"volcano.sh/volcano/pkg/scheduler/plugins/nodeorder"
	"volcano.sh/volcano/pkg/scheduler/plugins/overcommit"
	"volcano.sh/volcano/pkg/scheduler/plugins/predicates"
	"volcano.sh/volcano/pkg/scheduler/plugins/priority"
	"volcano.sh/volcano/pkg/scheduler/plugins/proportion"
	"volcano.sh/volcano/pkg/scheduler/util"
)

// What the plugin adds to a scheduling cycle: framework.OpenSession + CloseSession of one
// cache, with the project's conf (manifests/plugin/volcano-scheduler.conf, Volcano's default
// helm tiers + the repack tier) against the same conf without the repack tier, in the same run.
// The publish itself runs off the cycle, into a sidecar stand-in that only counts; its cost is
// reported apart (publish-µs). bench/plugin_cycle.py runs these and reports medians and ratios.

// sink accepts every published session and keeps nothing.
type sink struct {
	pb.UnimplementedRepackServer
	n atomic.Int64
}

func (s *sink) OpenSession(_ context.Context, req *pb.OpenSessionRequest) (*pb.OpenSessionResponse, error) {
	s.n.Add(1)
	return &pb.OpenSessionResponse{SessionId: req.PublishAs}, nil
}

// registerPlugins registers the conf's plugins (the other tests' uthelper.Close unregisters all).
func registerPlugins() {
	for name, builder := range map[string]framework.PluginBuilder{
		priority.PluginName: priority.New, gang.PluginName: gang.New, conformance.PluginName: conformance.New,
		overcommit.PluginName: overcommit.New, drf.PluginName: drf.New, predicates.PluginName: predicates.New,
		proportion.PluginName: proportion.New, nodeorder.PluginName: nodeorder.New, binpack.PluginName: binpack.New,
		repack.PluginName: repack.New,
	} {
		framework.RegisterPluginBuilder(name, builder)
	}
}

func serveSink(b *testing.B, s *sink) string {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(1 << 30))
	pb.RegisterRepackServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)
	return lis.Addr().String()
}

const pluginConf = "../../../manifests/plugin/volcano-scheduler.conf"

func tiersOf(b *testing.B, withRepack bool, addr string) []conf.Tier {
	b.Helper()
	text, err := os.ReadFile(pluginConf)
	if err != nil {
		b.Fatal(err)
	}
	s := strings.ReplaceAll(string(text), "127.0.0.1:50151", addr)
	if !withRepack {
		s = s[:strings.Index(s, "# repack-sidecar")]
	}
	_, tiers, _, _, err := scheduler.UnmarshalSchedulerConf(s)
	if err != nil {
		b.Fatal(err)
	}
	return tiers
}

// benchCache is nodes GPU nodes, each running perNode pods of four-pod gangs, and one pending
// gang per 100 nodes, in a Volcano scheduler cache (as uthelper builds one).
func benchCache(b *testing.B, nodes, perNode int) *cache.SchedulerCache {
	b.Helper()
	sc := cache.NewCustomMockSchedulerCache("bench", util.NewFakeBinder(0), util.NewFakeEvictor(0), &util.FakeStatusUpdater{}, nil, &record.FakeRecorder{})
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	sc.Run(stop)
	sc.AddQueueV1beta1(util.BuildQueue("default", 1, nil))
	alloc := api.BuildResourceList("64", "512Gi", api.ScalarResource{Name: gpu, Value: "8"}, api.ScalarResource{Name: "pods", Value: "110"})
	req := gpus("4", "32Gi", "1")
	pod := func(ns, name, node, group string, phase v1.PodPhase) *v1.Pod {
		p := util.BuildPod(ns, name, node, phase, req, group, map[string]string{"app": group}, nil)
		p.Spec.SchedulerName = "volcano"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: group, UID: types.UID("uid-" + ns + group), Controller: ptr(true)}}
		return p
	}
	g := 0
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		sc.AddOrUpdateNode(util.BuildNode(name, alloc, map[string]string{"zone": fmt.Sprintf("z%d", i%4)}))
		for j := 0; j < perNode; j++ {
			group := fmt.Sprintf("job-%06d", (i*perNode+j)/4)
			if (i*perNode+j)%4 == 0 {
				sc.AddPodGroupV1beta1(util.BuildPodGroup(group, "ml", "default", 4, nil, schedulingv1beta1.PodGroupRunning))
				g++
			}
			sc.AddPod(pod("ml", fmt.Sprintf("%s-%d", group, j%4), name, group, v1.PodRunning))
		}
		if i%100 == 0 {
			group := fmt.Sprintf("pending-%05d", i)
			sc.AddPodGroupV1beta1(util.BuildPodGroup(group, "ml", "default", 4, nil, schedulingv1beta1.PodGroupInqueue))
			for j := 0; j < 4; j++ {
				sc.AddPod(pod("ml", fmt.Sprintf("%s-%d", group, j), "", group, v1.PodPending))
			}
		}
	}
	return sc
}

func BenchmarkCycle(b *testing.B) {
	for _, nodes := range []int{1000, 10000} {
		if testing.Short() && nodes > 1000 {
			continue
		}
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			s := &sink{}
			sinkAddr := serveSink(b, s)
			sc := benchCache(b, nodes, 6)
			for _, variant := range []string{"stock", "repack"} {
				tiers := tiersOf(b, variant == "repack", sinkAddr)
				b.Run(variant, func(b *testing.B) {
					registerPlugins()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						ssn := framework.OpenSession(sc, tiers, nil)
						framework.CloseSession(ssn)
					}
				})
			}
			b.Logf("published %d sessions", s.n.Load())
		})
	}
}

// BenchmarkConvert splits the plugin's work: "capture" holds the scheduling goroutine (the
// cycle's share), "snapshot" runs on the publisher's goroutine before each send.
func BenchmarkConvert(b *testing.B) {
	for _, nodes := range []int{1000, 10000} {
		if testing.Short() && nodes > 1000 {
			continue
		}
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			sc := benchCache(b, nodes, 6)
			ssn := framework.OpenSession(sc, nil, nil)
			defer framework.CloseSession(ssn)
			s := repack.Session{UID: string(ssn.UID), Jobs: ssn.Jobs, Nodes: ssn.Nodes, Tiers: ssn.Tiers}
			b.Run("capture", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := repack.CaptureSession(s, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("snapshot-memo", func(b *testing.B) {
				var memo repack.Memo
				for i := 0; i < b.N+1; i++ { // the first build fills the memo, untimed
					b.StopTimer()
					c, err := repack.CaptureSession(s, 0)
					if err != nil {
						b.Fatal(err)
					}
					if i > 0 {
						b.StartTimer()
					}
					if _, memo, err = c.Build(memo); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("snapshot", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					c, err := repack.CaptureSession(s, 0)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					conv, err := c.Snapshot()
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(len(conv.Snapshot.TaskColumns.Uid)), "tasks")
				}
			})
		})
	}
}
