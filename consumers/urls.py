"""Every URL of the console, grouped by feature; each points at a thin view in its package."""

from django.urls import path

from .live import api as live_api
from .live import views as live

app_name = "consumers"

urlpatterns = [
    path("", live.home, name="home"),
    path("clusters/", live.cluster_list, name="cluster-list"),
    path("groups/", live.group_list, name="group-list"),
    path("groups/<slug:cluster>/<str:group>/", live.group_detail, name="group-detail"),
    path("groups/<slug:cluster>/<str:group>/lag.json", live.group_lag_chart, name="group-lag-json"),
    path("api/clusters/", live_api.clusters, name="api-clusters"),
    path("api/groups/", live_api.groups, name="api-groups"),
    path("api/groups/<slug:cluster>/<str:group>/", live_api.group, name="api-group"),
]
