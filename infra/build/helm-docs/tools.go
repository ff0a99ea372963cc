//go:build tools

// Package tools pins helm-docs (github.com/norwoodj/helm-docs/cmd/helm-docs), which writes the values
// table of the chart's README (infra/helm/khrun/README.md) from the comments of its values.yaml.
// Build: go build -trimpath -o OUT github.com/norwoodj/helm-docs/cmd/helm-docs
// (infra/devkit/src/local/helm-docs.ts does, once, into the khrun cache).
package tools

import (
	_ "github.com/norwoodj/helm-docs/cmd/helm-docs"
)
