{{/* Names, labels and the values several templates share. */}}

{{- define "mcpgw.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mcpgw.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "mcpgw.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "mcpgw.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mcpgw.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpgw.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "mcpgw.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "mcpgw.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "mcpgw.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpgw.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: trial-redis
{{- end -}}

{{/* The gateway image: repository:tag or repository@digest; the stdio variant's tag ends in -stdio. */}}
{{- define "mcpgw.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- $tag := default .Chart.AppVersion $img.tag -}}
{{- if and (eq $img.variant "stdio") (not (hasSuffix "-stdio" $tag)) -}}
{{- $tag = printf "%s-stdio" $tag -}}
{{- end -}}
{{- printf "%s:%s" $img.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Whether a store shared by every replica is configured. */}}
{{- define "mcpgw.sharedStore" -}}
{{- if or .Values.redis.trial.enabled .Values.redis.external.existingSecret -}}true{{- end -}}
{{- end -}}

{{/*
The config file: .Values.config.gateway, with allowed_hosts filled in when
it is not set: the Service's names, localhost and 127.0.0.1 (kubectl
port-forward), and the Ingress and HTTPRoute host names.
*/}}
{{- define "mcpgw.config" -}}
{{- $cfg := deepCopy .Values.config.gateway -}}
{{- if not (hasKey $cfg "allowed_hosts") -}}
{{- $svc := include "mcpgw.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) "localhost" "127.0.0.1" -}}
{{- if .Values.ingress.enabled -}}
{{- range .Values.ingress.hosts -}}
{{- $hosts = append $hosts .host -}}
{{- end -}}
{{- end -}}
{{- if .Values.httpRoute.enabled -}}
{{- range .Values.httpRoute.hostnames -}}
{{- $hosts = append $hosts . -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "allowed_hosts" (uniq $hosts) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* Checks across values that the schema cannot express. */}}
{{- define "mcpgw.validate" -}}
{{- if and (not (include "mcpgw.sharedStore" .)) (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) -}}
{{- fail "more than one replica (replicaCount > 1 or autoscaling.enabled) needs a store they share: set redis.external.existingSecret (production) or redis.trial.enabled=true (a trial), or replicaCount=1" -}}
{{- end -}}
{{- if and .Values.redis.trial.enabled .Values.redis.external.existingSecret -}}
{{- fail "redis.trial.enabled and redis.external.existingSecret are both set: pick one store" -}}
{{- end -}}
{{- if eq (int .Values.admin.port) (int .Values.service.targetPort) -}}
{{- fail "admin.port must differ from service.targetPort: the admin listener's paths must not be on the MCP port" -}}
{{- end -}}
{{- end -}}
