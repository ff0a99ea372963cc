//go:build tools

// Package tools pins the control-plane commands of k8s.io/kubernetes. That module requires
// its staging modules at v0.0.0 and maps them with replace directives that do not apply to
// dependents, so go.mod here replaces each one with its published v0.X.Y tag.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
