//go:build tools

// The binaries built from this module; the blank imports keep them in go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
