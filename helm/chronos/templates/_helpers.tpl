{{- define "chronos.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "chronos.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "chronos.labels" -}}
app.kubernetes.io/name: {{ include "chronos.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "chronos.selectorLabels" -}}
app.kubernetes.io/name: {{ include "chronos.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "chronos.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "chronos.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "chronos.restUrl" -}}
{{- if .Values.target.restUrl -}}
{{- .Values.target.restUrl -}}
{{- else -}}
{{- printf "http://%s-rest:8081" .Values.target.flinkDeployment -}}
{{- end -}}
{{- end -}}

{{- define "chronos.claimName" -}}
{{- default (printf "%s-data" (include "chronos.fullname" .)) .Values.storage.persistence.existingClaim -}}
{{- end -}}

{{/* Mount the service-account token only with a Role to use it (or when told: a Role brought by you). */}}
{{- define "chronos.mountToken" -}}
{{- if or .Values.serviceAccount.automountToken (and .Values.rbac.create (include "chronos.kubernetesTargets" .)) -}}
true
{{- else -}}
false
{{- end -}}
{{- end -}}

{{/* Non-empty when the release tunes FlinkDeployments (one, a list, or the annotated ones). */}}
{{- define "chronos.kubernetesTargets" -}}
{{- if or .Values.target.flinkDeployment .Values.targets .Values.discovery.enabled -}}
yes
{{- end -}}
{{- end -}}
