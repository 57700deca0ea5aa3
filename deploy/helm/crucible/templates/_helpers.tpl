{{- define "crucible.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "crucible.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "crucible.labels" -}}
{{ include "crucible.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The headless Service whose names the replicas reach each other by. */}}
{{- define "crucible.peers" -}}
{{ include "crucible.fullname" . }}-peers
{{- end -}}

{{/* crucible.yaml: the user's config, with what the chart decides. */}}
{{- define "crucible.config" -}}
{{- $serve := dict "ops_public" true "drain_timeout" (printf "%ds" (int .Values.drainSeconds)) -}}
{{- if gt (int .Values.replicas) 1 -}}
{{- $_ := set $serve "replicas" (dict "peer" (printf "http://{name}.%s.%s.svc:%d" (include "crucible.peers" .) .Release.Namespace (int .Values.port)) "key" (dict "from" "file:/etc/crucible/replica-key/key")) -}}
{{- end -}}
{{- $chart := dict "serve" $serve -}}
{{- if .Values.cgroupDegraded -}}
{{- $_ := set $chart "sandbox" (dict "allow_degraded" (list "cgroup")) -}}
{{- end -}}
{{- $config := mustMergeOverwrite (deepCopy .Values.config) $chart -}}
{{- toYaml $config -}}
{{- end -}}
