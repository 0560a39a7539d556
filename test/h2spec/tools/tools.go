//go:build tools

// h2spec (RFC 9113 / RFC 7541 conformance client); the blank import keeps it in go.mod.
package tools

import _ "github.com/summerwind/h2spec/cmd/h2spec"
