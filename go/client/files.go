package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	pb "volcano.sh/repack/api/v1alpha1"
)

// LoadSnapshot reads a Snapshot file: binary protobuf for .pb/.bin, otherwise protobuf JSON or
// YAML (lowerCamelCase or proto field names), as sidecar/snapshot/io.py reads them.
func LoadSnapshot(path string) (*pb.Snapshot, error) {
	snap := &pb.Snapshot{}
	if err := loadMessage(path, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// runShape names what a run file may hold, in errors (the Python CLI's words).
const runShape = "a RepackRun manifest, {spec: ...} or a bare RepackSpec"

// LoadRepackSpec reads a RepackRun manifest (its "spec"), {spec: ...} or a bare RepackSpec, as
// YAML or JSON — the guide's manifests as written, or `kubectl get repackrun NAME -o json`.
func LoadRepackSpec(path string) (*pb.RepackSpec, error) {
	data, err := readDocument(path)
	if err != nil {
		return nil, err
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: expected %s: %v", path, runShape, err)
	}
	source := path
	kindRaw, hasKind := head["kind"]
	specRaw, hasSpec := head["spec"]
	if hasKind {
		var kind string
		if err := json.Unmarshal(kindRaw, &kind); err != nil || kind != "RepackRun" {
			return nil, fmt.Errorf("%s: kind: expected \"RepackRun\", got %s (%s)", path, kindRaw, runShape)
		}
	}
	if hasKind || hasSpec {
		for key := range head {
			switch key {
			case "apiVersion", "kind", "metadata", "spec", "status":
			default:
				return nil, fmt.Errorf("%s: unknown key %q beside spec (expected %s)", path, key, runShape)
			}
		}
		data, source = specRaw, path+": spec"
		if len(data) == 0 || string(data) == "null" {
			data = []byte("{}")
		}
	}
	spec := &pb.RepackSpec{}
	if err := protojson.Unmarshal(data, spec); err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	return spec, nil
}

// LoadTask reads an inline Task (protobuf JSON or binary) for Filter/Prioritize.
func LoadTask(path string) (*pb.Task, error) {
	task := &pb.Task{}
	if err := loadMessage(path, task); err != nil {
		return nil, err
	}
	return task, nil
}

// MarshalDeterministic is the wire form with map entries sorted, comparable byte for byte with
// Python's SerializeToString(deterministic=True).
func MarshalDeterministic(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

func loadMessage(path string, m proto.Message) error {
	var err error
	if ext := filepath.Ext(path); ext == ".pb" || ext == ".bin" {
		var data []byte
		if data, err = os.ReadFile(path); err == nil {
			err = proto.Unmarshal(data, m)
		}
	} else {
		var data []byte
		if data, err = readDocument(path); err == nil {
			err = protojson.Unmarshal(data, m)
		}
		if err != nil && strings.HasPrefix(err.Error(), path+": ") {
			return err
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// readDocument is a file's content as JSON: JSON as is, anything else read as one YAML document.
func readDocument(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if looksLikeJSON(data) {
		return data, nil
	}
	out, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %v", path, err)
	}
	return out, nil
}

func looksLikeJSON(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
}
