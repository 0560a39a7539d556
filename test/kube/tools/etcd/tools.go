//go:build tools

// The etcd server's root package is its main package; the blank import keeps it in go.mod.
package tools

import _ "go.etcd.io/etcd/server/v3"
