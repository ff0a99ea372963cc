//go:build tools

// Package tools pins AWS's Lambda Runtime Interface Emulator (cmd/aws-lambda-rie): the test suite runs the
// Lambda bundles through it and the Node runtime interface client (aws-lambda-ric) against the local cluster.
package tools

import (
	_ "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
)
