//go:build tools

// Package tools pins Kuberhealthy v3.0.0's controller, which khrun's compatibility suite runs side by side
// with khrun on the local cluster (test/integration/compat/v3-side-by-side.test.ts), so go.sum covers it.
// Build: go build -trimpath -o OUT github.com/kuberhealthy/kuberhealthy/v3/cmd/kuberhealthy
// (infra/devkit/src/local/kuberhealthy-v3.ts does, once, into the khrun cache).
package tools

import (
	_ "github.com/kuberhealthy/kuberhealthy/v3/cmd/kuberhealthy"
)
