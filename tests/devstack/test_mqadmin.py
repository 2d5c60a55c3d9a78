"""`MQAdmin.run_fresh` runs again only when the fresh JVM's own request timed out on the wire."""

import pytest

from devstack.mqadmin import MQAdmin, MQAdminError, MQAdminResult

# stderr as mqadmin printed it, cut to the lines that matter
SEEN_IN_CI = (
    "org.apache.rocketmq.tools.command.SubCommandException: QueryMsgByUniqueKeySubCommand command failed\n"
    "Caused by: org.apache.rocketmq.remoting.exception.RemotingTimeoutException: "
    "invokeSync call the addr[127.0.0.1:16854] timeout\n"
    "\tat org.apache.rocketmq.remoting.netty.NettyRemotingClient.invokeSync(NettyRemotingClient.java:563)\n"
)
SEEN_HERE = (
    "org.apache.rocketmq.remoting.exception.RemotingTimeoutException: "
    "wait response on the channel <127.0.0.1:16854> timeout, 654(ms)\n"
    "\tat org.apache.rocketmq.remoting.netty.NettyRemotingAbstract.invokeSyncImpl(NettyRemotingAbstract.java:549)\n"
)
NO_ROUTE = (
    "org.apache.rocketmq.client.exception.MQClientException: CODE: 17  DESC: No topic route info in name server\n"
    "\tat org.apache.rocketmq.client.impl.MQClientAPIImpl.getTopicRouteInfoFromNameServer(MQClientAPIImpl.java:2000)\n"
)


def _admin(answers):
    admin = MQAdmin.__new__(MQAdmin)  # no JVM: only the retry is under test
    admin.namesrv_addr = "127.0.0.1:16854"
    calls = []

    def fresh(argv, timeout):
        calls.append(argv)
        return answers[len(calls) - 1]

    admin._fresh = fresh
    return admin, calls


@pytest.mark.parametrize("timed_out", [SEEN_IN_CI, SEEN_HERE])
def test_a_wire_timeout_is_run_again_and_the_answer_after_it_counts(timed_out):
    admin, calls = _admin([MQAdminResult("", timed_out, 0), MQAdminResult("Topic: T\n", "", 0)])
    assert admin.run_fresh("queryMsgByUniqueKey", "-t", "T", "-i", "X").out == "Topic: T\n"
    assert len(calls) == 2
    assert calls[0] == ["queryMsgByUniqueKey", "-t", "T", "-i", "X", "-n", "127.0.0.1:16854"]


def test_timeouts_on_every_attempt_fail_after_the_attempts():
    admin, calls = _admin([MQAdminResult("", SEEN_IN_CI, 0)] * 3)
    with pytest.raises(MQAdminError, match="invokeSync call the addr"):
        admin.run_fresh("queryMsgByUniqueKey", "-t", "T", "-i", "X")
    assert len(calls) == 3


def test_any_other_failure_is_not_run_again():
    admin, calls = _admin([MQAdminResult("", NO_ROUTE, 0), MQAdminResult("Topic: T\n", "", 0)])
    with pytest.raises(MQAdminError, match="No topic route info"):
        admin.run_fresh("queryMsgByUniqueKey", "-t", "T", "-i", "X")
    assert len(calls) == 1
