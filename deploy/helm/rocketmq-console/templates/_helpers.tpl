{{- define "console.name" -}}{{ .Release.Name }}-rocketmq-console{{- end -}}

{{- define "console.labels" -}}
app.kubernetes.io/name: rocketmq-console
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "console.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}

{{/* what every container of the console reads: the ConfigMap, the Secrets, the references */}}
{{- define "console.env" -}}
envFrom:
  - configMapRef: {name: {{ include "console.name" . }}}
  {{- if .Values.secret.create }}
  - secretRef: {name: {{ include "console.name" . }}}
  {{- end }}
  {{- range .Values.envFromSecrets }}
  - secretRef: {name: {{ . }}}
  {{- end }}
{{- with .Values.secretEnv }}
env:
  {{- range $name, $ref := . }}
  - name: {{ $name }}
    valueFrom: {secretKeyRef: {name: {{ $ref.secretName }}, key: {{ $ref.key }}}}
  {{- end }}
{{- end }}
{{- end -}}

{{/* the pod's part shared by web, worker and beat: security, volumes, scheduling */}}
{{- define "console.podSpec" -}}
securityContext: {{- toYaml .Values.securityContext | nindent 2 }}
{{- if .Values.hostNetwork }}
hostNetwork: true
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir: {}
  - name: var
    {{- if .Values.persistence.hostPath }}
    hostPath: {path: {{ .Values.persistence.hostPath }}, type: Directory}
    {{- else if .Values.persistence.enabled }}
    persistentVolumeClaim: {claimName: {{ .Values.persistence.existingClaim | default (include "console.name" .) }}}
    {{- else }}
    emptyDir: {}
    {{- end }}
{{- with .Values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* a console container's fixed part: its settings, security and the two writable mounts */}}
{{- define "console.container" -}}
securityContext: {{- toYaml .Values.containerSecurityContext | nindent 2 }}
{{ include "console.env" . }}
volumeMounts:
  - {name: tmp, mountPath: /tmp}
  - {name: var, mountPath: /var/lib/rocketmq-console}
{{- end -}}
