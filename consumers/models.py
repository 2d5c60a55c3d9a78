"""Database models: clusters the console watches.

Snapshots and history do not live here: the latest snapshot is in Redis and the history in
Parquet files (see consumers/live/snapshots.py and consumers/live/history.py).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from .rocketmq import Credentials, split_namesrv_list
from .web.inputs import is_ascii_int


def validate_namesrv_addrs(value: str) -> None:
    addresses = split_namesrv_list(value)
    if not addresses:
        raise ValidationError(_("Give at least one name server address, host:port."))
    _validate_addresses(addresses)


def validate_proxy_addrs(value: str) -> None:
    _validate_addresses(split_namesrv_list(value))


def _validate_addresses(addresses: list[str]) -> None:
    for address in addresses:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not is_ascii_int(port) or not 0 < int(port) < 65536:
            raise ValidationError(_("%(address)r is not host:port.") % {"address": address})


class Cluster(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    namesrv_addrs = models.CharField(
        _("name servers"),
        max_length=500,
        validators=[validate_namesrv_addrs],
        help_text=_("host:port, several separated by ';'"),
    )
    proxy_addrs = models.CharField(
        _("proxies"),
        max_length=500,
        blank=True,
        validators=[validate_proxy_addrs],
        help_text=_(
            "rocketmq-proxy remoting addresses (cluster mode), host:port separated by ';': "
            "the brokers know no gRPC client, only the proxies do"
        ),
    )
    broker_metrics = models.CharField(
        _("broker metrics URLs"),
        max_length=1000,
        blank=True,
        help_text=_(
            "the brokers' Prometheus endpoints (metricsExporterType=PROM), for POP messages in flight: "
            "'broker-a=http://host:5557/metrics; ...', or '*=http://{host}:5557/metrics' for every broker"
        ),
    )
    access_key = models.CharField(max_length=200, blank=True, help_text=_("ACL access key, if the cluster uses ACL"))
    secret_key = models.CharField(max_length=200, blank=True, help_text=_("ACL secret key; never shown again"))
    read_only = models.BooleanField(default=False, help_text=_("No resets or redrives on this cluster"))
    poll_interval = models.PositiveIntegerField(
        _("poll interval (s)"), default=15, validators=[MinValueValidator(5), MaxValueValidator(3600)]
    )
    enabled = models.BooleanField(default=True, help_text=_("Poll this cluster"))
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("view_console", "Can view clusters, consumer groups and statistics"),
            ("request_change", "Can request offset resets and DLQ redrives"),
            ("approve_change", "Can approve offset resets and DLQ redrives"),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # the secret key stays out of logs and tracebacks
        return f"<Cluster {self.name} {self.namesrv_addrs}>"

    @property
    def namesrv_list(self) -> list[str]:
        return split_namesrv_list(self.namesrv_addrs)

    @property
    def proxy_list(self) -> list[str]:
        return split_namesrv_list(self.proxy_addrs)

    @property
    def credentials(self) -> Credentials | None:
        if self.access_key and self.secret_key:
            return Credentials(self.access_key, self.secret_key)
        return None

    @property
    def uses_acl(self) -> bool:
        return bool(self.access_key)


class HealthOverride(models.Model):
    """Per-group health thresholds; empty fields keep the defaults (HEALTH_* settings)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="health_overrides")
    group = models.CharField(max_length=255)
    window_seconds = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(30)])
    stall_seconds = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(5)])
    min_lag = models.PositiveIntegerField(null=True, blank=True, help_text=_("lag below this is not 'behind'"))
    retry_rate_per_minute = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0)])
    lag_slo_seconds = models.FloatField(
        _("lag SLO (s)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text=_("lag seconds above this count as SLO breach minutes in the statistics"),
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "group"], name="one_override_per_group")]
        ordering = ["cluster", "group"]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.group}"

    def as_overrides(self) -> dict:
        return {
            "window_seconds": self.window_seconds,
            "stall_seconds": self.stall_seconds,
            "min_lag": self.min_lag,
            "retry_rate_per_minute": self.retry_rate_per_minute,
        }


class KnownBroker(models.Model):
    """A broker master the console has seen in a cluster. It is kept when the name server
    stops listing it, so a dead broker shows as missing instead of silently vanishing, until
    an admin removes it or it has been missing for BROKER_FORGET_AFTER_SECONDS."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="known_brokers")
    name = models.CharField(max_length=255)
    address = models.CharField(max_length=255)
    role = models.CharField(max_length=16, default="master")
    broker_cluster = models.CharField(_("RocketMQ cluster"), max_length=255, blank=True)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    missing_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="one_known_broker_per_name")]
        ordering = ["cluster", "name"]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.name}"


# Feature packages keep their models next to their code; Django finds them through this module.
from .alerts.models import Alert, AlertRule, Channel, Delivery, Silence  # noqa: E402, F401
from .audit.models import AuditEvent, AuditHead  # noqa: E402, F401
from .changes.models import ChangeRequest  # noqa: E402, F401
from .dlq.models import RedriveJob, RedrivenMessage  # noqa: E402, F401
from .identity.models import IdpAccount  # noqa: E402, F401
from .identity.tokens.models import ApiToken  # noqa: E402, F401
from .languages.models import LanguagePreference  # noqa: E402, F401
from .reports.models import Report  # noqa: E402, F401
from .stats.models import ClusterDay, GroupDay, RunDay, StatsRun  # noqa: E402, F401
