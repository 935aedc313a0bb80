//go:build tools

// Package tools pins the Argo CD multi-call binary (argocd, argocd-repo-server,
// argocd-application-controller, ... selected by argv[0] or
// ARGOCD_BINARY_NAME) for tools/build.sh.
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
