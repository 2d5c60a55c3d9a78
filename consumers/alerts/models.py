"""Alert rules, channels, alerts (one per incident of a rule on a group, broker or cluster),
their deliveries (one per alert, channel and event) and silences."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from ..live.health import SEVERITY

# the states whose alert may capture the group's thread stacks as it fires (capture_stacks)
STUCK = {"STALLED", "FALLING_BEHIND"}


class Channel(models.Model):
    class Kind(models.TextChoices):
        WEBHOOK = "webhook", _("webhook (JSON, HMAC-SHA256 signed)")
        SLACK = "slack", _("Slack-compatible incoming webhook")
        EMAIL = "email", _("e-mail")
        ALERTMANAGER = "alertmanager", _("Prometheus Alertmanager")

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    url = models.URLField(blank=True, help_text=_("webhook, Slack: the URL posted to; Alertmanager: its base URL"))
    recipients = models.CharField(max_length=500, blank=True, help_text=_("e-mail: addresses, separated by commas"))
    # webhook: the HMAC key of the X-Console-Signature header; never shown after saving
    secret = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        app_label = "consumers"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    def clean(self) -> None:
        if self.kind == self.Kind.EMAIL and not self.recipient_list():
            raise ValidationError({"recipients": _("An e-mail channel needs at least one address.")})
        if self.kind != self.Kind.EMAIL and not self.url:
            raise ValidationError({"url": _("This kind of channel posts to a URL.")})

    def recipient_list(self) -> list[str]:
        return [a.strip() for a in self.recipients.split(",") if a.strip()]


class AlertRule(models.Model):
    class Condition(models.TextChoices):
        STATE = "state", _("a group enters one of the health states")
        LAG_SECONDS = "lag_seconds", _("a group's lag in seconds is above the threshold")
        DLQ_RATE = "dlq_rate", _("dead letters arrive faster than the threshold per hour")
        DRAIN_SECONDS = (
            "drain_seconds",
            _("a group will take longer than the threshold (s) to drain, or does not drain"),
        )
        NOT_DRAINING = "not_draining", _("a group's lag does not shrink at the current rates")
        CLUSTER_DEGRADED = "cluster_degraded", _("a cluster's poll is degraded or failed")
        BROKER_MISSING = "broker_missing", _("a broker is missing or not answering")
        ABANDONED = "abandoned", _("a group has had no client online for at least the threshold in days")

    class Severity(models.TextChoices):
        CRITICAL = "critical"
        WARNING = "warning"
        INFO = "info"

    GROUP_CONDITIONS = (
        Condition.STATE, Condition.LAG_SECONDS, Condition.DLQ_RATE, Condition.DRAIN_SECONDS, Condition.NOT_DRAINING,
        Condition.ABANDONED,
    )  # fmt: skip

    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)
    condition = models.CharField(max_length=20, choices=Condition.choices)
    states = models.JSONField(default=list, blank=True, help_text=_("state rules: health states, e.g. STOPPED"))
    threshold = models.FloatField(
        null=True, blank=True, help_text=_("lag seconds, dead letters per hour, drain seconds, or days abandoned")
    )
    for_seconds = models.PositiveIntegerField(
        default=0, help_text=_("the condition must hold this long before the alert fires (against flapping)")
    )
    keep_firing_seconds = models.PositiveIntegerField(
        default=0,
        help_text=_("a firing alert resolves once its condition has been known clear this long (against flapping)"),
    )
    clusters = models.ManyToManyField("consumers.Cluster", blank=True, help_text=_("none: every cluster"))
    group_pattern = models.CharField(max_length=200, default="*", help_text=_("group names, shell-style (orders-*)"))
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.WARNING)
    channels = models.ManyToManyField(Channel, blank=True, related_name="rules")
    capture_stacks = models.BooleanField(
        default=False,
        help_text=_("state rules on STALLED or FALLING_BEHIND: also capture the group's clients' thread stacks "
                    "when the alert fires (at most one capture per group every 10 s)"),
    )  # fmt: skip

    class Meta:
        app_label = "consumers"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.condition == self.Condition.STATE:
            unknown = [s for s in self.states or [] if s not in SEVERITY]
            if not self.states or unknown or not isinstance(self.states, list):
                states = ", ".join(SEVERITY)
                raise ValidationError({"states": _("Give a list of states among %(states)s.") % {"states": states}})
        needs = (
            self.Condition.LAG_SECONDS,
            self.Condition.DLQ_RATE,
            self.Condition.DRAIN_SECONDS,
            self.Condition.ABANDONED,
        )
        if self.condition in needs and (self.threshold is None or self.threshold < 0):
            raise ValidationError({"threshold": _("This condition needs a threshold of 0 or more.")})
        if self.capture_stacks and not (self.condition == self.Condition.STATE and set(self.states or []) & STUCK):
            raise ValidationError(
                {"capture_stacks": _("Only a state rule on STALLED or FALLING_BEHIND captures stacks.")}
            )


class Silence(models.Model):
    """No notification for alerts it matches while it lasts; they still show, marked silenced."""

    rule = models.ForeignKey(
        AlertRule, null=True, blank=True, on_delete=models.CASCADE, help_text=_("none: every rule")
    )
    cluster = models.ForeignKey("consumers.Cluster", null=True, blank=True, on_delete=models.CASCADE)
    subject_pattern = models.CharField(max_length=200, default="*", help_text=_("group or broker names, shell-style"))
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    reason = models.CharField(max_length=500)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    ended_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        app_label = "consumers"
        ordering = ["-ends_at"]

    def __str__(self) -> str:
        return f"silence of {self.rule or 'every rule'} on {self.cluster or 'every cluster'} {self.subject_pattern}"


class Alert(models.Model):
    class State(models.TextChoices):
        PENDING = "pending"  # the condition holds, not yet for the rule's for_seconds
        FIRING = "firing"
        RESOLVED = "resolved"
        CLEARED = "cleared"  # held for less than for_seconds: never notified

    OPEN = (State.PENDING, State.FIRING)

    # a rule with alerts is disabled, not deleted: its receivers must hear its alerts end
    rule = models.ForeignKey(AlertRule, on_delete=models.PROTECT, related_name="alerts")
    cluster = models.ForeignKey("consumers.Cluster", on_delete=models.CASCADE, related_name="alerts")
    scope = models.CharField(max_length=8)  # group, broker, cluster
    subject = models.CharField(max_length=255, blank=True)  # the group or broker; "" for the cluster
    state = models.CharField(max_length=10, choices=State.choices)
    evidence = models.TextField()
    findings = models.JSONField(default=list, blank=True)  # the group's health findings when it fired
    started_at = models.DateTimeField()
    fired_at = models.DateTimeField(null=True)
    ended_at = models.DateTimeField(null=True)
    end_evidence = models.TextField(blank=True)
    # a firing alert's condition known clear since then, waiting out its rule's keep_firing_seconds
    clear_since = models.DateTimeField(null=True, blank=True)
    silenced_by = models.ForeignKey(Silence, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    acknowledged_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    acknowledged_at = models.DateTimeField(null=True)

    class Meta:
        app_label = "consumers"
        ordering = ["-started_at"]
        constraints = [
            # the deduplication: one open alert per rule and subject, whoever evaluates
            models.UniqueConstraint(
                fields=["rule", "cluster", "scope", "subject"],
                condition=Q(state__in=["pending", "firing"]),
                name="one_open_alert_per_subject",
            )
        ]

    def __str__(self) -> str:
        return f"{self.rule.name}: {self.cluster.name} {self.subject}".strip()


class Delivery(models.Model):
    """One notification of one alert event on one channel: a claimed job, retried with backoff."""

    class State(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        SENT = "sent"
        FAILED = "failed"  # gave up after ALERT_DELIVERY_GIVE_UP_SECONDS

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=10)  # firing, resolved
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.JSONField(default=list)  # [{"at", "ok", "result"}], one per attempt
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField()
    # the time a task was last queued for (by deliver_due, or a retry's eta): not again while it waits
    queued_at = models.DateTimeField(null=True)
    sent_at = models.DateTimeField(null=True)
    run_token = models.CharField(max_length=32, blank=True)
    heartbeat_at = models.DateTimeField(null=True)
    started_at = models.DateTimeField(null=True)

    class Meta:
        app_label = "consumers"
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["alert", "channel", "event"], name="one_delivery_per_event")]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="delivery_due")]

    def __str__(self) -> str:
        return f"{self.event} of {self.alert} to {self.channel.name}: {self.state}"
