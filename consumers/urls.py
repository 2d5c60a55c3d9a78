"""Every URL of the console, grouped by feature; each points at a thin view in its package."""

from django.urls import path

from .changes import api as changes_api
from .changes import views as changes
from .live import api as live_api
from .live import views as live
from .resets import views as resets

app_name = "consumers"

urlpatterns = [
    path("", live.home, name="home"),
    path("clusters/", live.cluster_list, name="cluster-list"),
    path("groups/", live.group_list, name="group-list"),
    path("groups/<slug:cluster>/<str:group>/", live.group_detail, name="group-detail"),
    path("groups/<slug:cluster>/<str:group>/lag.json", live.group_lag_chart, name="group-lag-json"),
    path("groups/<slug:cluster>/<str:group>/reset/", resets.reset_form, name="reset-form"),
    path("groups/<slug:cluster>/<str:group>/reset/preview/", resets.reset_preview, name="reset-preview"),
    path("groups/<slug:cluster>/<str:group>/reset/request/", resets.reset_create, name="reset-create"),
    path("changes/", changes.change_list, name="change-list"),
    path("changes/<int:pk>/", changes.change_detail, name="change-detail"),
    path("changes/<int:pk>/decide/", changes.change_action, name="change-action"),
    path("audit/", changes.audit_log, name="audit-log"),
    path("api/clusters/", live_api.clusters, name="api-clusters"),
    path("api/groups/", live_api.groups, name="api-groups"),
    path("api/groups/<slug:cluster>/<str:group>/", live_api.group, name="api-group"),
    path("api/changes/", changes_api.changes, name="api-changes"),
    path("api/changes/<int:pk>/", changes_api.change, name="api-change"),
    path("api/changes/<int:pk>/<slug:action>/", changes_api.change_action, name="api-change-action"),
]
