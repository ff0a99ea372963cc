{{/*
Helpers of the khrun chart. Object names are fixed and all begin with khrun- (khrun-runner, khrun-tick,
khrun-sync, khrun-server, khrun-report-key): khrun reads the PodTemplate khrun-runner by name, and no name is
one a Kuberhealthy v2 or v3 manifest uses, so the chart installs beside a running Kuberhealthy, in its
namespace or another. One release per cluster (the ClusterRoles and admission policies are cluster-wide).
*/}}

{{/* The report server's name: its Deployment, Service, PodDisruptionBudget, ServiceAccount and ClusterRole.
Not "kuberhealthy" (Kuberhealthy's own Deployment and Service are named so): a Service of that name would
take over Kuberhealthy's reporting address. */}}
{{- define "khrun.serverName" -}}
khrun-server
{{- end }}

{{/* The report server's in-cluster base URL (its Service, port 80), e.g. for a ServiceMonitor or the
checker pods' reporting URL. */}}
{{- define "khrun.serverUrl" -}}
http://{{ include "khrun.serverName" . }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end }}

{{/* The labels that select a component's pods (.: the component's name): the server's Deployment,
Service and PodDisruptionBudget select its pods with these. */}}
{{- define "khrun.selectorLabels" -}}
app.kubernetes.io/name: khrun
app.kubernetes.io/component: {{ . }}
{{- end }}

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

{{/* A component's pod metadata: its selector labels, podLabels (the chart-wide ones, then the
component's, which win; neither can change the selector labels) and podAnnotations (the same way).
(dict "root" $ "component" NAME "values" .Values.COMPONENT) */}}
{{- define "khrun.podMetadata" -}}
{{- $labels := merge (include "khrun.selectorLabels" .component | fromYaml) (deepCopy (.values.podLabels | default dict)) (deepCopy (.root.Values.podLabels | default dict)) -}}
labels:
  {{- toYaml $labels | nindent 2 }}
{{- with merge (deepCopy (.values.podAnnotations | default dict)) (deepCopy (.root.Values.podAnnotations | default dict)) }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Pod-spec fields from values: pull secrets, and the placement and priority of a component's pods (the
component's nodeSelector, tolerations, affinity and priorityClassName when set, else the chart-wide ones);
nothing when all are empty. (dict "root" $ "values" .Values.COMPONENT) */}}
{{- define "khrun.podSpecExtras" -}}
{{- $root := .root.Values }}
{{- with $root.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName | default $root.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector | default $root.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations | default $root.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity | default $root.affinity }}
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

{{/* Values that cannot be rendered into a working install, refused with what to set instead. */}}
{{- define "khrun.checkValues" -}}
{{- if and .Values.runner.reportToServer (not .Values.server.enabled) }}
{{- fail "runner.reportToServer needs server.enabled=true: it points checker pods at the report server of this release, which is not enabled" }}
{{- end }}
{{- if and .Values.runner.reportToServer .Values.server.enabled (not .Values.server.reports) }}
{{- fail "runner.reportToServer needs server.reports=true: checker pods would report to a server that takes no reports" }}
{{- end }}
{{- if and .Values.server.allowUnsignedReports (not .Values.server.reports) }}
{{- fail "server.allowUnsignedReports needs server.reports=true: a server without reports takes no unsigned ones either" }}
{{- end }}
{{- if and .Values.runner.reportToServer (eq .Values.mode "sync") (not .Values.server.allowUnsignedReports) }}
{{- fail "runner.reportToServer needs mode=tick (or server.allowUnsignedReports=true): in sync mode runner pods run in each khcheck's namespace, where the report key Secret would have to be copied, and whoever may read Secrets there could forge any check's report. To do it anyway, set runner.extraEnv: KH_EXTERNAL_REPORTING_URL, and KHRUN_REPORT_KEY (valueFrom secretKeyRef) from a Secret you create in every namespace of checks" }}
{{- end }}
{{- end }}

{{/* An API the release needs from the cluster ("group/version/Kind"), refused with what to do when the
cluster does not serve it. Against a cluster (install, upgrade, --dry-run=server) Helm lists every kind
served; `helm template` without a cluster knows group/versions only, so there the group/version is checked
and kubeVersion (Chart.yaml, against --kube-version) stands for the kind. (dict "root" $ "api" API "for" WHAT) */}}
{{- define "khrun.requireApi" -}}
{{- $apis := .root.Capabilities.APIVersions }}
{{- $kindsListed := $apis.Has "v1/Pod" }}
{{- if not (or ($apis.Has .api) (and (not $kindsListed) ($apis.Has (dir .api)))) }}
{{- $hint := "" }}
{{- if hasPrefix "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" .api }}
{{- $hint = " (Kubernetes 1.30 or later); on an older cluster set admissionPolicy.enabled=false, and upgrade: without the policies khrun's ServiceAccounts can do whatever their RBAC verbs allow" }}
{{- end }}
{{- fail (printf "%s needs the API %s, which this cluster (Kubernetes %s) does not serve%s" .for .api .root.Capabilities.KubeVersion.Version $hint) }}
{{- end }}
{{- end }}

{{/* The APIs every rendering needs: what the templates create whatever the values. */}}
{{- define "khrun.checkCapabilities" -}}
{{- include "khrun.requireApi" (dict "root" . "api" "v1/PodTemplate" "for" "the runner (PodTemplate khrun-runner)") }}
{{- include "khrun.requireApi" (dict "root" . "api" "batch/v1/CronJob" "for" (printf "the %s CronJob (mode=%s)" .Values.mode .Values.mode)) }}
{{- include "khrun.requireApi" (dict "root" . "api" "rbac.authorization.k8s.io/v1/ClusterRole" "for" "khrun's RBAC") }}
{{- if .Values.admissionPolicy.enabled }}
{{- include "khrun.requireApi" (dict "root" . "api" "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" "for" "admissionPolicy.enabled") }}
{{- include "khrun.requireApi" (dict "root" . "api" "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding" "for" "admissionPolicy.enabled") }}
{{- end }}
{{- if .Values.server.enabled }}
{{- include "khrun.requireApi" (dict "root" . "api" "apps/v1/Deployment" "for" "the report server (server.enabled)") }}
{{- end }}
{{- end }}

{{/* The report key (the server's, and with runner.reportToServer the runners'): the Secret that holds it
under `key`, mounted read-only, its file named by KHRUN_REPORT_KEY_FILE (lib/config/report-key.ts). Used
unless server.allowUnsignedReports. */}}
{{- define "khrun.reportKeySecret" -}}
{{ .Values.server.reportKey.existingSecret | default "khrun-report-key" }}
{{- end }}
{{- define "khrun.reportKeyEnv" -}}
- name: KHRUN_REPORT_KEY_FILE
  value: /var/run/khrun-report-key/key
{{- end }}
{{- define "khrun.reportKeyMount" -}}
- { name: report-key, mountPath: /var/run/khrun-report-key, readOnly: true }
{{- end }}
{{- define "khrun.reportKeyVolume" -}}
- name: report-key
  secret:
    secretName: {{ include "khrun.reportKeySecret" . }}
    items: [{ key: key, path: key }]
{{- end }}

{{/* The notification configuration (notifications.existingSecret), mounted read-only and named by
KHRUN_NOTIFY_CONFIG_FILE (lib/config/notify-options.ts), in the runner PodTemplate, the tick and the
server; nothing without it. */}}
{{- define "khrun.notifyEnv" -}}
{{- if .Values.notifications.existingSecret }}
- name: KHRUN_NOTIFY_CONFIG_FILE
  value: /etc/khrun/notify/{{ .Values.notifications.key }}
{{- end }}
{{- end }}
{{- define "khrun.notifyMount" -}}
{{- if .Values.notifications.existingSecret }}
- { name: notify-config, mountPath: /etc/khrun/notify, readOnly: true }
{{- end }}
{{- end }}
{{- define "khrun.notifyVolume" -}}
{{- if .Values.notifications.existingSecret }}
- name: notify-config
  secret:
    secretName: {{ .Values.notifications.existingSecret }}
    items: [{ key: {{ .Values.notifications.key | quote }}, path: {{ .Values.notifications.key | quote }} }]
{{- end }}
{{- end }}

{{/* CEL: the request comes from a runner: a khrun-runner ServiceAccount of any namespace (sync's CronJobs
run as the khrun-runner of their khcheck's namespace), khrun-server (which runs checks when it takes
triggers and is given the runner's rights), or the group kh-runner (the Lambda runCheck role's,
docs/install.md "On AWS Lambda"). */}}
{{- define "khrun.runnerUser" -}}
request.userInfo.username.matches('^system:serviceaccount:[a-z0-9.-]+:khrun-(runner|server)$') || (has(request.userInfo.groups) && 'kh-runner' in request.userInfo.groups)
{{- end }}

{{/* CEL validations without parameters: the pod spec variables.pod runs as khrun-runner, with no host
namespaces, hostPath volumes or privileged containers. */}}
{{- define "khrun.runsAsRunner" -}}
- expression: "has(variables.pod.serviceAccountName) && variables.pod.serviceAccountName == 'khrun-runner'"
  reason: Forbidden
  message: khrun's runner pods run as the ServiceAccount khrun-runner, and as nothing else
- expression: |-
    !(has(variables.pod.hostNetwork) && variables.pod.hostNetwork)
    && !(has(variables.pod.hostPID) && variables.pod.hostPID)
    && !(has(variables.pod.hostIPC) && variables.pod.hostIPC)
    && (!has(variables.pod.volumes) || variables.pod.volumes.all(v, !has(v.hostPath)))
    && variables.pod.containers.all(c, !(has(c.securityContext) && has(c.securityContext.privileged)
         && c.securityContext.privileged))
    && (!has(variables.pod.initContainers) || variables.pod.initContainers.all(c,
         !(has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged)))
  reason: Forbidden
  message: khrun's runner pods use no host network, PID or IPC namespace, no hostPath volume and no privileged container
{{- end }}

{{/* CEL validations without parameters: the Job spec variables.job (its pod template's annotations variables.podAnnotations)
runs one runner pod at a time as khrun builds it (lib/schedule/run-job.ts): no parallelism, completions or
retries beyond one pod, no hand-picked selector (which would adopt other pods), and no annotation that
unconfines its containers. */}}
{{- define "khrun.runnerJobShape" -}}
- expression: |-
    (!has(variables.job.parallelism) || variables.job.parallelism <= 1)
    && (!has(variables.job.completions) || variables.job.completions <= 1)
    && (!has(variables.job.backoffLimit) || variables.job.backoffLimit == 0)
    && !(has(variables.job.manualSelector) && variables.job.manualSelector)
  reason: Forbidden
  message: khrun's runner Jobs run one pod, once (parallelism and completions 1, backoffLimit 0), with the selector the API server makes
- expression: |-
    variables.podAnnotations.all(k,
      !((k.startsWith('container.apparmor.security.beta.kubernetes.io/')
         || k.startsWith('container.seccomp.security.alpha.kubernetes.io/')
         || k == 'seccomp.security.alpha.kubernetes.io/pod')
        && variables.podAnnotations[k].lowerAscii() == 'unconfined'))
  reason: Forbidden
  message: khrun's runner pods carry no annotation that unconfines their containers (AppArmor, seccomp)
{{- end }}

{{/* CEL: the security context {{ . }} (a pod's or a container's) keeps Pod Security baseline's confinement:
no unconfined seccomp or AppArmor profile, no Windows host process, SELinux options of baseline's types
only, no SELinux user or role. */}}
{{- define "khrun.confinedContext" -}}
(!has({{ . }}.seccompProfile) || {{ . }}.seccompProfile.type != 'Unconfined')
&& (!has({{ . }}.appArmorProfile) || {{ . }}.appArmorProfile.type != 'Unconfined')
&& (!has({{ . }}.windowsOptions) || !has({{ . }}.windowsOptions.hostProcess) || !{{ . }}.windowsOptions.hostProcess)
&& (!has({{ . }}.seLinuxOptions) || (
  (!has({{ . }}.seLinuxOptions.type) || {{ . }}.seLinuxOptions.type in variables.baselineSELinuxTypes)
  && (!has({{ . }}.seLinuxOptions.user) || {{ . }}.seLinuxOptions.user == '')
  && (!has({{ . }}.seLinuxOptions.role) || {{ . }}.seLinuxOptions.role == '')))
{{- end }}

{{/* The fields of a pod spec and of a container (Kubernetes 1.30 and later), compared one by one where a
whole object cannot be: the expressions see objects untyped (dyn), so a field a version lacks is absent. */}}
{{- define "khrun.podSpecFields" -}}
activeDeadlineSeconds affinity automountServiceAccountToken dnsConfig dnsPolicy enableServiceLinks ephemeralContainers hostAliases hostIPC hostNetwork hostPID hostUsers hostname hostnameOverride imagePullSecrets initContainers nodeName nodeSelector os overhead preemptionPolicy priority priorityClassName readinessGates resourceClaims resources runtimeClassName schedulerName schedulingGates securityContext serviceAccount serviceAccountName setHostnameAsFQDN shareProcessNamespace subdomain terminationGracePeriodSeconds tolerations topologySpreadConstraints volumes
{{- end }}
{{- define "khrun.containerFields" -}}
image command args workingDir ports envFrom resources resizePolicy restartPolicy restartPolicyRules volumeMounts volumeDevices livenessProbe readinessProbe startupProbe lifecycle terminationMessagePath terminationMessagePolicy imagePullPolicy securityContext stdin stdinOnce tty
{{- end }}

{{/* CEL validations: the pod spec variables.pod is the khrun-runner PodTemplate's (variables.template) as
the tick and sync copy it (lib/schedule/run-job.ts), whole: every pod-spec field but containers and
restartPolicy (Never in both) is the template's, and every container field but env; the environment is
the template's with CHECK_NAME (a khjob's: KHJOB_NAME, a HealthCheck's: HEALTHCHECK_NAME) and
CHECK_NAMESPACE added, or a batch's KHRUN_BATCH (lib/schedule/batch-job.ts) instead. Anything else would
run the runner's image as another identity, or another program (a hook, a probe) as the runner. */}}
{{- define "khrun.runsRunnerTemplate" -}}
- expression: |-
    variables.pod.containers.map(c, c.name) == variables.template.containers.map(c, c.name)
    && variables.pod.containers.all(c, variables.template.containers.exists(t, t.name == c.name
    {{- range splitList " " (include "khrun.containerFields" .) }}
         && has(c.{{ . }}) == has(t.{{ . }}) && (!has(c.{{ . }}) || c.{{ . }} == t.{{ . }})
    {{- end }}
         && (has(c.env) ? c.env.filter(e, !(e.name in ['CHECK_NAME', 'KHJOB_NAME', 'HEALTHCHECK_NAME', 'CHECK_NAMESPACE', 'KHRUN_BATCH'])) : [])
            == (has(t.env) ? t.env.filter(e, !(e.name in ['CHECK_NAME', 'KHJOB_NAME', 'HEALTHCHECK_NAME', 'CHECK_NAMESPACE', 'KHRUN_BATCH'])) : [])))
  reason: Forbidden
  message: >-
    the runner's containers are the khrun-runner PodTemplate's, whole (image, command, arguments, working
    directory, ports, mounts, probes, lifecycle hooks, security context, environment); only CHECK_NAME
    (KHJOB_NAME, HEALTHCHECK_NAME) and CHECK_NAMESPACE, or KHRUN_BATCH, are added
- expression: |-
    true
    {{- range splitList " " (include "khrun.podSpecFields" .) }}
    && has(variables.pod.{{ . }}) == has(variables.template.{{ . }})
    && (!has(variables.pod.{{ . }}) || variables.pod.{{ . }} == variables.template.{{ . }})
    {{- end }}
  reason: Forbidden
  message: >-
    the runner's pod is the khrun-runner PodTemplate's, whole: the same init containers, volumes, host
    namespaces, node, runtime class, security context and every other pod-spec field
{{- end }}

{{/* CEL: a key of volume {{ . }} (a variable name) that names its source and what it points at. */}}
{{- define "khrun.volumeKey" -}}
{{ . }}.name + '|'
{{- range list "awsElasticBlockStore" "azureDisk" "azureFile" "cephfs" "cinder" "configMap" "csi" "downwardAPI" "emptyDir" "ephemeral" "fc" "flexVolume" "flocker" "gcePersistentDisk" "gitRepo" "glusterfs" "hostPath" "image" "iscsi" "nfs" "persistentVolumeClaim" "photonPersistentDisk" "portworxVolume" "projected" "quobyte" "rbd" "scaleIO" "secret" "storageos" "vsphereVolume" }} + (has({{ $ }}.{{ . }}) ? '{{ . }},' : ''){{ end }}
  + '|' + (has({{ . }}.hostPath) ? {{ . }}.hostPath.path : '')
  + '|' + (has({{ . }}.secret) && has({{ . }}.secret.secretName) ? {{ . }}.secret.secretName : '')
  + '|' + (has({{ . }}.configMap) && has({{ . }}.configMap.name) ? {{ . }}.configMap.name : '')
  + '|' + (has({{ . }}.persistentVolumeClaim) ? {{ . }}.persistentVolumeClaim.claimName : '')
  + '|' + (has({{ . }}.csi) ? {{ . }}.csi.driver : '')
  + '|' + (has({{ . }}.nfs) ? {{ . }}.nfs.server + ':' + {{ . }}.nfs.path : '')
  + '|' + (has({{ . }}.image) && has({{ . }}.image.reference) ? {{ . }}.image.reference : '')
  + '|' + (has({{ . }}.projected) && has({{ . }}.projected.sources) ? {{ . }}.projected.sources.map(s,
      (has(s.secret) ? 'secret:' + (has(s.secret.name) ? s.secret.name : '') : '')
      + (has(s.configMap) ? 'configMap:' + (has(s.configMap.name) ? s.configMap.name : '') : '')
      + (has(s.serviceAccountToken) ? 'token:' + (has(s.serviceAccountToken.audience) ? s.serviceAccountToken.audience : '') : '')
      + (has(s.downwardAPI) ? 'downwardAPI' : '') + (has(s.clusterTrustBundle) ? 'clusterTrustBundle' : '')).join(',') : '')
{{- end }}

{{/* CEL: the command a lifecycle hook or probe runs; .x the container variable, .h the path below it. */}}
{{- define "khrun.handlerKey" -}}
{{- $p := .x }}{{ $has := list }}
{{- range splitList "." .h }}{{ $p = printf "%s.%s" $p . }}{{ $has = append $has (printf "has(%s)" $p) }}{{ end -}}
({{ join " && " $has }} ? ({{ join " && " $has }} && has({{ $p }}.exec) && has({{ $p }}.exec.command) ? {{ $p }}.exec.command : ['(no exec)']) : ['(none)'])
{{- end }}

{{/* CEL: container c (of the pod) is container t (of the check's podSpec) as the runner builds it
(lib/check/pod-builder.ts: the same container, KH_* variables added): image, command, arguments, working
directory, security context, host ports, the commands of hooks and probes, mounts, devices, environment
and its sources. The API server's defaults (fieldRef apiVersion, procMount, a ServiceAccount token mount)
are left out of the comparison. */}}
{{- define "khrun.sameContainer" -}}
(has(c.image) ? c.image : '') == (has(t.image) ? t.image : '')
&& (has(c.command) ? c.command : []) == (has(t.command) ? t.command : [])
&& (has(c.args) ? c.args : []) == (has(t.args) ? t.args : [])
&& (has(c.workingDir) ? c.workingDir : '') == (has(t.workingDir) ? t.workingDir : '')
{{- range list "capabilities" "privileged" "seLinuxOptions" "windowsOptions" "runAsUser" "runAsGroup" "runAsNonRoot" "readOnlyRootFilesystem" "allowPrivilegeEscalation" "seccompProfile" "appArmorProfile" }}
&& (has(c.securityContext) && has(c.securityContext.{{ . }})) == (has(t.securityContext) && has(t.securityContext.{{ . }}))
&& (!(has(c.securityContext) && has(c.securityContext.{{ . }})) || c.securityContext.{{ . }} == t.securityContext.{{ . }})
{{- end }}
&& (has(c.securityContext) && has(c.securityContext.procMount) ? c.securityContext.procMount : 'Default')
   == (has(t.securityContext) && has(t.securityContext.procMount) ? t.securityContext.procMount : 'Default')
&& (variables.hostNetwork
    || (has(c.ports) ? c.ports.filter(p, has(p.hostPort) && p.hostPort != 0).map(p, p.hostPort) : [])
       == (has(t.ports) ? t.ports.filter(p, has(p.hostPort) && p.hostPort != 0).map(p, p.hostPort) : []))
{{- range list "lifecycle.postStart" "lifecycle.preStop" "livenessProbe" "readinessProbe" "startupProbe" }}
&& {{ include "khrun.handlerKey" (dict "x" "c" "h" .) }}
   == {{ include "khrun.handlerKey" (dict "x" "t" "h" .) }}
{{- end }}
&& (has(c.volumeMounts) ? c.volumeMounts.filter(m, !m.name.startsWith('kube-api-access-')) : []).map(m,
     m.name + '|' + m.mountPath + '|' + (has(m.subPath) ? m.subPath : '') + '|' + (has(m.subPathExpr) ? m.subPathExpr : '')
     + '|' + (has(m.readOnly) && m.readOnly ? 'ro' : 'rw') + '|' + (has(m.mountPropagation) ? m.mountPropagation : ''))
   == (has(t.volumeMounts) ? t.volumeMounts.filter(m, !m.name.startsWith('kube-api-access-')) : []).map(m,
     m.name + '|' + m.mountPath + '|' + (has(m.subPath) ? m.subPath : '') + '|' + (has(m.subPathExpr) ? m.subPathExpr : '')
     + '|' + (has(m.readOnly) && m.readOnly ? 'ro' : 'rw') + '|' + (has(m.mountPropagation) ? m.mountPropagation : ''))
&& (has(c.volumeDevices) ? c.volumeDevices.map(d, d.name + '|' + d.devicePath) : [])
   == (has(t.volumeDevices) ? t.volumeDevices.map(d, d.name + '|' + d.devicePath) : [])
{{- range list "c" "t" }}
{{ if eq . "c" }}&& {{ else }}   == {{ end }}(has({{ . }}.env) ? {{ . }}.env.filter(e, !(e.name in ['KH_REPORTING_URL', 'KH_RUN_UUID', 'KH_CHECK_RUN_DEADLINE', 'KH_POD_NAMESPACE'])) : []).map(e,
     e.name + '=' + (has(e.value) ? e.value : '') + (has(e.valueFrom) ? '|'
     + (has(e.valueFrom.secretKeyRef) ? 'secret:' + (has(e.valueFrom.secretKeyRef.name) ? e.valueFrom.secretKeyRef.name : '') + '/' + e.valueFrom.secretKeyRef.key : '')
     + (has(e.valueFrom.configMapKeyRef) ? 'configMap:' + (has(e.valueFrom.configMapKeyRef.name) ? e.valueFrom.configMapKeyRef.name : '') + '/' + e.valueFrom.configMapKeyRef.key : '')
     + (has(e.valueFrom.fieldRef) ? 'field:' + e.valueFrom.fieldRef.fieldPath : '')
     + (has(e.valueFrom.resourceFieldRef) ? 'resource:' + e.valueFrom.resourceFieldRef.resource : '') : ''))
{{- end }}
{{- range list "c" "t" }}
{{ if eq . "c" }}&& {{ else }}   == {{ end }}(has({{ . }}.envFrom) ? {{ . }}.envFrom.map(f, (has(f.prefix) ? f.prefix : '') + '|'
     + (has(f.secretRef) ? 'secret:' + (has(f.secretRef.name) ? f.secretRef.name : '') : '')
     + (has(f.configMapRef) ? 'configMap:' + (has(f.configMapRef.name) ? f.configMapRef.name : '') : '')) : [])
{{- end }}
{{- end }}

{{/* CEL validations of policies 2, 2b and 2c (admission.yaml): a checker pod runs the podSpec of the
object (params: each object of its kind in the namespace, one evaluation each) it names, as the runner
builds it. The evaluation of a param constrains the pod when the pod names it or names its uid
(variables.mine), so a pod cannot name one object and be owned by another. The context is a dict: kind
(KuberhealthyCheck, KuberhealthyJob, HealthCheck) and what (khcheck, khjob, HealthCheck), for messages. */}}
{{- define "khrun.runsItsPodSpec" -}}
- expression: |-
    !variables.mine || (params.metadata.name == variables.check
      && object.metadata.ownerReferences.size() == 1
      && object.metadata.ownerReferences[0].kind == '{{ .kind }}'
      && object.metadata.ownerReferences[0].name == params.metadata.name
      && object.metadata.ownerReferences[0].uid == params.metadata.uid)
  reason: Forbidden
  messageExpression: >-
    'a checker pod of {{ .what }} ' + params.metadata.name + ' runs its podSpec as written, names it (label)
    and is owned by it (uid) alone'
- expression: |-
    !variables.mine || (
      variables.serviceAccount == (
           has(variables.checkSpec.serviceAccountName) && variables.checkSpec.serviceAccountName != ''
           ? variables.checkSpec.serviceAccountName
           : has(variables.checkSpec.serviceAccount) && variables.checkSpec.serviceAccount != ''
           ? variables.checkSpec.serviceAccount : 'default')
      && (has(object.spec.automountServiceAccountToken) ? object.spec.automountServiceAccountToken : true)
         == (has(variables.checkSpec.automountServiceAccountToken) ? variables.checkSpec.automountServiceAccountToken : true)
      && variables.hostNetwork == (has(variables.checkSpec.hostNetwork) && variables.checkSpec.hostNetwork)
      && (has(object.spec.hostPID) && object.spec.hostPID)
         == (has(variables.checkSpec.hostPID) && variables.checkSpec.hostPID)
      && (has(object.spec.hostIPC) && object.spec.hostIPC)
         == (has(variables.checkSpec.hostIPC) && variables.checkSpec.hostIPC)
      && (has(object.spec.hostUsers) ? object.spec.hostUsers : true)
         == (has(variables.checkSpec.hostUsers) ? variables.checkSpec.hostUsers : true)
      && (has(object.spec.shareProcessNamespace) && object.spec.shareProcessNamespace)
         == (has(variables.checkSpec.shareProcessNamespace) && variables.checkSpec.shareProcessNamespace)
      && (has(object.spec.nodeName) ? object.spec.nodeName : '')
         == (has(variables.checkSpec.nodeName) ? variables.checkSpec.nodeName : '')
      && (has(object.spec.runtimeClassName) ? object.spec.runtimeClassName : '')
         == (has(variables.checkSpec.runtimeClassName) ? variables.checkSpec.runtimeClassName : '')
      && !has(object.spec.ephemeralContainers)
      {{- range list "seLinuxOptions" "windowsOptions" "runAsUser" "runAsGroup" "runAsNonRoot" "supplementalGroups" "supplementalGroupsPolicy" "fsGroup" "sysctls" "fsGroupChangePolicy" "seccompProfile" "appArmorProfile" "seLinuxChangePolicy" }}
      && (has(object.spec.securityContext) && has(object.spec.securityContext.{{ . }}))
         == (has(variables.checkSpec.securityContext) && has(variables.checkSpec.securityContext.{{ . }}))
      && (!(has(object.spec.securityContext) && has(object.spec.securityContext.{{ . }}))
          || object.spec.securityContext.{{ . }} == variables.checkSpec.securityContext.{{ . }})
      {{- end }}
    )
  reason: Forbidden
  messageExpression: >-
    'a checker pod of {{ .what }} ' + params.metadata.name + ' runs its podSpec as written: the same
    ServiceAccount, host namespaces, user namespace, process namespace sharing, node, runtime class and pod
    security context'
- expression: |-
    !variables.mine || (
      true
      {{- range list "activeDeadlineSeconds" "hostname" "subdomain" "hostAliases" "dnsConfig" "os" "resourceClaims" "schedulingGates" }}
      && has(object.spec.{{ . }}) == has(variables.checkSpec.{{ . }})
      && (!has(object.spec.{{ . }}) || object.spec.{{ . }} == variables.checkSpec.{{ . }})
      {{- end }}
      {{- range list (list "terminationGracePeriodSeconds" "30") (list "dnsPolicy" "'ClusterFirst'") }}
      && (has(object.spec.{{ index . 0 }}) ? object.spec.{{ index . 0 }} : {{ index . 1 }})
         == (has(variables.checkSpec.{{ index . 0 }}) ? variables.checkSpec.{{ index . 0 }} : {{ index . 1 }})
      {{- end }}
      {{- range list "object.spec" "variables.checkSpec" }}
      {{ if eq . "object.spec" }}&& {{ else }}   == {{ end }}(has({{ . }}.tolerations) ? {{ . }}.tolerations.filter(t, !(has(t.key)
           && t.key in ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'])).map(t,
           (has(t.key) ? t.key : '') + '|' + (has(t.operator) ? t.operator : 'Equal') + '|'
           + (has(t.value) ? t.value : '') + '|' + (has(t.effect) ? t.effect : '')) : [])
      {{- end }}
    )
  reason: Forbidden
  messageExpression: >-
    'a checker pod of {{ .what }} ' + params.metadata.name + ' runs its podSpec as written: the same
    deadlines and grace period, hostname, subdomain, host aliases, DNS settings, tolerations (beyond those
    the API server adds), OS, resource claims and scheduling gates'
- expression: |-
    !variables.mine || (
      (has(object.spec.volumes) ? object.spec.volumes.filter(v,
          !(v.name.startsWith('kube-api-access-') && has(v.projected))) : []).map(v,
        {{ include "khrun.volumeKey" "v" | nindent 8 }})
      == (has(variables.checkSpec.volumes) ? variables.checkSpec.volumes : []).map(v,
        {{ include "khrun.volumeKey" "v" | nindent 8 }})
    )
  reason: Forbidden
  messageExpression: >-
    'a checker pod of {{ .what }} ' + params.metadata.name + ' runs its podSpec as written: its volumes
    (names, sources and what they point at), and a ServiceAccount token volume only'
{{- range list "containers" "initContainers" }}
- expression: |-
    !variables.mine || (
      (has(object.spec.{{ . }}) ? object.spec.{{ . }}.map(c, c.name) : [])
         == (has(variables.checkSpec.{{ . }}) ? variables.checkSpec.{{ . }}.map(c, c.name) : [])
      && (!has(object.spec.{{ . }}) || object.spec.{{ . }}.all(c, variables.checkSpec.{{ . }}.exists(t, t.name == c.name
        && {{ include "khrun.sameContainer" . | nindent 8 | trim }})))
    )
  reason: Forbidden
  messageExpression: >-
    'a checker pod of {{ $.what }} ' + params.metadata.name + ' runs its podSpec as written: its {{ . }}
    (image, command, arguments, working directory, security context, host ports, hooks and probes, mounts
    and environment)'
{{- end }}
{{- end }}
