{{/* Labels every object carries: the same two the kustomize manifests use, plus Helm's own. */}}
{{- define "fhpa.labels" -}}
app.kubernetes.io/name: federated-hpa
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The selector of one component; stable across upgrades. */}}
{{- define "fhpa.selector" -}}
app.kubernetes.io/name: federated-hpa
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "fhpa.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The restricted pod security context both Deployments use. */}}
{{- define "fhpa.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "fhpa.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{- define "fhpa.selfSigned" -}}
{{- if eq .Values.webhook.certificates.mode "selfSigned" -}}true{{- else if eq .Values.webhook.certificates.mode "certManager" -}}{{- else -}}{{- fail (printf "webhook.certificates.mode must be certManager or selfSigned, not %q" .Values.webhook.certificates.mode) -}}{{- end -}}
{{- end -}}
