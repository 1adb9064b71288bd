// Package fidelity answers, with Volcano's own compiled code, what the sidecar's mirror answers:
// for a cluster (Kubernetes objects) and one pending pod, which nodes Volcano's allocate action
// would accept, why it refuses the others (reasons and status code), and how it scores the
// feasible ones. bench/fidelity.py (and tests/mirror/test_fidelity_differential.py through it) compares
// the mirror with it.
//
// The session is built the way Volcano's plugin tests build theirs (a mock scheduler cache fed
// the objects, framework.OpenSession with the conf's tiers); the checks are the allocate action's:
// ssn.PrePredicateFn, then per node the resource fit on FutureIdle and
// ssn.PredicateForAllocateAction (actions/allocate/allocate.go predicate), then
// util.PrioritizeNodes over the feasible nodes (map, reduce and batch node-order functions).
package fidelity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/metrics"
	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
	"volcano.sh/volcano/pkg/scheduler/util"
)

// SchedulerName is the scheduler the oracle's cache acts as: pods naming it are Volcano's tasks.
const SchedulerName = "volcano"

// Case is a set of questions about one cluster: its objects (Namespaces, Nodes, PodGroups,
// Pods, as sidecar.fake.objects.objects_from_snapshot writes them), one or more
// volcano-scheduler.conf texts (a session each), and the pending pods ("namespace/name") to
// place, each asked on its own against the same session.
type Case struct {
	Objects []json.RawMessage `json:"objects"`
	Confs   []string          `json:"confs"`
	Tasks   []string          `json:"tasks"`
	// SessionBodyTo, when set, names a file the oracle writes the session of Confs[0] to, as
	// Volcano's extender plugin marshals it for onSessionOpen (bench.extender's bodies), instead
	// of answering Tasks.
	SessionBodyTo string `json:"sessionBodyTo,omitempty"`
}

// NodeAnswer is Volcano's answer for one node.
type NodeAnswer struct {
	Feasible bool     `json:"feasible"`
	Code     int      `json:"code,omitempty"`    // the highest status code of the fit error
	Reasons  []string `json:"reasons,omitempty"` // the fit error's reasons, sorted
	Score    *float64 `json:"score,omitempty"`   // feasible nodes only: PrioritizeNodes' total
}

// TaskAnswer is Volcano's answer for one pending pod: per node.
type TaskAnswer struct {
	Nodes map[string]NodeAnswer `json:"nodes"`
}

// Answer is Volcano's answer for a case: Answers[conf][task], in the case's order (Error set
// when the case could not be evaluated).
type Answer struct {
	Answers [][]TaskAnswer `json:"answers,omitempty"`
	Error   string         `json:"error,omitempty"`
}

func init() {
	// the Kubernetes scheduler plugins Volcano's predicates call count into these (as uthelper's init does)
	metrics.InitKubeSchedulerRelatedMetrics()
}

type kinded struct {
	Kind string `json:"kind"`
}

// Evaluate answers c with Volcano's code.
func Evaluate(c Case) (out Answer) {
	defer func() {
		if r := recover(); r != nil {
			out = Answer{Error: fmt.Sprintf("panic: %v\n%s", r, debug.Stack())}
		}
	}()
	if c.SessionBodyTo != "" {
		if len(c.Confs) == 0 {
			return Answer{Error: "sessionBodyTo: needs a conf"}
		}
		if err := writeSessionBody(c.Objects, c.Confs[0], c.SessionBodyTo); err != nil {
			return Answer{Error: fmt.Sprintf("sessionBodyTo: %v", err)}
		}
		return Answer{}
	}
	for i, conf := range c.Confs {
		answers, err := evaluate(c.Objects, conf, c.Tasks)
		if err != nil {
			return Answer{Error: fmt.Sprintf("confs[%d]: %v", i, err)}
		}
		out.Answers = append(out.Answers, answers)
	}
	return out
}

// evaluate opens one session of the cluster under conf and answers each task.
func evaluate(objects []json.RawMessage, conf string, keys []string) ([]TaskAnswer, error) {
	ssn, pods, done, err := openSession(objects, conf)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make([]TaskAnswer, 0, len(keys))
	for _, key := range keys {
		task, err := findTask(ssn, pods, key)
		if err != nil {
			return nil, err
		}
		out = append(out, answerTask(ssn, task))
	}
	return out, nil
}

// writeSessionBody writes the session of the cluster under conf to path, marshalled as the
// extender plugin's onSessionOpen does (plugins/extender: json.Marshal of an
// OnSessionOpenRequest holding the session's maps).
func writeSessionBody(objects []json.RawMessage, conf, path string) error {
	ssn, _, done, err := openSession(objects, conf)
	if err != nil {
		return err
	}
	defer done()
	body, err := json.Marshal(&extender.OnSessionOpenRequest{
		Jobs:           ssn.Jobs,
		Nodes:          ssn.Nodes,
		Queues:         ssn.Queues,
		NamespaceInfo:  ssn.NamespaceInfo,
		RevocableNodes: ssn.RevocableNodes,
	})
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o600)
}

// openSession opens one session of the cluster under conf (a fresh mock cache: a session's
// plugins may keep state in it); done closes it. Also the pods, for tasks of no PodGroup.
func openSession(objects []json.RawMessage, conf string) (*framework.Session, []*v1.Pod, func(), error) {
	_, tiers, configurations, _, err := scheduler.UnmarshalSchedulerConf(conf)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("conf: %w", err)
	}
	sc := cache.NewCustomMockSchedulerCache(SchedulerName, util.NewFakeBinder(0), util.NewFakeEvictor(0),
		&util.FakeStatusUpdater{}, nil, &record.FakeRecorder{})
	var nodes []*v1.Node
	var pods []*v1.Pod
	var groups []*schedulingv1beta1.PodGroup
	queues := map[string]bool{"default": true}
	for i, raw := range objects {
		var k kinded
		if err := json.Unmarshal(raw, &k); err != nil {
			return nil, nil, nil, fmt.Errorf("objects[%d]: %w", i, err)
		}
		switch k.Kind {
		case "Namespace":
			var ns v1.Namespace
			if err := json.Unmarshal(raw, &ns); err != nil {
				return nil, nil, nil, fmt.Errorf("objects[%d]: %w", i, err)
			}
			// through the client: the informers Volcano's predicates read namespaces from
			if _, err := sc.Client().CoreV1().Namespaces().Create(context.Background(), &ns, metav1.CreateOptions{}); err != nil {
				return nil, nil, nil, fmt.Errorf("objects[%d]: %w", i, err)
			}
		case "Node":
			var n v1.Node
			if err := json.Unmarshal(raw, &n); err != nil {
				return nil, nil, nil, fmt.Errorf("objects[%d]: %w", i, err)
			}
			nodes = append(nodes, &n)
		case "Pod":
			var p v1.Pod
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, nil, nil, fmt.Errorf("objects[%d]: %w", i, err)
			}
			pods = append(pods, &p)
		case "PodGroup":
			var g schedulingv1beta1.PodGroup
			if err := json.Unmarshal(raw, &g); err != nil {
				return nil, nil, nil, fmt.Errorf("objects[%d]: %w", i, err)
			}
			if g.Spec.Queue == "" {
				g.Spec.Queue = "default"
			}
			queues[g.Spec.Queue] = true
			groups = append(groups, &g)
		}
	}
	stop := make(chan struct{})
	sc.Run(stop)
	for q := range queues {
		sc.AddQueueV1beta1(util.BuildQueue(q, 1, nil))
	}
	for _, n := range nodes {
		sc.AddOrUpdateNode(n)
	}
	for _, p := range pods {
		sc.AddPod(p)
	}
	for _, g := range groups {
		sc.AddPodGroupV1beta1(g)
	}
	ssn := framework.OpenSession(sc, tiers, configurations)
	return ssn, pods, func() {
		framework.CloseSession(ssn)
		close(stop)
	}, nil
}

// answerTask is the allocate action's view of one task: PrePredicateFn, the predicate per node,
// then PrioritizeNodes over the feasible nodes. Nothing is allocated, so the next task sees the
// same session.
func answerTask(ssn *framework.Session, task *api.TaskInfo) TaskAnswer {
	ans := TaskAnswer{Nodes: map[string]NodeAnswer{}}
	if err := ssn.PrePredicateFn(task); err != nil {
		for _, n := range ssn.NodeList {
			ans.Nodes[n.Name] = refusal(err)
		}
		return ans
	}
	var feasible []*api.NodeInfo
	for _, n := range ssn.NodeList {
		if err := allocatePredicate(ssn, task, n); err != nil {
			ans.Nodes[n.Name] = refusal(err)
			continue
		}
		feasible = append(feasible, n)
		ans.Nodes[n.Name] = NodeAnswer{Feasible: true}
	}
	if len(feasible) > 0 {
		for score, ns := range util.PrioritizeNodes(task, feasible, ssn.BatchNodeOrderFn, ssn.NodeOrderMapFn, ssn.NodeOrderReduceFn) {
			for _, n := range ns {
				a := ans.Nodes[n.Name]
				s := score
				a.Score = &s
				ans.Nodes[n.Name] = a
			}
		}
	}
	return ans
}

// allocatePredicate is the allocate action's predicate (actions/allocate/allocate.go): the
// task's InitResreq against the node's FutureIdle, then the session's predicates.
func allocatePredicate(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) error {
	if ok, resources := task.InitResreq.LessEqualWithResourcesName(node.FutureIdle(), api.Zero); !ok {
		return api.NewFitErrWithStatus(task, node, &api.Status{Code: api.Unschedulable, Reason: api.WrapInsufficientResourceReason(resources)})
	}
	return ssn.PredicateForAllocateAction(task, node)
}

func findTask(ssn *framework.Session, pods []*v1.Pod, key string) (*api.TaskInfo, error) {
	for _, job := range ssn.Jobs {
		for _, t := range job.Tasks {
			if t.Namespace+"/"+t.Name == key {
				return t, nil
			}
		}
	}
	for _, p := range pods { // a pod of no PodGroup: not a Job of the session, asked about as is
		if p.Namespace+"/"+p.Name == key {
			return api.NewTaskInfo(p), nil
		}
	}
	return nil, fmt.Errorf("task %q: no such pod", key)
}

func refusal(err error) NodeAnswer {
	a := NodeAnswer{Code: api.Error, Reasons: []string{err.Error()}}
	var fit *api.FitError
	if errors.As(err, &fit) {
		a.Code, a.Reasons = 0, nil
		for _, s := range fit.Status {
			if s == nil {
				continue
			}
			if s.Code > a.Code {
				a.Code = s.Code
			}
			if s.Reason != "" {
				a.Reasons = append(a.Reasons, s.Reason)
			}
		}
		if a.Code == 0 {
			a.Code = api.Error
		}
	}
	sort.Strings(a.Reasons)
	a.Reasons = dedupe(a.Reasons)
	return a
}

func dedupe(xs []string) []string {
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, strings.TrimSpace(x))
		}
	}
	return out
}
