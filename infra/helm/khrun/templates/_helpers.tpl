{{/*
Helpers of the khrun chart. Object names are fixed (khrun-runner, khrun-tick, khrun-sync, khrun-server,
kuberhealthy): khrun reads the PodTemplate khrun-runner by name and the Service kuberhealthy is the
Kuberhealthy v2 reporting address, so one release per cluster.
*/}}

{{/* The image reference: repository, and the tag (default: the chart's appVersion). */}}
{{- define "khrun.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* imagePullPolicy, only when set. */}}
{{- define "khrun.pullPolicy" -}}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* Pod-spec fields from values (pull secrets, placement); nothing when all are empty. */}}
{{- define "khrun.podSpecExtras" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* KHRUN_NAMESPACES (values.namespaces) and a component's extraEnv, as env entries; nothing when empty. */}}
{{- define "khrun.scopeEnv" -}}
{{- with .root.Values.namespaces }}
- name: KHRUN_NAMESPACES
  value: {{ join "," . | quote }}
{{- end }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}
