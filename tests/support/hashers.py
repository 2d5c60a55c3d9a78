"""A password hasher for the test session only: Django's PBKDF2 at a thousand iterations.

Django's own takes a million, about a quarter of a second of CPU per hash here: the `personas`
fixture alone (five users, 365 tests) spent some seven minutes of the suite hashing. A hash made
here is an ordinary `pbkdf2_sha256` one with its iteration count in it, so a console running with
the production settings (gunicorn, a worker) checks it as it checks any other."""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class QuickPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
