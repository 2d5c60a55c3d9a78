"""Who the console's users are: single sign-on through an OpenID Connect provider (oidc.py), the
users and IdP groups it records (accounts.py, from the claims as claims.py reads them), and the
login and logout pages of both kinds of account (views.py)."""
