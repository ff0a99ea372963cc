{{/*
Helpers of the monitoring templates (servicemonitor.yaml, prometheusrule.yaml, dashboard.yaml): values that
cannot be rendered into a working install, refused with what to do.
*/}}

{{/* The labels of every monitoring object. */}}
{{- define "khrun.monitoringLabels" -}}
app.kubernetes.io/name: khrun
app.kubernetes.io/component: monitoring
{{- end }}

{{/* Fails unless the Prometheus Operator's API is served; .what names the value that asked for it. */}}
{{- define "khrun.requireMonitoringApi" -}}
{{- if not (.root.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}
{{- fail (printf "%s needs the Prometheus Operator's CRDs (monitoring.coreos.com/v1: ServiceMonitor, PodMonitor, PrometheusRule), which this cluster does not serve: install them (e.g. kube-prometheus-stack), or set %s=false and give Prometheus a scrape config and rule file of your own (docs/monitoring.md). With `helm template`, which sees no cluster, pass --api-versions monitoring.coreos.com/v1" .what .what) }}
{{- end }}
{{- end }}

{{/* The monitoring values that cannot work together or without the server. */}}
{{- define "khrun.checkMonitoring" -}}
{{- $m := .Values.monitoring }}
{{- if and $m.serviceMonitor.enabled $m.podMonitor.enabled }}
{{- fail "monitoring.serviceMonitor.enabled and monitoring.podMonitor.enabled: choose one, or every series is scraped twice" }}
{{- end }}
{{- range $name := list "serviceMonitor" "podMonitor" }}
{{- if and (get $m $name).enabled (not $.Values.server.enabled) }}
{{- fail (printf "monitoring.%s.enabled needs server.enabled=true: the server is what serves /metrics" $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The endpoint both monitors scrape (after `port: http`, the server's): /metrics, khrun's labels kept. */}}
{{- define "khrun.scrapeEndpoint" -}}
path: /metrics
interval: {{ .monitor.interval }}
{{- with .monitor.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
# khrun's series carry the check's namespace (and check, kind, error): kept as khrun wrote them instead of
# being renamed exported_namespace beside the target's namespace label.
honorLabels: true
relabelings:
  # One job name whatever scrapes it (the rules and the dashboard select it).
  - action: replace
    targetLabel: job
    replacement: {{ .job | quote }}
{{- end }}
