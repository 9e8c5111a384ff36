{{/* Chart name, overridable. */}}
{{- define "forescale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: <release>-<chart>, or the release name when it already holds the chart name. */}}
{{- define "forescale.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Common labels (app.kubernetes.io/*). */}}
{{- define "forescale.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "forescale.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: forescale
{{- end }}

{{/* Selector labels: stable across upgrades. */}}
{{- define "forescale.selectorLabels" -}}
app.kubernetes.io/name: {{ include "forescale.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* ServiceAccount name. */}}
{{- define "forescale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "forescale.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image reference: the digest wins over the tag; the tag defaults to appVersion. */}}
{{- define "forescale.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret the chart makes for the admin token, when operator.adminTokenSecret names none and create is on. */}}
{{- define "forescale.adminTokenCreated" -}}
{{- if and (not .Values.operator.adminTokenSecret.name) .Values.operator.adminTokenSecret.create }}
{{- printf "%s-admin-token" (include "forescale.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The admin-token Secret's name the operator uses: the user's, the chart's own, or empty (admin calls off). */}}
{{- define "forescale.adminTokenSecret" -}}
{{- default (include "forescale.adminTokenCreated" .) .Values.operator.adminTokenSecret.name }}
{{- end }}

{{/* True ("true") when the operator watches every namespace. */}}
{{- define "forescale.clusterWide" -}}
{{- if not .Values.operator.namespaces }}true{{- end }}
{{- end }}

{{/* Settings that cannot be expressed in values.schema.json; fail with a clear message. */}}
{{- define "forescale.validate" -}}
{{- if and (gt (int .Values.operator.replicas) 1) (not .Values.operator.peering.enabled) }}
{{- fail (printf "operator.replicas is %d but operator.peering.enabled is false: several replicas without kopf peering would all act at once; enable peering or set replicas to 1" (int .Values.operator.replicas)) }}
{{- end }}
{{- if eq (int .Values.operator.metricsPort) (int .Values.operator.healthPort) }}
{{- fail (printf "operator.metricsPort and operator.healthPort are both %d: they must differ" (int .Values.operator.metricsPort)) }}
{{- end }}
{{- /* the chart passes -n per namespace: an -A beside them stops the operator at start-up */}}
{{- if .Values.operator.namespaces }}
{{- range .Values.operator.extraArgs }}
{{- if has . (list "-A" "--all-namespaces") }}
{{- fail (printf "operator.extraArgs has %s but operator.namespaces is set: the operator takes either; leave operator.namespaces empty to watch every namespace" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* a second entry of a variable the chart sets would leave which one wins to the order of the list */}}
{{- $set := list "FORESCALE_PROMETHEUS_URL" "FORESCALE_NAMESPACES" "FORESCALE_LOG_LEVEL" "FORESCALE_ADMIN_TOKEN_SECRET" "FORESCALE_ADMIN_TOKEN_COPY_FROM" "FORESCALE_METRICS_PORT" "FORESCALE_HEALTH_PORT" "FORESCALE_PEERING" "POD_NAME" }}
{{- range .Values.operator.extraEnv }}
{{- if has .name $set }}
{{- fail (printf "operator.extraEnv sets %s, which the chart sets from its own value: use that value instead (docs/install.md)" .name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<fullname>-<suffix>" within the 63 characters of a Service name: the fullname is cut to make room. */}}
{{- define "forescale.suffixedName" -}}
{{- $suffix := .suffix }}
{{- printf "%s-%s" (include "forescale.fullname" .root | trunc (int (sub 62 (len $suffix))) | trimSuffix "-") $suffix }}
{{- end }}

{{/* A Prometheus duration such as 90s, 15m or 2h, in seconds (values.schema.json admits only these forms). */}}
{{- define "forescale.seconds" -}}
{{- $n := regexFind "^[0-9]+" . | int }}
{{- $unit := regexFind "[smh]$" . }}
{{- if eq $unit "h" }}{{ mul $n 3600 }}{{ else if eq $unit "m" }}{{ mul $n 60 }}{{ else }}{{ $n }}{{ end }}
{{- end }}
