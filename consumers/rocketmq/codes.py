"""Numbers of the remoting protocol: request and response codes, languages, versions.

Values were checked against the 5.3.3 jars (reflection over RequestCode, LanguageCode and
MQVersion.Version); tests/fixtures/mqversion.txt is that dump.
"""

from __future__ import annotations

from enum import IntEnum


class RequestCode(IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    GET_ALL_CONSUMER_OFFSET = 43
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    GET_CONSUMER_RUNNING_INFO = 307
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    VIEW_BROKER_STATS_DATA = 315
    QUERY_CONSUME_QUEUE = 321
    SET_MESSAGE_REQUEST_MODE = 401
    GET_ALL_MESSAGE_REQUEST_MODE = 402
    QUERY_TOPICS_BY_CONSUMER = 343


class ResponseCode(IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    INVALID_PARAMETER = 29
    CONSUMER_NOT_ONLINE = 206
    BROADCAST_CONSUMPTION = 213
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    GO_AWAY = 1500


# A send is stored (and so "sent") with any of these codes; the others are failures.
SEND_STORED_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)

LANGUAGES = (
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER",
    "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS",
)  # fmt: skip


def language_name(value: int | str | None) -> str:
    """Name of a language as sent by any peer; unknown values are kept, not rejected."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and 0 <= value < len(LANGUAGES):
        return LANGUAGES[value]
    return f"UNKNOWN({value})"


def language_byte(name: str) -> int:
    return LANGUAGES.index(name) if name in LANGUAGES else LANGUAGES.index("OTHER")


# Version 401 is V4_9_4: name servers answer routes in standard JSON, and it stays below
# the GO_AWAY thresholds of 5.2+ servers (see rocketmq-protocol.md section 1.7).
DEFAULT_VERSION = 401

_EARLY_VERSIONS = (
    "V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", "V3_0_0_BETA1", "V3_0_0_BETA2", "V3_0_0_BETA3",
    "V3_0_0_BETA4", "V3_0_0_BETA5", "V3_0_0_BETA6_SNAPSHOT", "V3_0_0_BETA6",
    "V3_0_0_BETA7_SNAPSHOT", "V3_0_0_BETA7", "V3_0_0_BETA8_SNAPSHOT", "V3_0_0_BETA8",
    "V3_0_0_BETA9_SNAPSHOT", "V3_0_0_BETA9", "V3_0_0_FINAL",
)  # fmt: skip


def _release_names() -> list[str]:
    # After the 3.0.0 betas the enum is regular: a SNAPSHOT and a release per patch,
    # 3.0.1 to 3.0.15, 3.1.0 to 3.2.9, then 3.3 to 3.9 from patch 1, then ten patches per
    # minor from 4.0.0 up to 5.9.9.
    releases = [(3, 0, patch) for patch in range(1, 16)]
    releases += [(3, minor, patch) for minor in (1, 2) for patch in range(10)]
    releases += [(3, minor, patch) for minor in range(3, 10) for patch in range(1, 10)]
    releases += [(major, minor, patch) for major in (4, 5) for minor in range(10) for patch in range(10)]
    names = list(_EARLY_VERSIONS)
    for major, minor, patch in releases:
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return names


VERSION_NAMES = tuple(_release_names())


def version_name(ordinal: int | None) -> str:
    """Display name of a MQVersion ordinal (`479` -> `V5_3_3`)."""
    if isinstance(ordinal, int) and 0 <= ordinal < len(VERSION_NAMES):
        return VERSION_NAMES[ordinal]
    return f"UNKNOWN({ordinal})"


def version_ordinal(name: str) -> int:
    return VERSION_NAMES.index(name)


class Perm:
    """Topic and broker permission bits (PermName)."""

    INHERIT = 1
    WRITE = 2
    READ = 4
    PRIORITY = 8

    @staticmethod
    def readable(perm: int) -> bool:
        return bool(perm & Perm.READ)

    @staticmethod
    def writable(perm: int) -> bool:
        return bool(perm & Perm.WRITE)


RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
DEFAULT_TOPIC = "TBW102"


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


# POP retry topics are per group and topic (KeyBuilder): v1 "%RETRY%{group}_{topic}" (the
# default), v2 "%RETRY%{group}+{topic}" (enableRetryTopicV2). A v1 name alone is ambiguous ("_"
# is legal in names), so it is read back only knowing its group.
POP_RETRY_SEPARATORS = ("_", "+")


def pop_retry_topics(group: str, topic: str) -> list[str]:
    return [f"{RETRY_PREFIX}{group}{sep}{topic}" for sep in POP_RETRY_SEPARATORS]


def pop_retry_source(name: str, group: str) -> str | None:
    """The topic a POP retry topic of `group` retries (None: not one of its POP retry topics)."""
    for sep in POP_RETRY_SEPARATORS:
        prefix = f"{RETRY_PREFIX}{group}{sep}"
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return None
