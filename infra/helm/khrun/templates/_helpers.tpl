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

{{/* CEL: the request comes from a runner: a khrun-runner ServiceAccount of any namespace (sync's CronJobs
run as the khrun-runner of their khcheck's namespace), khrun-server (which runs checks when it takes
triggers and is given the runner's rights), or the group kh-runner (the Lambda runCheck role's, README
"On AWS Lambda"). */}}
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

{{/* CEL validations: the pod spec variables.pod is the khrun-runner PodTemplate's (variables.template) as
the tick and sync copy it (lib/schedule/run-job.ts): the same containers with CHECK_NAME (a khjob's:
KHJOB_NAME, a HealthCheck's: HEALTHCHECK_NAME) and CHECK_NAMESPACE added to the environment, or a batch's
KHRUN_BATCH (the khchecks it runs; lib/schedule/batch-job.ts) instead, run as khrun-runner. Anything else would run the runner's image as another identity, or another program as the
runner. */}}
{{- define "khrun.runsRunnerTemplate" -}}
- expression: |-
    variables.pod.containers.map(c, c.name) == variables.template.containers.map(c, c.name)
    && variables.pod.containers.map(c, c.image) == variables.template.containers.map(c, c.image)
    && variables.pod.containers.all(c, variables.template.containers.exists(t, t.name == c.name
         && (has(c.command) ? c.command : []) == (has(t.command) ? t.command : [])
         && (has(c.args) ? c.args : []) == (has(t.args) ? t.args : [])
         && (has(c.envFrom) ? c.envFrom : []) == (has(t.envFrom) ? t.envFrom : [])
         && (has(c.volumeMounts) ? c.volumeMounts : []) == (has(t.volumeMounts) ? t.volumeMounts : [])
         && has(c.securityContext) == has(t.securityContext)
         && (!has(c.securityContext) || c.securityContext == t.securityContext)
         && (has(c.env) ? c.env.filter(e, !(e.name in ['CHECK_NAME', 'KHJOB_NAME', 'HEALTHCHECK_NAME', 'CHECK_NAMESPACE', 'KHRUN_BATCH'])) : [])
            == (has(t.env) ? t.env.filter(e, !(e.name in ['CHECK_NAME', 'KHJOB_NAME', 'HEALTHCHECK_NAME', 'CHECK_NAMESPACE', 'KHRUN_BATCH'])) : [])))
  reason: Forbidden
  message: >-
    the runner's containers are the khrun-runner PodTemplate's (images, commands, arguments, environment,
    mounts, security contexts); only CHECK_NAME (KHJOB_NAME, HEALTHCHECK_NAME) and CHECK_NAMESPACE, or
    KHRUN_BATCH, are added
- expression: |-
    (has(variables.pod.initContainers) ? variables.pod.initContainers : [])
      == (has(variables.template.initContainers) ? variables.template.initContainers : [])
    && (has(variables.pod.volumes) ? variables.pod.volumes : [])
      == (has(variables.template.volumes) ? variables.template.volumes : [])
    && (has(variables.pod.hostNetwork) && variables.pod.hostNetwork)
      == (has(variables.template.hostNetwork) && variables.template.hostNetwork)
    && (has(variables.pod.hostPID) && variables.pod.hostPID)
      == (has(variables.template.hostPID) && variables.template.hostPID)
    && (has(variables.pod.hostIPC) && variables.pod.hostIPC)
      == (has(variables.template.hostIPC) && variables.template.hostIPC)
    && has(variables.pod.securityContext) == has(variables.template.securityContext)
    && (!has(variables.pod.securityContext) || variables.pod.securityContext == variables.template.securityContext)
  reason: Forbidden
  message: >-
    the runner's pod is the khrun-runner PodTemplate's: the same init containers, volumes, host namespaces
    and pod security context
{{- end }}

{{/* CEL validation of policies 2 and 2b (admission.yaml): a checker pod runs the podSpec of the object
(params, one per object of the namespace) its kuberhealthy-check-name label names, owned by it (uid). The
context is a dict: kind (KuberhealthyCheck, KuberhealthyJob) and what (khcheck, khjob), for the message. */}}
{{- define "khrun.runsItsPodSpec" -}}
- expression: |-
    params.metadata.name != variables.check || (
      object.metadata.ownerReferences.exists(o, o.kind == '{{ .kind }}' && o.uid == params.metadata.uid)
      && variables.serviceAccount == (
           has(variables.checkSpec.serviceAccountName) && variables.checkSpec.serviceAccountName != ''
           ? variables.checkSpec.serviceAccountName
           : has(variables.checkSpec.serviceAccount) && variables.checkSpec.serviceAccount != ''
           ? variables.checkSpec.serviceAccount : 'default')
      && object.spec.containers.map(c, c.image)
         == variables.checkSpec.containers.map(c, has(c.image) ? c.image : '')
      && (has(object.spec.initContainers) ? object.spec.initContainers.map(c, c.image) : [])
         == (has(variables.checkSpec.initContainers)
             ? variables.checkSpec.initContainers.map(c, has(c.image) ? c.image : '') : [])
      && (has(object.spec.hostNetwork) && object.spec.hostNetwork)
         == (has(variables.checkSpec.hostNetwork) && variables.checkSpec.hostNetwork)
      && (has(object.spec.hostPID) && object.spec.hostPID)
         == (has(variables.checkSpec.hostPID) && variables.checkSpec.hostPID)
      && (has(object.spec.hostIPC) && object.spec.hostIPC)
         == (has(variables.checkSpec.hostIPC) && variables.checkSpec.hostIPC)
      && object.spec.containers.all(c,
           !(has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged)
           || variables.checkSpec.containers.exists(k, k.name == c.name && has(k.securityContext)
                && has(k.securityContext.privileged) && k.securityContext.privileged))
      && (!has(object.spec.initContainers) || object.spec.initContainers.all(c,
           !(has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged)
           || (has(variables.checkSpec.initContainers) && variables.checkSpec.initContainers.exists(k,
                k.name == c.name && has(k.securityContext) && has(k.securityContext.privileged)
                && k.securityContext.privileged))))
      && (!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath)
           || (has(variables.checkSpec.volumes) && variables.checkSpec.volumes.exists(k,
                k.name == v.name && has(k.hostPath) && k.hostPath.path == v.hostPath.path))))
    )
  reason: Forbidden
  messageExpression: >-
    'a checker pod of {{ .what }} ' + variables.check + ' runs its podSpec as written: the same
    serviceAccountName, images, host namespaces, privileged containers and hostPath volumes, owned by
    that {{ .what }} (uid)'
{{- end }}
