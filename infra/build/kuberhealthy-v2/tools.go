//go:build tools

// Package tools pins Kuberhealthy v2.7.1's daemon and the check programs khrun's compatibility suite runs
// side by side with it (test/integration/compat/v2-checks.test.ts), so go.sum covers every one of them.
package tools

import (
	_ "github.com/kuberhealthy/kuberhealthy/v2/cmd/daemonset-check"
	_ "github.com/kuberhealthy/kuberhealthy/v2/cmd/kuberhealthy"
	_ "github.com/kuberhealthy/kuberhealthy/v2/cmd/namespace-pod-check"
	_ "github.com/kuberhealthy/kuberhealthy/v2/cmd/pod-restarts-check"
	_ "github.com/kuberhealthy/kuberhealthy/v2/cmd/pod-status-check"
	_ "github.com/kuberhealthy/kuberhealthy/v2/cmd/resource-quota-check"
	_ "github.com/kuberhealthy/kuberhealthy/v2/cmd/test-check"
)
