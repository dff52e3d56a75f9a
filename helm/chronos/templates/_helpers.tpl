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

{{/* The existing Secrets a secured cluster's credentials come from, as volumes (name, secret, items): each mounted
read-only at /etc/chronos-secrets/<name>/ under the file names chronos is pointed at. */}}
{{- define "chronos.secretVolumes" -}}
{{- $volumes := list -}}
{{- with .Values.security.kafka -}}
{{- if and .protocol (hasPrefix "SASL_" .protocol) -}}
{{- if not .passwordSecret.name -}}
{{- fail "security.kafka.protocol SASL_* needs security.kafka.passwordSecret.name: the Secret holding the password" -}}
{{- end -}}
{{- $volumes = append $volumes (dict "name" "kafka-password" "secret" .passwordSecret.name "items" (list (dict "key" .passwordSecret.key "path" "password"))) -}}
{{- end -}}
{{- if and .protocol .caSecret.name -}}
{{- $volumes = append $volumes (dict "name" "kafka-ca" "secret" .caSecret.name "items" (list (dict "key" .caSecret.key "path" "ca.pem"))) -}}
{{- end -}}
{{- if and .protocol .clientCertSecret.name -}}
{{- $volumes = append $volumes (dict "name" "kafka-client" "secret" .clientCertSecret.name "items" (list (dict "key" .clientCertSecret.certKey "path" "tls.crt") (dict "key" .clientCertSecret.keyKey "path" "tls.key"))) -}}
{{- end -}}
{{- end -}}
{{- with .Values.security.rest -}}
{{- if .caSecret.name -}}
{{- $volumes = append $volumes (dict "name" "rest-ca" "secret" .caSecret.name "items" (list (dict "key" .caSecret.key "path" "ca.pem"))) -}}
{{- end -}}
{{- if .clientCertSecret.name -}}
{{- $volumes = append $volumes (dict "name" "rest-client" "secret" .clientCertSecret.name "items" (list (dict "key" .clientCertSecret.certKey "path" "tls.crt") (dict "key" .clientCertSecret.keyKey "path" "tls.key"))) -}}
{{- end -}}
{{- if .authScheme -}}
{{- if not .authSecret.name -}}
{{- fail "security.rest.authScheme needs security.rest.authSecret.name: the Secret holding the token (or user:password)" -}}
{{- end -}}
{{- $volumes = append $volumes (dict "name" "rest-auth" "secret" .authSecret.name "items" (list (dict "key" .authSecret.key "path" "secret"))) -}}
{{- end -}}
{{- end -}}
{{- toYaml $volumes -}}
{{- end -}}

{{/*
The tuner's image: repository:tag (the tag defaults to the chart's appVersion, which scripts/build_image.sh tags
the image it builds with), and @digest when one is given: the registry then serves exactly that image.
*/}}
{{- define "chronos.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- if .Values.image.digest -}}
{{- $ref = printf "%s@%s" $ref .Values.image.digest -}}
{{- end -}}
{{- $ref -}}
{{- end -}}
