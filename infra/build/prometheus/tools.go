//go:build tools

// Package tools pins Prometheus' server and its rule tool (github.com/prometheus/prometheus/cmd/prometheus
// and cmd/promtool), so go.sum covers both: the tests check and unit-test the chart's PrometheusRule with
// `promtool check rules` and `promtool test rules`, and scrape a real `khrun serve` with the server
// (test/integration/monitoring.test.ts). The server is built without the builtinassets tag: its web UI's
// assets are not compiled in (the Go module holds no built UI), which the HTTP API the tests use does not need.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
