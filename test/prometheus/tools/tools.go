//go:build tools

// The Prometheus the observability tests scrape with and query (built by scripts/prometheus-tool.sh; not product code).
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
