package client

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// The guide's RepackRun as written (YAML) and as kubectl prints it (JSON) give one spec.
func TestLoadRepackSpecReadsTheGuidesYAMLAsItsJSON(t *testing.T) {
	_, here, _, _ := runtime.Caller(0) // the test binary may run anywhere: find the file from the source
	guide := filepath.Join(filepath.Dir(here), "..", "..", "sidecar", "data", "guide-ascend-dryrun.yaml")
	fromYAML, err := LoadRepackSpec(guide)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromYAML.GetGoals()) != 1 || fromYAML.GetGoals()[0].GetResource() != "huawei.com/ascend-1980" {
		t.Fatalf("goals not read from the YAML: %v", fromYAML)
	}
	dir := t.TempDir()
	asJSON := filepath.Join(dir, "run.json")
	body := `{"apiVersion": "repack.volcano.sh/v1alpha1", "kind": "RepackRun", "metadata": {"name": "x"}, "spec": {` +
		`"mode": "DryRun", "scope": {"podGroups": {"include": {"selector": {"matchLabels": {"repack.volcano.sh/eligible":` +
		` "true"}}}, "exclude": {"selector": {"matchLabels": {"repack.volcano.sh/protected": "true"}}}}, "nodes":` +
		` {"include": {"selector": {"matchLabels": {"accelerator-pool": "ascend-npu"}}}}}, "goals": [{"resource":` +
		` "huawei.com/ascend-1980", "minFragImprovementPercent": 10}], "maxPerRun": {"podGroups": 1, "resources":` +
		` {"huawei.com/ascend-1980": 4}}, "ttlSecondsAfterFinished": 86400}}`
	if err := os.WriteFile(asJSON, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := LoadRepackSpec(asJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(fromJSON, fromYAML) {
		t.Fatalf("YAML %v != JSON %v", fromYAML, fromJSON)
	}
}

func TestLoadRepackSpecNamesWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"kind: Job\nspec: {}\n":                           `kind: expected "RepackRun"`,
		"kind: RepackRun\nspce: {}\n":                     `unknown key "spce" beside spec`,
		"spec:\n  goals: [{resource: 1}]\n":               "spec:",
		"spec: [unclosed\n":                               "not valid YAML",
		"spec:\n  mode: DryRun\n  maxPerRun: {pods: 1}\n": "spec:",
	}
	i := 0
	for text, want := range cases {
		i++
		path := filepath.Join(dir, "run"+string(rune('a'+i))+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadRepackSpec(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), path) {
			t.Errorf("%q: got %v, want an error naming %s and %q", text, err, path, want)
		}
	}
}

// A snapshot as YAML reads like its JSON.
func TestLoadSnapshotReadsYAML(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snap.yaml")
	text := "name: tiny\nnodes:\n- name: n1\n  allocatable: {cpu: 4000}\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := LoadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if snap.GetName() != "tiny" || len(snap.GetNodes()) != 1 || snap.GetNodes()[0].GetAllocatable()["cpu"] != 4000 {
		t.Fatalf("read %v", snap)
	}
}
