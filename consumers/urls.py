"""Every URL of the console, grouped by feature; each points at a thin view in its package."""

from django.urls import path

from . import identity
from .alerts import views as alerts
from .changes import api as changes_api
from .changes import views as changes
from .clients import api as clients_api
from .clients import views as clients
from .dlq import api as dlq_api
from .dlq import views as dlq
from .lifecycle import views as lifecycle
from .live import api as live_api
from .live import views as live
from .messages import api as messages_api
from .messages import views as messages
from .metrics import views as metrics
from .reports import views as reports
from .resets import api as resets_api
from .resets import views as resets
from .skips import views as skips
from .stats import views as stats
from .subscriptions import views as subscriptions

app_name = "consumers"
# where a message is: what the message pages and their API are addressed by
MESSAGE = "<slug:cluster>/<str:topic>/<str:broker>/<int:queue_id>/<int:offset>"
POSITION = "<str:topic>/<str:broker>/<int:queue_id>/<int:offset>"  # a queue offset in a group's cluster

urlpatterns = [
    path("", live.home, name="home"),
    path("clusters/", live.cluster_list, name="cluster-list"),
    path("groups/", live.group_list, name="group-list"),
    path("groups/abandoned/", lifecycle.abandoned_page, name="abandoned-groups"),
    path("groups/<slug:cluster>/<str:group>/delete/", lifecycle.delete_page, name="group-delete"),
    path("groups/<slug:cluster>/<str:group>/delete/request/", lifecycle.delete_create, name="group-delete-create"),
    path("groups/<slug:cluster>/<str:group>/", live.group_detail, name="group-detail"),
    path("groups/<slug:cluster>/<str:group>/lag.json", live.group_lag_chart, name="group-lag-json"),
    path(
        "groups/<slug:cluster>/<str:group>/allocation.json", live.group_allocation_chart, name="group-allocation-json"
    ),
    path("groups/<slug:cluster>/<str:group>/reset/", resets.reset_form, name="reset-form"),
    path("groups/<slug:cluster>/<str:group>/reset/preview/", resets.reset_preview, name="reset-preview"),
    path("groups/<slug:cluster>/<str:group>/reset/request/", resets.reset_create, name="reset-create"),
    path(f"groups/<slug:cluster>/<str:group>/skip/{POSITION}/", skips.skip_form, name="skip-form"),
    path(f"groups/<slug:cluster>/<str:group>/skip/{POSITION}/request/", skips.skip_create, name="skip-create"),
    path("groups/<slug:cluster>/<str:group>/config/", subscriptions.config_page, name="config-page"),
    path("groups/<slug:cluster>/<str:group>/config/mode/", subscriptions.mode_create, name="mode-create"),
    path("groups/<slug:cluster>/<str:group>/clients/", clients.group_clients, name="group-clients"),
    path("groups/<slug:cluster>/<str:group>/clients/stacks/", clients.capture_stacks, name="capture-stacks"),
    path("groups/<slug:cluster>/<str:group>/clients/<str:client_id>/", clients.client_detail, name="client-detail"),
    path(
        "groups/<slug:cluster>/<str:group>/clients/<str:client_id>/stacks/",
        clients.capture_client_stacks,
        name="capture-client-stacks",
    ),  # fmt: skip
    path("groups/<slug:cluster>/<str:group>/config/request/", subscriptions.config_create, name="config-create"),
    path("changes/", changes.change_list, name="change-list"),
    path("changes/<int:pk>/", changes.change_detail, name="change-detail"),
    path("changes/<int:pk>/decide/", changes.change_action, name="change-action"),
    path("audit/", changes.audit_log, name="audit-log"),
    path("dlq/", dlq.overview, name="dlq-overview"),
    path("dlq/jobs/<int:pk>/", dlq.job_page, name="dlq-job"),
    path("dlq/jobs/<int:pk>/came-back/", dlq.job_came_back, name="dlq-job-came-back"),
    path("dlq/jobs/<int:pk>/<slug:action>/", dlq.job_action, name="dlq-job-action"),
    path("dlq/<slug:cluster>/<str:group>/", dlq.group_dlq, name="dlq-group"),
    path("dlq/<slug:cluster>/<str:group>/redrive/", dlq.start_redrive, name="dlq-redrive"),
    path("dlq/<slug:cluster>/<str:group>/make-readable/", dlq.make_readable, name="dlq-make-readable"),
    path("dlq/<slug:cluster>/<str:group>/export.<str:fmt>", dlq.export, name="dlq-export"),
    path("dlq/<slug:cluster>/<str:group>/<str:broker>/<int:queue_id>/<int:offset>/", dlq.message, name="dlq-message"),
    path("messages/", messages.find_messages, name="message-find"),
    path(f"messages/{MESSAGE}/", messages.message_detail, name="message-detail"),
    path(f"messages/{MESSAGE}/track/", messages.message_track, name="message-track"),
    path(f"messages/{MESSAGE}/verify/", clients.verify_form, name="message-verify"),
    path(f"messages/{MESSAGE}/verify/request/", clients.verify_create, name="message-verify-create"),
    path("stats/", stats.overview, name="stats"),
    path("stats/jobs/", stats.jobs, name="stats-jobs"),
    path("stats/jobs/run/", stats.start_run, name="stats-run"),
    path("stats/jobs/<int:pk>/log/", stats.job_log, name="stats-job-log"),
    path("stats/<slug:cluster>/charts.json", stats.cluster_charts, name="stats-cluster-charts"),
    path("stats/<slug:cluster>/<str:group>/charts.json", stats.group_charts, name="stats-group-charts"),
    path("reports/", reports.index, name="reports"),
    path("reports/new/", reports.create, name="report-create"),
    path("reports/now.<str:fmt>", reports.report_now, name="report-now"),
    path("reports/<int:pk>/row/", reports.report_row, name="report-row"),
    path("reports/<int:pk>/download.<str:fmt>", reports.download, name="report-download"),
    path("alerts/", alerts.index, name="alerts"),
    path("alerts/<int:pk>/acknowledge/", alerts.acknowledge, name="alert-acknowledge"),
    path("alerts/silences/new/", alerts.silence_create, name="silence-create"),
    path("alerts/silences/<int:pk>/end/", alerts.silence_end, name="silence-end"),
    path("account/tokens/", identity.token_list, name="tokens"),
    path("account/tokens/new/", identity.token_create, name="token-create"),
    path("account/tokens/<int:pk>/revoke/", identity.token_revoke, name="token-revoke"),
    # the identity provider's server posts logout tokens here (OpenID Connect back-channel logout)
    path("oidc/backchannel-logout/", identity.backchannel_logout, name="oidc-backchannel-logout"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/clusters/", live_api.clusters, name="api-clusters"),
    path("api/groups/", live_api.groups, name="api-groups"),
    path("api/groups/abandoned/", lifecycle.abandoned_api, name="api-abandoned-groups"),
    path("api/groups/<slug:cluster>/<str:group>/", live_api.group, name="api-group"),
    path("api/groups/<slug:cluster>/<str:group>/config/", subscriptions.config_api, name="api-group-config"),
    path("api/groups/<slug:cluster>/<str:group>/clients/", clients_api.group_clients, name="api-group-clients"),
    path("api/groups/<slug:cluster>/<str:group>/allocation/", live_api.allocation, name="api-group-allocation"),
    path("api/groups/<slug:cluster>/<str:group>/reset/preview/", resets_api.reset_preview, name="api-reset-preview"),
    path("api/alerts/", alerts.api_alerts, name="api-alerts"),
    path("api/dlq/jobs/<int:pk>/", dlq_api.job, name="api-dlq-job"),
    path("api/dlq/jobs/<int:pk>/<slug:action>/", dlq_api.job_action, name="api-dlq-job-action"),
    path("api/dlq/<slug:cluster>/<str:group>/messages/", dlq_api.messages, name="api-dlq-messages"),
    path("api/dlq/<slug:cluster>/<str:group>/redrive/", dlq_api.start, name="api-dlq-redrive"),
    path("api/messages/", messages_api.find, name="api-message-find"),
    path(f"api/messages/{MESSAGE}/", messages_api.message, name="api-message"),
    path(f"api/messages/{MESSAGE}/track/", messages_api.track, name="api-message-track"),
    path("api/changes/", changes_api.changes, name="api-changes"),
    path("api/changes/<int:pk>/", changes_api.change, name="api-change"),
    path("api/changes/<int:pk>/<slug:action>/", changes_api.change_action, name="api-change-action"),
]
