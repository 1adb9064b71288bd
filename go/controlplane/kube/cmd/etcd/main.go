// Command etcd is etcd's server built from the go.etcd.io/etcd/server/v3 module at the version
// Kubernetes pins. etcd's own main module cannot be installed with `go install` (its go.mod has
// replace directives), so this two-line main calls the same entry point its binary does.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
