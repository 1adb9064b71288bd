module volcano.sh/repack

go 1.19

// The versions Debian bookworm packages (golang-google-grpc-dev 1.33.3, golang-google-protobuf-dev
// 1.28.1, golang-github-golang-protobuf-1-5-dev 1.5.2, golang-golang-x-*-dev, golang-google-genproto-dev):
// scripts/vendor.sh assembles vendor/ from /usr/share/gocode against exactly these lines.
require (
	github.com/golang/protobuf v1.5.2
	golang.org/x/net v0.7.0
	golang.org/x/sys v0.3.0
	golang.org/x/text v0.7.0
	google.golang.org/genproto v0.0.0-20200413115906-b5235f65be36
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
