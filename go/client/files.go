package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "volcano.sh/repack/api/v1alpha1"
)

// LoadSnapshot reads a Snapshot file: binary protobuf for .pb/.bin, protobuf JSON otherwise
// (lowerCamelCase or proto field names, as sidecar/snapshot/io.py reads them). YAML is not
// read here (no YAML library among Debian's Go packages this module builds against).
func LoadSnapshot(path string) (*pb.Snapshot, error) {
	snap := &pb.Snapshot{}
	if err := loadMessage(path, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// LoadRepackSpec reads a RepackRun manifest (its "spec") or a bare RepackSpec, as JSON
// (`kubectl get repackrun NAME -o json` works as-is).
func LoadRepackSpec(path string) (*pb.RepackSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !looksLikeJSON(data) {
		return nil, fmt.Errorf("%s: expected JSON (convert YAML first, e.g. kubectl ... -o json)", path)
	}
	var head struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	source := path
	if err := json.Unmarshal(data, &head); err == nil && head.Kind == "RepackRun" {
		data, source = head.Spec, path+": spec"
		if len(data) == 0 {
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
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	switch ext := filepath.Ext(path); {
	case ext == ".pb" || ext == ".bin":
		err = proto.Unmarshal(data, m)
	case looksLikeJSON(data):
		err = protojson.Unmarshal(data, m)
	default:
		err = fmt.Errorf("expected protobuf JSON (or binary protobuf named .pb/.bin)")
	}
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func looksLikeJSON(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
}
