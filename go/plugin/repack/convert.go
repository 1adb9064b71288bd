package repack

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	pb "volcano.sh/repack/api/v1alpha1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
)

// The session is read the way the sidecar's decoder of Volcano's extender JSON reads it
// (sidecar/snapshot/volcano.py, with the Kubernetes rules of sidecar/snapshot/kube.py); the Go
// test TestConversionMatchesTheExtenderDecoder writes both forms of the same session and
// tests/test_go_plugin.py checks they decode to the same cluster. Quantities are Volcano's own
// (NodeInfo.Allocatable, TaskInfo.InitResreq): the contract's units are Volcano's.

const (
	notReady    = "node.kubernetes.io/not-ready"
	unreachable = "node.kubernetes.io/unreachable"
	// the sandbox's stand-in for a controller owner (sidecar/snapshot/kube.py OWNER_KIND)
	ownerKindAnnotation = "sandbox.repack.volcano.sh/owner-kind"
	defaultScheduler    = "default-scheduler"
	// how often (in objects) the conversion looks at its budget
	budgetStride = 256
)

// ErrBudget is returned when converting a session takes longer than its budget: the cycle goes
// on without publishing rather than wait for the sidecar's copy.
var ErrBudget = errors.New("session conversion over budget")

// Session is what Convert reads of a Volcano session (framework.Session's fields of that name).
type Session struct {
	UID   string
	Jobs  map[api.JobID]*api.JobInfo
	Nodes map[string]*api.NodeInfo
	Tiers []conf.Tier
}

// Converted is a session as the contract's columnar Snapshot, with what was left out.
type Converted struct {
	Snapshot *pb.Snapshot
	// Tasks whose node is not in the session (its Node object is gone; Volcano counts them on
	// no node): left out, as Volcano leaves them out of every node's accounting.
	Orphans int
	Elapsed time.Duration
}

// Convert builds the Snapshot of s; with budget > 0 it gives up with ErrBudget once that much
// time has gone.
func Convert(s Session, budget time.Duration) (*Converted, error) {
	start := time.Now()
	c := &converter{
		start: start, budget: budget,
		nodes: map[string]int32{}, namespaces: map[string]int32{}, groups: map[string]int32{},
		profiles: map[string]int32{}, resources: map[string]int{},
		snap: &pb.Snapshot{Name: s.UID, TaskColumns: &pb.TaskColumns{}},
	}
	if err := c.addNodes(s.Nodes); err != nil {
		return nil, err
	}
	c.addPodGroups(s.Jobs)
	rows, err := c.collectTasks(s)
	if err != nil {
		return nil, err
	}
	if err := c.addTasks(rows); err != nil {
		return nil, err
	}
	c.snap.SchedulerConfig = schedulerConfig(s.Tiers)
	return &Converted{Snapshot: c.snap, Orphans: c.orphans, Elapsed: time.Since(start)}, nil
}

type converter struct {
	start      time.Time
	budget     time.Duration
	ticks      int
	snap       *pb.Snapshot
	nodes      map[string]int32
	namespaces map[string]int32
	groups     map[string]int32
	profiles   map[string]int32
	resources  map[string]int // resource -> column in TaskColumns.Requests
	orphans    int
}

func (c *converter) tick() error {
	c.ticks++
	if c.budget > 0 && c.ticks%budgetStride == 0 && time.Since(c.start) > c.budget {
		return fmt.Errorf("%w: %s spent, budget %s", ErrBudget, time.Since(c.start).Round(time.Millisecond), c.budget)
	}
	return nil
}

func (c *converter) addNodes(infos map[string]*api.NodeInfo) error {
	names := make([]string, 0, len(infos))
	for name := range infos {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := c.tick(); err != nil {
			return err
		}
		c.nodes[name] = int32(len(c.snap.Nodes))
		c.snap.Nodes = append(c.snap.Nodes, node(name, infos[name]))
	}
	return nil
}

// node is a NodeInfo as a Node: its object's labels, taints and cordon, Volcano's allocatable,
// and the taint the node lifecycle controller would add when Ready is not True (Volcano's
// session reports every node Ready).
func node(name string, info *api.NodeInfo) *pb.Node {
	out := &pb.Node{Name: name, Allocatable: units(info.Allocatable)}
	n := info.Node
	if n == nil {
		return out
	}
	out.Labels = n.Labels
	out.Unschedulable = n.Spec.Unschedulable
	marked := false
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, &pb.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		marked = marked || t.Key == notReady || t.Key == unreachable
	}
	ready := v1.ConditionTrue
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			ready = cond.Status
			break
		}
	}
	if ready != v1.ConditionTrue && !marked {
		key := notReady
		if ready == v1.ConditionUnknown {
			key = unreachable
		}
		out.Taints = append(out.Taints, &pb.Taint{Key: key, Effect: string(v1.TaintEffectNoSchedule)})
	}
	return out
}

// units is a Volcano Resource as the contract's map (already Volcano units: milli-cpu, bytes,
// scalars x1000; pods a count, omitted when 0).
func units(r *api.Resource) map[string]float64 {
	out := map[string]float64{}
	if r == nil {
		return out
	}
	out[string(v1.ResourceCPU)] = r.MilliCPU
	out[string(v1.ResourceMemory)] = r.Memory
	for name, v := range r.ScalarResources {
		out[string(name)] = v
	}
	delete(out, string(v1.ResourcePods))
	if r.MaxTaskNum > 0 {
		out[string(v1.ResourcePods)] = float64(r.MaxTaskNum)
	}
	return out
}

func (c *converter) addPodGroups(jobs map[api.JobID]*api.JobInfo) {
	var groups []*pb.PodGroup
	for _, job := range jobs {
		if job.PodGroup == nil {
			continue
		}
		groups = append(groups, podGroup(job))
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Namespace != groups[j].Namespace {
			return groups[i].Namespace < groups[j].Namespace
		}
		return groups[i].Name < groups[j].Name
	})
	for i, g := range groups {
		c.groups[g.Namespace+"/"+g.Name] = int32(i)
	}
	c.snap.PodGroups = groups
}

func podGroup(job *api.JobInfo) *pb.PodGroup {
	g := job.PodGroup
	ns := g.Namespace
	if ns == "" {
		ns = job.Namespace
	}
	out := &pb.PodGroup{
		Namespace: ns, Name: g.Name, MinMember: g.Spec.MinMember, MinTaskMember: g.Spec.MinTaskMember,
		Labels: g.Labels, Phase: string(g.Status.Phase), Queue: g.Spec.Queue,
	}
	for _, r := range g.OwnerReferences {
		out.OwnerReferences = append(out.OwnerReferences, &pb.OwnerReference{
			ApiVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, Uid: string(r.UID),
			Controller: r.Controller != nil && *r.Controller,
		})
	}
	return out
}

type row struct {
	task  *api.TaskInfo
	group string // "namespace/name" of its PodGroup, "" for none
}

// collectTasks: every task once, from its Job; pods on a node that no Job holds (other
// schedulers') from the node; in the order the API server lists pods (namespace, name), as the
// watcher's informer view has them (a plan's ties follow input order).
func (c *converter) collectTasks(s Session) ([]row, error) {
	seen := map[api.TaskID]bool{}
	var rows []row
	for _, job := range s.Jobs {
		group := ""
		if job.PodGroup != nil {
			ns := job.PodGroup.Namespace
			if ns == "" {
				ns = job.Namespace
			}
			group = ns + "/" + job.PodGroup.Name
		}
		for uid, t := range job.Tasks {
			rows = append(rows, row{t, group})
			seen[uid] = true
		}
	}
	for _, info := range s.Nodes {
		for _, t := range info.Tasks {
			if !seen[t.UID] {
				rows = append(rows, row{t, ""})
				seen[t.UID] = true
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].task, rows[j].task
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return rows, nil
}

func (c *converter) addTasks(rows []row) error {
	col := c.snap.TaskColumns
	n := len(rows)
	col.Uid, col.Name = make([]string, 0, n), make([]string, 0, n)
	col.Namespace, col.Node, col.PodGroup = make([]int32, 0, n), make([]int32, 0, n), make([]int32, 0, n)
	col.Status, col.Priority, col.Profile = make([]pb.Task_Status, 0, n), make([]int32, 0, n), make([]int32, 0, n)
	col.Role, col.NonzeroCpu, col.NonzeroMemory = make([]string, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	for _, r := range rows {
		if err := c.tick(); err != nil {
			return err
		}
		t := r.task
		nodeIndex := int32(-1)
		if t.Status != api.Pending && t.NodeName != "" {
			i, ok := c.nodes[t.NodeName]
			if !ok {
				c.orphans++
				continue
			}
			nodeIndex = i
		}
		group := int32(-1)
		if r.group != "" {
			group = c.groups[r.group]
		}
		profile, err := c.profile(t.Pod)
		if err != nil {
			return err
		}
		i := len(col.Uid)
		col.Uid = append(col.Uid, string(t.UID))
		col.Name = append(col.Name, t.Name)
		col.Namespace = append(col.Namespace, c.namespace(t.Namespace))
		col.Node = append(col.Node, nodeIndex)
		col.Status = append(col.Status, pb.Task_Status(t.Status))
		col.PodGroup = append(col.PodGroup, group)
		col.Priority = append(col.Priority, t.Priority)
		col.Profile = append(col.Profile, profile)
		col.Role = append(col.Role, t.TaskRole)
		cpu, mem := nonzero(t.Pod)
		col.NonzeroCpu = append(col.NonzeroCpu, cpu)
		col.NonzeroMemory = append(col.NonzeroMemory, mem)
		for name, v := range requests(t.InitResreq) {
			c.column(name, n).Values[i] = v
		}
	}
	// columns were sized for every row: trim to the tasks kept
	for _, rc := range col.Requests {
		rc.Values = rc.Values[:len(col.Uid)]
	}
	return nil
}

// requests is a task's Volcano request without the pod count (implied) and without zeros.
func requests(r *api.Resource) map[string]float64 {
	out := units(r)
	delete(out, string(v1.ResourcePods))
	for name, v := range out {
		if v == 0 {
			delete(out, name)
		}
	}
	return out
}

// nonzero is the Kubernetes scheduler's non-zero request of a pod (100m / 200Mi for a container
// that requests none), computed by Kubernetes' own helper, in Volcano units.
func nonzero(pod *v1.Pod) (float64, float64) {
	if pod == nil {
		return float64(schedutil.DefaultMilliCPURequest), float64(schedutil.DefaultMemoryRequest)
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: defaults})
	cpu, mem := reqs[v1.ResourceCPU], reqs[v1.ResourceMemory]
	return float64(cpu.MilliValue()), float64(mem.Value())
}

var defaults = v1.ResourceList{
	v1.ResourceCPU:    *resource.NewMilliQuantity(schedutil.DefaultMilliCPURequest, resource.DecimalSI),
	v1.ResourceMemory: *resource.NewQuantity(schedutil.DefaultMemoryRequest, resource.BinarySI),
}

func (c *converter) column(name string, n int) *pb.ResourceColumn {
	i, ok := c.resources[name]
	if !ok {
		i = len(c.snap.TaskColumns.Requests)
		c.resources[name] = i
		c.snap.TaskColumns.Requests = append(c.snap.TaskColumns.Requests,
			&pb.ResourceColumn{Resource: name, Values: make([]float64, n)})
	}
	return c.snap.TaskColumns.Requests[i]
}

func (c *converter) namespace(name string) int32 {
	i, ok := c.namespaces[name]
	if !ok {
		i = int32(len(c.snap.Namespaces))
		c.namespaces[name] = i
		c.snap.Namespaces = append(c.snap.Namespaces, &pb.Namespace{Name: name})
	}
	return i
}

// profile interns the pod's scheduling rules: replicas of one template share one profile.
func (c *converter) profile(pod *v1.Pod) (int32, error) {
	p := Profile(pod)
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		return 0, err
	}
	i, ok := c.profiles[string(key)]
	if !ok {
		i = int32(len(c.snap.Profiles))
		c.profiles[string(key)] = i
		c.snap.Profiles = append(c.snap.Profiles, p)
	}
	return i, nil
}

// schedulerConfig is the session's tiers as the contract's SchedulerConfig (arguments as
// strings, as a volcano-scheduler.conf file reads). The actions are not in a session: left empty.
func schedulerConfig(tiers []conf.Tier) *pb.SchedulerConfig {
	out := &pb.SchedulerConfig{}
	for _, tier := range tiers {
		t := &pb.SchedulerTier{}
		for _, p := range tier.Plugins {
			args := map[string]string{}
			for k, v := range p.Arguments {
				args[k] = argument(v)
			}
			t.Plugins = append(t.Plugins, &pb.SchedulerPlugin{
				Name: p.Name, Arguments: args, EnablePredicate: p.EnabledPredicate, EnableNodeOrder: p.EnabledNodeOrder,
			})
		}
		out.Tiers = append(out.Tiers, t)
	}
	return out
}

func argument(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
