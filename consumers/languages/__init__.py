"""The console's languages: English and Simplified Chinese (settings.LANGUAGES).

A signed-in user's language is the one saved on the user (LanguagePreference, chosen with the
switch in the header); without one, the browser's Accept-Language decides (LocaleMiddleware),
then LANGUAGE_CODE.

Written outside a page: e-mails (alerts, change requests, scheduled reports) reach each
recipient in the saved language of the user with that address, else LANGUAGE_CODE
(preferences.language_for_address), one message per language (preferences.by_language); Slack
and Alertmanager texts, with no reader known, are in LANGUAGE_CODE. A lag report is written in
the language its maker reads the console in; a scheduled one in its recipients' language when
they share one, else LANGUAGE_CODE (reports/services.py). Dates: English keeps ISO 8601
(formats/en), Chinese takes Django's formats. The API answers in English
(middleware.py)."""
