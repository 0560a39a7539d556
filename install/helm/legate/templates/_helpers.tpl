{{/* Labels on every object; selectors use legate.selector (stable across upgrades). */}}
{{- define "legate.labels" -}}
app.kubernetes.io/name: legate
app.kubernetes.io/part-of: legate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* (dict "root" $ "component" "controller") */}}
{{- define "legate.selector" -}}
app: legate
app.kubernetes.io/name: legate
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
legate: {{ .component }}
{{- end }}

{{- define "legate.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "legate.writeNamespace" -}}
{{ .Values.settings.writeNamespace | default .Release.Namespace }}
{{- end }}

{{/* <service>.<namespace>.svc.<clusterDomain> */}}
{{- define "legate.host" -}}
{{ .name }}.{{ .root.Release.Namespace }}.svc.{{ .root.Values.clusterDomain }}
{{- end }}

{{- define "legate.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.runAsGroup }}
seccompProfile: { type: RuntimeDefault }
{{- end }}

{{- define "legate.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: { drop: [ALL] }
{{- end }}

{{/* nodeSelector, tolerations, affinity and image pull secrets of a pod; (dict "root" $ "spec" <values>) */}}
{{- define "legate.scheduling" -}}
{{- with .spec.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .spec.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .spec.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
