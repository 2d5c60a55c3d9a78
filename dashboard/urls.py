from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from consumers import identity
from consumers.languages import views as languages
from consumers.live import probes


@login_not_required
def favicon(request):
    return HttpResponsePermanentRedirect(static("img/favicon.svg"))


urlpatterns = [
    path("login/", identity.LoginView.as_view(), name="login"),
    path("logout/", identity.logout, name="logout"),
    # single sign-on (OIDC_ISSUER): to the identity provider and back (consumers/identity/)
    path("oidc/login/", identity.start_sign_in, name="oidc-login"),
    path("oidc/callback/", identity.sign_in_callback, name="oidc-callback"),
    path("admin/login/", identity.admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    # probes for load balancers and orchestrators: no login, no names (consumers/live/probes.py)
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    # the language switch of the header (saved on the user), and the translations of static/js/
    path("language/", languages.set_language, name="set-language"),
    path("jsi18n/", JavaScriptCatalog.as_view(packages=["consumers"]), name="javascript-catalog"),
    # what a browser or a bookmark asks for without reading the page's <link rel="icon">
    path("favicon.ico", favicon, name="favicon"),
    path("", include("consumers.urls")),
]

# JSON errors under /api/, the usual pages elsewhere
handler400 = "consumers.web.errors.handle_400"
handler403 = "consumers.web.errors.handle_403"
handler404 = "consumers.web.errors.handle_404"
handler500 = "consumers.web.errors.handle_500"
