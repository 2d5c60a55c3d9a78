"""Who the console's users are and what each may see and do: single sign-on through an OpenID
Connect provider (oidc.py), the users and IdP groups it records (accounts.py, from the claims as
claims.py reads them), the login and logout pages (views.py), and grants: roles on clusters and
group patterns (models.Grant, read per request by grants.py into a scope.Scope that every view
and service asks)."""
