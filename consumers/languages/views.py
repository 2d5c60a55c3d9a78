"""The language switch of the header."""

from __future__ import annotations

from django.http import HttpResponseBadRequest, HttpResponseRedirect
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from .preferences import SESSION_KEY, is_supported, save_language


@require_POST
def set_language(request):
    """Saves the chosen language on the user (every later session and browser uses it) and
    returns to the page the switch was on."""
    code = request.POST.get("language", "")
    if not is_supported(code):
        return HttpResponseBadRequest(_("Unknown language."), content_type="text/plain; charset=utf-8")
    save_language(request.user, code)
    request.session[SESSION_KEY] = code
    translation.activate(code)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = "/"
    return HttpResponseRedirect(back)
