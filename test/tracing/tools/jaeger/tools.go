//go:build tools

// The Jaeger the tracing tests export spans to; the blank import keeps it in go.mod.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
