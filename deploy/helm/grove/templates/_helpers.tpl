{{/*
Labels of every object: those deploy/k8s/base's kustomization adds (name, part-of), plus
Helm's own. tests/static/test_deploy_helm.py compares the rendered chart with
`kubectl kustomize` of the base, less Helm's labels.
*/}}
{{- define "grove.labels" -}}
app.kubernetes.io/name: grove
app.kubernetes.io/part-of: grove
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
Labels added to pod templates, whose own labels already name Grove (their selectors do).
*/}}
{{- define "grove.podLabels" -}}
app.kubernetes.io/part-of: grove
{{- end }}
