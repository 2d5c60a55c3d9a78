"""fastjson bodies: the literal examples of the protocol reference, and harder ones."""

from __future__ import annotations

import json

import pytest

from consumers.rocketmq.errors import ProtocolError
from consumers.rocketmq.fastjson import KeyedPairs, loads, pairs

MQ_A0 = {"brokerName": "broker-a", "queueId": 0, "topic": "TopicTest"}
MQ_A1 = {"brokerName": "broker-a", "queueId": 1, "topic": "TopicTest"}


def test_consume_stats_example_from_the_reference():
    body = (
        b'{"consumeTps":12.5,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:'
        b'{"brokerOffset":120,"consumerOffset":100,"lastTimestamp":1700000000123,"pullOffset":110},'
        b'{"brokerName":"broker-a","queueId":0,"topic":"%RETRY%GroupA"}:'
        b'{"brokerOffset":5,"consumerOffset":5,"lastTimestamp":0,"pullOffset":5}}}'
    )
    data = loads(body)
    assert data["consumeTps"] == 12.5
    table = data["offsetTable"]
    assert isinstance(table, KeyedPairs)
    assert table[0] == (
        MQ_A0,
        {"brokerOffset": 120, "consumerOffset": 100, "lastTimestamp": 1700000000123, "pullOffset": 110},
    )
    assert table[1][0]["topic"] == "%RETRY%GroupA"


def test_reset_offset_body_example_from_the_reference():
    body = (
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:100,'
        b'{"brokerName":"broker-a","queueId":1,"topic":"TopicTest"}:98}}'
    )
    assert pairs(loads(body)["offsetTable"]) == [(MQ_A0, 100), (MQ_A1, 98)]


def test_cluster_info_example_with_bare_numeric_keys():
    body = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.1.10:10911",1:"192.168.1.11:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},'
        b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    data = loads(body)
    assert data["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: "192.168.1.10:10911", 1: "192.168.1.11:10911"}
    assert data["brokerAddrTable"]["broker-a"]["enableActingMaster"] is False
    assert data["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}


def test_standard_json_goes_through_json_loads_unchanged():
    body = b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"b"}],"filterServerTable":{}}'
    assert loads(body) == json.loads(body)


def test_empty_and_null_tps():
    assert loads(b'{"consumeTps":0.0,"offsetTable":{}}') == {"consumeTps": 0.0, "offsetTable": {}}
    assert loads(b'{"consumeTps":null,"offsetTable":{}}')["consumeTps"] is None


def test_strings_with_braces_quotes_colons_and_unicode_in_keys_and_values():
    key = {"brokerName": 'b{"x":1}:{}', "queueId": 3, "topic": "t\u00e9\u4e2d\U0001f680"}
    value = {"remark": '},{"a":1}:{', "jstack": "at x(Y.java:1)\n\t{0:1}"}
    body = "{" + json.dumps(key) + ":" + json.dumps(value) + "," + json.dumps(MQ_A0) + ":7}"
    assert list(loads(body.encode())) == [(key, value), (MQ_A0, 7)]
    # the same with raw (unescaped) non-ASCII, as fastjson writes it
    raw = "{" + json.dumps(key, ensure_ascii=False) + ":1}"
    assert list(loads(raw.encode("utf-8"))) == [(key, 1)]


def test_object_keyed_maps_nested_inside_a_larger_body():
    # ConsumerRunningInfo: mqTable is object-keyed, next to ordinary fields
    body = (
        b'{"jstack":"t {1:2}","mqTable":{' + json.dumps(MQ_A0).encode() + b':{"commitOffset":5,"droped":false}},'
        b'"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"statusTable":{"TopicTest":{"pullTPS":1.5}},'
        b'"subscriptionSet":[{"topic":"TopicTest","subString":"*"}]}'
    )
    data = loads(body)
    assert list(data["mqTable"]) == [(MQ_A0, {"commitOffset": 5, "droped": False})]
    assert data["jstack"] == "t {1:2}"
    assert data["statusTable"] == {"TopicTest": {"pullTPS": 1.5}}


def test_whitespace_negative_float_and_literal_keys():
    assert loads(b'{ -1 : "a" , 2.5: "b", 1e3: "c" }') == {-1: "a", 2.5: "b", 1000.0: "c"}
    assert loads(b"{true:1,null:2}") == {True: 1, None: 2}
    assert loads(b'[ {0:"x"} , [] , {} ]') == [{0: "x"}, [], {}]


def test_array_keys_and_deeper_object_keys():
    data = loads(b'{[1,2]:"pair",{"a":{"b":[1]}}:{"c":{5:6}}}')
    assert list(data) == [([1, 2], "pair"), ({"a": {"b": [1]}}, {"c": {5: 6}})]


def test_pairs_accepts_the_array_of_pairs_form_some_peers_send():
    data = json.loads(b'{"offsetTable":[[{"topic":"zx","brokerName":"b","queueId":5},23354233]]}')
    assert pairs(data["offsetTable"]) == [({"topic": "zx", "brokerName": "b", "queueId": 5}, 23354233)]
    with pytest.raises(ProtocolError):
        pairs("not a map")


@pytest.mark.parametrize(
    "body",
    [
        b"{{1:2}",
        b'{"a":1',
        b'{"a" 1}',
        b"{1:}",
        b'{"a":1}}',
        b"{abc:1}",
        b'{{"a":1}:1,}',
        b'["a",]',
        b'{"a":"unterminated}',
        b"\xff\xfe{}",
        b"",
        b"{" * 300 + b"1:2" + b"}" * 300,
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_malformed_bodies_raise_protocol_errors(body):
    with pytest.raises(ProtocolError):
        loads(body)


def test_an_offset_table_dump_with_int_keyed_maps_and_whitespace():
    # GET_ALL_CONSUMER_OFFSET: "topic@group" -> {queue id: offset}; json refuses the inner maps
    body = b'{"offsetTable":{"T@g1":{0:5,1:6},"%RETRY%g1@g1":{ 0 : 0 },"T@g2":{}},"dataVersion":{"counter":3}}'
    data = loads(body)
    assert data["offsetTable"] == {"T@g1": {0: 5, 1: 6}, "%RETRY%g1@g1": {0: 0}, "T@g2": {}}
    assert data["dataVersion"] == {"counter": 3}
    with pytest.raises(ProtocolError):
        loads(b'{"offsetTable":{"T@g1":{0:5,1:}}}')


def test_numeric_keys_are_quoted_at_once_where_the_body_allows_and_walked_where_not():
    from consumers.rocketmq.fastjson import _REFUSED, _with_quoted_numeric_keys

    dump = '{"offsetTable":{"T@g1":{0:5,1:6},"%RETRY%g1@g1":{0:0},"T@g2":{}},"dataVersion":{"counter":3}}'
    expected = {"T@g1": {0: 5, 1: 6}, "%RETRY%g1@g1": {0: 0}, "T@g2": {}}
    assert _with_quoted_numeric_keys(dump, True)["offsetTable"] == expected  # the quick way took it
    assert _with_quoted_numeric_keys(dump, False)["offsetTable"]["T@g1"] == {"0": 5, "1": 6}
    assert loads(dump, numeric_keys=False) == json.loads(dump.replace("{0:", '{"0":').replace(",1:", ',"1":'))
    # what the quick way refuses, the walk reads: escapes, a string key starting with a space
    # (the quick way's mark), numbers in arrays beside numeric keys, a mixed map, whitespace
    for body, value in [
        ('{"a\\"b":{0:1}}', {'a"b': {0: 1}}),
        ('{" x":{0:1}}', {" x": {0: 1}}),
        ("{0:[1,2],3:[4]}", {0: [1, 2], 3: [4]}),
        ('{"a":1,5:2}', {"a": 1, 5: 2}),
        ('{5:2,"a":1}', {5: 2, "a": 1}),
        ("{ 0 : 1 }", {0: 1}),
        ("{1.5:1,-2:2,3e2:3}", {1.5: 1, -2: 2, 300.0: 3}),
    ]:
        assert loads(body) == value, body
    assert _with_quoted_numeric_keys("{0:[1,2],3:[4]}", True) == {0: [1, 2], 3: [4]}
    assert _with_quoted_numeric_keys('{"a":1,5:2}', True) is _REFUSED
    assert _with_quoted_numeric_keys("{ 0 : 1 }", True) is _REFUSED
