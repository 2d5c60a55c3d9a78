from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from consumers import probes

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # probes for load balancers and orchestrators: no login, no names (consumers/probes.py)
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    path("", include("consumers.urls")),
]

# JSON errors under /api/, the usual pages elsewhere
handler400 = "consumers.access.handle_400"
handler403 = "consumers.access.handle_403"
handler404 = "consumers.access.handle_404"
handler500 = "consumers.access.handle_500"
