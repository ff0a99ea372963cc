//go:build tools

// Package tools pins the helm command (helm.sh/helm/v3/cmd/helm): the test suite lints, renders and
// installs the chart in infra/helm/khrun with it against the local cluster.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
