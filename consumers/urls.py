from django.urls import path

from .views import api, clusters, groups, home

app_name = "consumers"

urlpatterns = [
    path("", home.home, name="home"),
    path("clusters/", clusters.cluster_list, name="cluster-list"),
    path("groups/", groups.group_list, name="group-list"),
    path("groups/<slug:cluster>/<str:group>/", groups.group_detail, name="group-detail"),
    path("groups/<slug:cluster>/<str:group>/lag.json", groups.group_lag_chart, name="group-lag-json"),
    path("api/clusters/", api.clusters, name="api-clusters"),
    path("api/groups/", api.groups, name="api-groups"),
    path("api/groups/<slug:cluster>/<str:group>/", api.group, name="api-group"),
]
