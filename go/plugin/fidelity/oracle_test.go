package fidelity

import (
	"encoding/json"
	"os"
	"testing"

	// as cmd/volcano-oracle: the actions and plugins a conf names register themselves
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
)

func obj(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type m = map[string]any

func node(name string, taints ...m) m {
	alloc := m{"cpu": "4", "memory": "8Gi", "pods": "2"}
	return m{"apiVersion": "v1", "kind": "Node", "metadata": m{"name": name, "labels": m{"kubernetes.io/hostname": name}},
		"spec":   m{"taints": taints},
		"status": m{"allocatable": alloc, "capacity": alloc, "conditions": []m{{"type": "Ready", "status": "True"}}}}
}

func pod(name, nodeName, cpu string) m {
	spec := m{"schedulerName": SchedulerName, "priority": 0, "containers": []m{{"name": "c", "image": "x",
		"resources": m{"requests": m{"cpu": cpu, "memory": "1Gi"}}}}}
	phase := "Pending"
	if nodeName != "" {
		spec["nodeName"], phase = nodeName, "Running"
	}
	return m{"apiVersion": "v1", "kind": "Pod", "spec": spec, "status": m{"phase": phase},
		"metadata": m{"name": name, "namespace": "ns", "uid": "uid-" + name,
			"annotations": m{"scheduling.k8s.io/group-name": "g-" + name}}}
}

func group(name string) m {
	return m{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": m{"name": "g-" + name, "namespace": "ns", "uid": "uid-g-" + name},
		"spec":     m{"minMember": 1, "queue": "default"}, "status": m{"phase": "Inqueue"}}
}

const conf = `
actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: nodeorder
`

// Each task is answered against the same session; each conf opens its own.
func TestEvaluateAnswersEveryTaskUnderEveryConf(t *testing.T) {
	objects := []json.RawMessage{
		obj(t, m{"apiVersion": "v1", "kind": "Namespace", "metadata": m{"name": "ns"}}),
		obj(t, node("free")),
		obj(t, node("tainted", m{"key": "gpu", "value": "y", "effect": "NoSchedule"})),
		obj(t, node("full")),
		obj(t, group("a")), obj(t, group("b")), obj(t, group("r1")), obj(t, group("r2")), obj(t, group("big")),
		obj(t, pod("r1", "full", "100m")), obj(t, pod("r2", "full", "100m")),
		obj(t, pod("a", "", "1")), obj(t, pod("big", "", "5")),
	}
	noScores := "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: predicates\n"
	ans := Evaluate(Case{Objects: objects, Confs: []string{conf, noScores}, Tasks: []string{"ns/a", "ns/big"}})
	if ans.Error != "" {
		t.Fatal(ans.Error)
	}
	if len(ans.Answers) != 2 || len(ans.Answers[0]) != 2 {
		t.Fatalf("answers %v", ans.Answers)
	}
	a := ans.Answers[0][0].Nodes
	if !a["free"].Feasible || a["free"].Score == nil {
		t.Errorf("free: %+v", a["free"])
	}
	if got := a["tainted"]; got.Feasible || got.Code != 3 || len(got.Reasons) != 1 || got.Reasons[0] != "node(s) had untolerated taint {gpu: y}" {
		t.Errorf("tainted: %+v", got)
	}
	// two pods on a two-pod node: allocate's resource check on FutureIdle names the pod slot
	if got := a["full"]; got.Feasible || got.Code != 2 || got.Reasons[0] != "Insufficient pods" {
		t.Errorf("full: %+v", got)
	}
	for name, got := range ans.Answers[0][1].Nodes {
		if got.Feasible || got.Code == 0 {
			t.Errorf("big on %s: %+v", name, got)
		}
	}
	if got := ans.Answers[0][1].Nodes["free"]; got.Reasons[0] != "Insufficient cpu" {
		t.Errorf("big on free: %+v", got)
	}
	// no node order in the second conf: feasible nodes score 0
	if got := ans.Answers[1][0].Nodes["free"]; !got.Feasible || got.Score == nil || *got.Score != 0 {
		t.Errorf("free without nodeorder: %+v", got)
	}
}

func TestEvaluateNamesTheBadInput(t *testing.T) {
	ans := Evaluate(Case{Objects: []json.RawMessage{json.RawMessage(`{"kind": 1}`)}, Confs: []string{conf}})
	if ans.Error == "" || ans.Answers != nil {
		t.Fatalf("answer %+v", ans)
	}
	ans = Evaluate(Case{Confs: []string{conf}, Tasks: []string{"ns/none"}})
	if ans.Error != `confs[0]: task "ns/none": no such pod` {
		t.Fatalf("answer %+v", ans)
	}
}

// The session body is what the extender plugin sends on onSessionOpen: Volcano's structs by Go
// field name, the session's jobs (their tasks keyed by UID) and nodes.
func TestSessionBodyIsTheExtenderPluginsMarshalling(t *testing.T) {
	path := t.TempDir() + "/body.json"
	objects := []json.RawMessage{
		obj(t, m{"apiVersion": "v1", "kind": "Namespace", "metadata": m{"name": "ns"}}),
		obj(t, node("n1")), obj(t, node("n2")),
		obj(t, group("a")), obj(t, pod("a", "n1", "1")),
	}
	if ans := Evaluate(Case{Objects: objects, Confs: []string{conf}, SessionBodyTo: path}); ans.Error != "" || ans.Answers != nil {
		t.Fatalf("%+v", ans)
	}
	var body struct {
		Jobs map[string]struct {
			Tasks map[string]struct{ Name, NodeName string }
		}
		Nodes map[string]struct{ Name string }
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Nodes) != 2 || body.Nodes["n1"].Name != "n1" {
		t.Errorf("nodes %+v", body.Nodes)
	}
	job, ok := body.Jobs["ns/g-a"]
	if !ok || job.Tasks["uid-a"].NodeName != "n1" {
		t.Errorf("jobs %+v", body.Jobs)
	}
	if ans := Evaluate(Case{Objects: objects, SessionBodyTo: path}); ans.Error == "" {
		t.Error("no conf: no error")
	}
}
