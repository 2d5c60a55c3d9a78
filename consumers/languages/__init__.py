"""The console's languages: English and Simplified Chinese (settings.LANGUAGES).

A signed-in user's language is the one saved on the user (LanguagePreference, chosen with the
switch in the header); without one, the browser's Accept-Language decides (LocaleMiddleware),
then LANGUAGE_CODE. Alert notifications use the recipient's saved language where the recipient
is a user, else LANGUAGE_CODE (preferences.language_for_address). The API answers in English
(middleware.py)."""
