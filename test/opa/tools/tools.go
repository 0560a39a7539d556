//go:build tools

// The OPA server the opaServerAuth tests query and whose `opa build -t wasm` compiles Rego for opaAuth (the
// image's opa is built from this module too: Dockerfile); the blank import keeps it in go.mod.
package tools

import _ "github.com/open-policy-agent/opa"
