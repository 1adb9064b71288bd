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
// tests/go/test_go_plugin.py checks they decode to the same cluster. Quantities are Volcano's own
// (NodeInfo.Allocatable, TaskInfo.InitResreq): the contract's units are Volcano's.

const (
	notReady         = "node.kubernetes.io/not-ready"
	unreachable      = "node.kubernetes.io/unreachable"
	defaultScheduler = "default-scheduler"
	// how often (in objects) the capture looks at its budget
	budgetStride = 256
)

// ErrBudget is returned when capturing a session takes longer than its budget: the cycle goes
// on without publishing rather than wait for the sidecar's copy.
var ErrBudget = errors.New("session capture over budget")

// Session is what Capture reads of a Volcano session (framework.Session's fields of that name).
type Session struct {
	UID   string
	Jobs  map[api.JobID]*api.JobInfo
	Nodes map[string]*api.NodeInfo
	Tiers []conf.Tier
}

// Capture is what a Snapshot needs of a session, copied out of the maps and fields Volcano's
// actions change once OnSessionOpen returns (task status and node, Jobs' Tasks maps, PodGroup
// status). It keeps pointers only to what a session never changes in place: the informer's Pod
// and Node objects and each task's InitResreq / each node's Allocatable, which Volcano clones
// into every session. Taking it is the plugin's whole share of a scheduling cycle; the Snapshot
// is built from it on the publisher's goroutine.
type Capture struct {
	uid    string
	nodes  []capturedNode
	groups []*pb.PodGroup
	tasks  []capturedTask
	conf   *pb.SchedulerConfig
	// Took is how long the capture held the scheduling goroutine.
	Took time.Duration
}

type capturedNode struct {
	name  string
	node  *v1.Node
	alloc *api.Resource
}

type capturedTask struct {
	uid, name, namespace, nodeName, role string
	group                                string // "namespace/name" of its PodGroup, "" for none
	lostGroup                            string // the Job ("namespace/name") it names when the session holds none
	status                               api.TaskStatus
	priority                             int32
	pod                                  *v1.Pod
	init                                 *api.Resource
}

// Converted is a session as the contract's columnar Snapshot, with what was left out.
type Converted struct {
	Snapshot *pb.Snapshot
	// Tasks whose node is not in the session (its Node object is gone; Volcano counts them on
	// no node): left out, as Volcano leaves them out of every node's accounting.
	Orphans int
}

// CaptureSession copies what a Snapshot needs of s; with budget > 0 it gives up with ErrBudget
// once that much time has gone.
func CaptureSession(s Session, budget time.Duration) (*Capture, error) {
	start := time.Now()
	c := &Capture{uid: s.UID, nodes: make([]capturedNode, 0, len(s.Nodes)), conf: schedulerConfig(s.Tiers)}
	ticks := 0
	tick := func() error {
		ticks++
		if budget > 0 && ticks%budgetStride == 0 && time.Since(start) > budget {
			return fmt.Errorf("%w: %s spent, budget %s", ErrBudget, time.Since(start).Round(time.Millisecond), budget)
		}
		return nil
	}
	n := 0
	for _, job := range s.Jobs {
		n += len(job.Tasks)
	}
	c.tasks = make([]capturedTask, 0, n)
	for _, job := range s.Jobs {
		group := ""
		if job.PodGroup != nil {
			pg := podGroup(job)
			c.groups = append(c.groups, pg)
			group = pg.Namespace + "/" + pg.Name
		}
		for _, t := range job.Tasks {
			if err := tick(); err != nil {
				return nil, err
			}
			c.tasks = append(c.tasks, capture(t, group))
		}
	}
	for name, info := range s.Nodes {
		if err := tick(); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, capturedNode{name: name, node: info.Node, alloc: info.Allocatable})
		for _, t := range info.Tasks { // pods no Job of the session holds: other schedulers'
			if _, held := s.Jobs[t.Job]; !held {
				ct := capture(t, "")
				// a pod naming a Job the session does not hold: its PodGroup is gone or not yet
				// seen (Volcano's snapshot leaves out a Job without its PodGroup)
				ct.lostGroup = string(t.Job)
				c.tasks = append(c.tasks, ct)
			}
		}
	}
	c.Took = time.Since(start)
	return c, nil
}

func capture(t *api.TaskInfo, group string) capturedTask {
	return capturedTask{
		uid: string(t.UID), name: t.Name, namespace: t.Namespace, nodeName: t.NodeName, role: t.TaskRole,
		group: group, status: t.Status, priority: t.Priority, pod: t.Pod, init: t.InitResreq,
	}
}

// Convert captures s and builds its Snapshot at once (the plugin splits the two across goroutines).
func Convert(s Session, budget time.Duration) (*Converted, error) {
	c, err := CaptureSession(s, budget)
	if err != nil {
		return nil, err
	}
	return c.Snapshot()
}

// Snapshot builds the contract's columnar Snapshot of the capture: nodes by name, PodGroups by
// namespace and name, tasks in the order the API server lists pods (namespace, name) as the
// watcher's informer view has them (a plan's ties follow input order).
func (c *Capture) Snapshot() (*Converted, error) {
	conv, _, err := c.Build(nil)
	return conv, err
}

// podFacts is what a Snapshot derives from one Pod object: its profile (and the profile's
// interning key) and its non-zero requests.
type podFacts struct {
	key      string
	profile  *pb.TaskProfile
	cpu, mem float64
}

// Memo carries podFacts from one build to the next, keyed by the Pod object: Volcano's cache
// replaces a pod's object when the pod changes and every session shares it, so the same pointer
// is the same pod version. A build keeps only the pods it saw (the others' objects are released).
type Memo map[*v1.Pod]podFacts

// Build is Snapshot reusing what memo knows (nil: nothing); it returns this build's memo.
func (c *Capture) Build(memo Memo) (*Converted, Memo, error) {
	b := &builder{
		nodes: map[string]int32{}, namespaces: map[string]int32{}, groups: map[string]int32{},
		profiles: map[string]int32{}, resources: map[string]int{}, memo: memo, next: make(Memo, len(c.tasks)),
		snap: &pb.Snapshot{Name: c.uid, TaskColumns: &pb.TaskColumns{}, SchedulerConfig: c.conf},
	}
	sort.Slice(c.nodes, func(i, j int) bool { return c.nodes[i].name < c.nodes[j].name })
	for _, n := range c.nodes {
		b.nodes[n.name] = int32(len(b.snap.Nodes))
		b.snap.Nodes = append(b.snap.Nodes, node(n))
	}
	sort.Slice(c.groups, func(i, j int) bool {
		if c.groups[i].Namespace != c.groups[j].Namespace {
			return c.groups[i].Namespace < c.groups[j].Namespace
		}
		return c.groups[i].Name < c.groups[j].Name
	})
	for i, g := range c.groups {
		b.groups[g.Namespace+"/"+g.Name] = int32(i)
	}
	b.snap.PodGroups = c.groups
	sort.Slice(c.tasks, func(i, j int) bool {
		if c.tasks[i].namespace != c.tasks[j].namespace {
			return c.tasks[i].namespace < c.tasks[j].namespace
		}
		return c.tasks[i].name < c.tasks[j].name
	})
	if err := b.addTasks(c.tasks); err != nil {
		return nil, nil, err
	}
	if b.lost > 0 {
		noun := "tasks"
		if b.lost == 1 {
			noun = "task"
		}
		b.snap.Warnings = append(b.snap.Warnings, fmt.Sprintf(
			"%d %s of PodGroups the session does not hold (e.g. %s): not movable, so their nodes are no candidates",
			b.lost, noun, b.firstLost))
	}
	return &Converted{Snapshot: b.snap, Orphans: b.orphans}, b.next, nil
}

type builder struct {
	snap       *pb.Snapshot
	nodes      map[string]int32
	namespaces map[string]int32
	groups     map[string]int32
	profiles   map[string]int32
	resources  map[string]int // resource -> column in TaskColumns.Requests
	orphans    int            // tasks on nodes the session does not hold (kept, on no node)
	lost       int            // pods naming a Job the session does not hold
	firstLost  string         // the first of them, "pod namespace/name: PodGroup namespace/name"
	memo, next Memo
}

// node is a captured NodeInfo as a Node: its object's labels, taints and cordon, Volcano's
// allocatable, and the taint the node lifecycle controller would add when Ready is not True
// (Volcano's session reports every node Ready).
func node(c capturedNode) *pb.Node {
	out := &pb.Node{Name: c.name, Allocatable: units(c.alloc)}
	n := c.node
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

func (b *builder) addTasks(tasks []capturedTask) error {
	col := b.snap.TaskColumns
	n := len(tasks)
	col.Uid, col.Name = make([]string, 0, n), make([]string, 0, n)
	col.Namespace, col.Node, col.PodGroup = make([]int32, 0, n), make([]int32, 0, n), make([]int32, 0, n)
	col.Status, col.Priority, col.Profile = make([]pb.Task_Status, 0, n), make([]int32, 0, n), make([]int32, 0, n)
	col.Role, col.NonzeroCpu, col.NonzeroMemory = make([]string, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	for k := range tasks {
		t := &tasks[k]
		nodeIndex := int32(-1)
		if t.status != api.Pending && t.nodeName != "" {
			// a node whose Node object is gone is not in the session, while its Job keeps the
			// task: counted on no node, as Volcano counts it (the sidecar's decode warns)
			if i, ok := b.nodes[t.nodeName]; ok {
				nodeIndex = i
			} else {
				b.orphans++
			}
		}
		group := int32(-1)
		if t.group != "" {
			group = b.groups[t.group]
		}
		if t.lostGroup != "" {
			if b.lost == 0 {
				b.firstLost = fmt.Sprintf("pod %s/%s: PodGroup %s", t.namespace, t.name, t.lostGroup)
			}
			b.lost++
		}
		facts, err := b.facts(t.pod)
		if err != nil {
			return err
		}
		i := len(col.Uid)
		col.Uid = append(col.Uid, t.uid)
		col.Name = append(col.Name, t.name)
		col.Namespace = append(col.Namespace, b.namespace(t.namespace))
		col.Node = append(col.Node, nodeIndex)
		col.Status = append(col.Status, pb.Task_Status(t.status))
		col.PodGroup = append(col.PodGroup, group)
		col.Priority = append(col.Priority, t.priority)
		col.Profile = append(col.Profile, b.intern(facts))
		col.Role = append(col.Role, t.role)
		col.NonzeroCpu = append(col.NonzeroCpu, facts.cpu)
		col.NonzeroMemory = append(col.NonzeroMemory, facts.mem)
		for name, v := range requests(t.init) {
			b.column(name, n).Values[i] = v
		}
	}
	// columns were sized for every task: trim to the tasks kept
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

func (b *builder) column(name string, n int) *pb.ResourceColumn {
	i, ok := b.resources[name]
	if !ok {
		i = len(b.snap.TaskColumns.Requests)
		b.resources[name] = i
		b.snap.TaskColumns.Requests = append(b.snap.TaskColumns.Requests,
			&pb.ResourceColumn{Resource: name, Values: make([]float64, n)})
	}
	return b.snap.TaskColumns.Requests[i]
}

func (b *builder) namespace(name string) int32 {
	i, ok := b.namespaces[name]
	if !ok {
		i = int32(len(b.snap.Namespaces))
		b.namespaces[name] = i
		b.snap.Namespaces = append(b.snap.Namespaces, &pb.Namespace{Name: name})
	}
	return i
}

// facts are the pod's profile and non-zero requests: from the memo when the pod object is one
// the last build saw, else computed.
func (b *builder) facts(pod *v1.Pod) (podFacts, error) {
	if f, ok := b.memo[pod]; ok && pod != nil {
		b.next[pod] = f
		return f, nil
	}
	p := Profile(pod)
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		return podFacts{}, err
	}
	f := podFacts{key: string(key), profile: p}
	f.cpu, f.mem = nonzero(pod)
	if pod != nil {
		b.next[pod] = f
	}
	return f, nil
}

// intern gives the profile's index: replicas of one template share one profile.
func (b *builder) intern(f podFacts) int32 {
	i, ok := b.profiles[f.key]
	if !ok {
		i = int32(len(b.snap.Profiles))
		b.profiles[f.key] = i
		b.snap.Profiles = append(b.snap.Profiles, f.profile)
	}
	return i
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
