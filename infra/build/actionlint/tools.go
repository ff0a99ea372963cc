//go:build tools

// Package tools pins the actionlint command (github.com/rhysd/actionlint/cmd/actionlint): the test suite
// lints the GitHub Actions workflows in .github/workflows with it (test/integration/workflows.test.ts).
package tools

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
