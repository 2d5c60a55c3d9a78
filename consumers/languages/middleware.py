"""After authentication: a signed-in user's saved language wins over the browser's; the API
speaks English."""

from __future__ import annotations

from django.utils import translation

from .preferences import SESSION_KEY, is_supported, saved_language

# The API answers in English whatever the request asks for: scripts read its texts (errors,
# evidence, labels) as identifiers, and the refusals it shares with the pages are marked for
# translation (tests/support/unmarked.py)
API_PREFIX, API_LANGUAGE = "/api/", "en"


class UserLanguageMiddleware:
    """LocaleMiddleware (before it) has chosen from the language cookie, Accept-Language and
    LANGUAGE_CODE; a user who saved a language gets that one instead. The saved language is in
    the session since login (one query for sessions older than this middleware)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX):
            translation.activate(API_LANGUAGE)
            request.LANGUAGE_CODE = API_LANGUAGE
            return self.get_response(request)
        code = None
        session = getattr(request, "session", None)
        # no session cookie: nobody is signed in (probes, API tokens); the user is not looked up
        if session is not None and session.session_key is not None:
            code = session.get(SESSION_KEY)
            if code is None and request.user.is_authenticated:
                code = saved_language(request.user)
        if code and is_supported(code):
            translation.activate(code)
            request.LANGUAGE_CODE = translation.get_language()
        return self.get_response(request)
