from django.apps import AppConfig


class ConsumersConfig(AppConfig):
    name = "consumers"
    verbose_name = "RocketMQ consumers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import gc

        from axes.signals import user_locked_out
        from django.conf import settings

        gc.set_threshold(*settings.GC_THRESHOLDS)  # why: dashboard/settings/core.py
        from django.contrib.auth.signals import user_logged_in

        # alerts listen to every poll; their deliveries register with the claimed jobs
        from .alerts import tasks as alerts_tasks
        from .live.signals import poll_published
        from .web import checks  # noqa: F401 (registers the system checks)

        poll_published.connect(alerts_tasks.on_poll, dispatch_uid="consumers.alerts.evaluate")
        # when each group last had a client online (the abandoned groups)
        from .lifecycle import seen

        poll_published.connect(seen.on_poll, dispatch_uid="consumers.lifecycle.seen")
        # the kinds of change register with the workflow
        from .clients import kind as verify_kind  # noqa: F401
        from .dlq import kind as redrive_kind  # noqa: F401
        from .identity import audit_lockout, reset_own_failures
        from .lifecycle import kind as lifecycle_kind  # noqa: F401
        from .resets import kind as reset_kind  # noqa: F401
        from .skips import kind as skip_kind  # noqa: F401
        from .subscriptions import kind as config_kind  # noqa: F401

        user_locked_out.connect(audit_lockout, dispatch_uid="consumers.identity.lockout.audit")
        user_logged_in.connect(reset_own_failures, dispatch_uid="consumers.identity.lockout.reset")
        # the user's saved language into the session (consumers/languages/)
        from .languages.preferences import on_login

        user_logged_in.connect(on_login, dispatch_uid="consumers.languages.login")
        # the English formats of evidence and notes, registered where each feature defines them,
        # so every process can show them translated (consumers/languages/evidence.py)
        from .alerts import conditions  # noqa: F401
        from .live import diagnostics, health, notes, selectors  # noqa: F401
        from .resets import defects, execute  # noqa: F401
        from .subscriptions import execute as config_execute  # noqa: F401
