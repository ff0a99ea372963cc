//go:build tools

// Package tools pins the etcd server module so that `go build go.etcd.io/etcd/server/v3`
// resolves from this module's go.mod/go.sum (etcd's own go.mod has replace directives,
// so `go install ...@version` is refused).
package tools

import _ "go.etcd.io/etcd/server/v3"
