module volcano.sh/repack

go 1.26

// The gRPC and protobuf runtimes of the Volcano release the real control plane builds
// (volcano.sh/volcano v1.14.1: grpc replaced by v1.64.0, protobuf v1.36.6), so a scheduler
// plugin linking this client builds inside vc-scheduler's own module graph.
require (
	google.golang.org/grpc v1.64.0
	google.golang.org/protobuf v1.36.6
)

require sigs.k8s.io/yaml v1.6.0

require (
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/net v0.22.0 // indirect
	golang.org/x/sys v0.18.0 // indirect
	golang.org/x/text v0.14.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20240318140521-94a12d6c2237 // indirect
)
