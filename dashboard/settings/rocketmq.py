"""RocketMQ: the polls of the clusters, their deadlines and budgets, and the health thresholds."""

from __future__ import annotations

from .environment import env

# The cluster the demo (and a fresh install) starts with; more are added in the admin.
ROCKETMQ_DEFAULT_CLUSTER_NAME = env.str("ROCKETMQ_CLUSTER_NAME", "local")
ROCKETMQ_POLL_INTERVAL = env.int("ROCKETMQ_POLL_INTERVAL", 15)
# where the clients write message traces (enableMsgTrace; a customized trace topic where they
# name one): a message's track shows its trace from there. Empty: no trace is read
ROCKETMQ_TRACE_TOPIC = env.str("ROCKETMQ_TRACE_TOPIC", "RMQ_SYS_TRACE_TOPIC")
ROCKETMQ_REQUEST_TIMEOUT = env.float("ROCKETMQ_REQUEST_TIMEOUT", 5)
ROCKETMQ_CONNECT_TIMEOUT = env.float("ROCKETMQ_CONNECT_TIMEOUT", 3)
# A poll of one cluster never takes longer than this; what it could not read is marked.
ROCKETMQ_POLL_DEADLINE = env.int("ROCKETMQ_POLL_DEADLINE", 12)
# ...or than this per thousand groups its last poll saw, when that is longer: the deadline grows
# with the cluster (a poll of 10,000 groups takes 4.2 s on 2 cores, bench_poll; 1 s a thousand
# leaves more than twice that), and so do its task's time limits and its staleness bound
ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS = env.float("ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS", 1)
# The largest frame read from a broker. The servers' own default is 16 MiB, which a broker's list
# of subscription groups passes at about 48,000 groups (350 bytes each): then nothing was listed.
ROCKETMQ_MAX_FRAME_MB = env.int("ROCKETMQ_MAX_FRAME_MB", 128)
# A poll of more groups than this is read in parts of about this many by several Celery workers
# (live/parts.py); a smaller cluster is read by the one task that holds its poll lock.
ROCKETMQ_POLL_PART_GROUPS = env.int("ROCKETMQ_POLL_PART_GROUPS", 12_500)
# Each broker's first reads in a poll must answer within this, or the broker is "failing"
# for that poll and left out, so one hung broker does not blind the others.
ROCKETMQ_BROKER_DEADLINE = env.float("ROCKETMQ_BROKER_DEADLINE", 3)
# At most this many groups asked of the proxies per poll (a proxy answers ~330 connection lists
# a second): those that had gRPC clients last poll always, the others in rotation
ROCKETMQ_PROXY_GROUPS_PER_POLL = env.int("ROCKETMQ_PROXY_GROUPS_PER_POLL", 300)
# After a proxy restarts, its gRPC clients are unknown (not STOPPED) this long: the SDK clients
# register again at their next heartbeat, 20 to 85 s later as measured (consumers/live/proxy_grace.py)
ROCKETMQ_PROXY_RESTART_GRACE = env.int("ROCKETMQ_PROXY_RESTART_GRACE", 90)
# A value older than poll interval + poll deadline + this margin is stale.
STALE_MARGIN_SECONDS = env.int("STALE_MARGIN_SECONDS", 5)
# A broker the name server stopped listing is shown as missing until removed, or this long.
BROKER_FORGET_AFTER_SECONDS = env.int("BROKER_FORGET_AFTER_SECONDS", 24 * 3600)
# requests in flight at once during a poll (pipelined over one connection per broker)
ROCKETMQ_POLL_CONCURRENCY = env.int("ROCKETMQ_POLL_CONCURRENCY", 512)
# Lag-in-seconds lookups (one message read each) a poll may make beyond its cache.
ROCKETMQ_LAGTIME_BUDGET = env.int("ROCKETMQ_LAGTIME_BUDGET", 256)
# consume-queue units a poll may read to count tag-filtered lag (consumers/live/taglag.py):
# about 60 bytes each on the wire; past it a queue's figure is an estimate that says so
ROCKETMQ_TAGLAG_BUDGET = env.int("ROCKETMQ_TAGLAG_BUDGET", 50_000)
# how far ahead a poll looks for messages the brokers' retention will delete before their group
# reads them (consumers/live/retention.py): RETENTION_RISK when it finds some
RETENTION_HORIZON_SECONDS = env.int("RETENTION_HORIZON_SECONDS", 24 * 3600)
# a group with no client online for this many days is listed as abandoned (/groups/abandoned/)
ABANDONED_AFTER_DAYS = env.int("ABANDONED_AFTER_DAYS", 7)

# Health thresholds; per-group overrides live in HealthOverride.
HEALTH_WINDOW_SECONDS = env.int("HEALTH_WINDOW_SECONDS", 300)
HEALTH_STALL_SECONDS = env.int("HEALTH_STALL_SECONDS", 60)
HEALTH_MIN_SAMPLES = env.int("HEALTH_MIN_SAMPLES", 3)
# Captures of a group's thread stacks (consumers/clients/): how many are kept per group and how
# long, and how recent the latest must be to stand as evidence beside a STALLED or
# FALLING_BEHIND group's health
CLIENT_STACKS_KEEP = env.int("CLIENT_STACKS_KEEP", 10)
CLIENT_STACKS_RETENTION_SECONDS = env.int("CLIENT_STACKS_RETENTION_SECONDS", 7 * 86400)
CLIENT_STACKS_EVIDENCE_SECONDS = env.int("CLIENT_STACKS_EVIDENCE_SECONDS", 900)
HEALTH_MIN_LAG = env.int("HEALTH_MIN_LAG", 1)
HEALTH_RETRY_RATE_PER_MINUTE = env.float("HEALTH_RETRY_RATE_PER_MINUTE", 60)
# more polls than this in the window with a changed queue allocation: REBALANCE_STORM
HEALTH_REBALANCE_CHANGES = env.int("HEALTH_REBALANCE_CHANGES", 5)
