//go:build tools

// Package tools pins the alertmanager command (github.com/prometheus/alertmanager/cmd/alertmanager): the
// notification tests run a real Alertmanager on 127.0.0.1 and post khrun's alerts to its API v2.
package tools

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
)
