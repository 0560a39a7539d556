//go:build tools

// The helm command the chart tests run; the blank import keeps it in go.mod.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
