package rmqconsole.harness;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * {"cmd":"produce", "id":"p1", "topic":"T", "count":100,
 *  "tags":["TagA","TagB"], "keyPrefix":"p1-", "binaryEvery":5, "largeEvery":7, "largeSize":6000,
 *  "compressType":"ZLIB|LZ4|ZSTD", "queueId":null, "rate":0, "quiet":false}
 *
 * Message i gets tag tags[i % n] and key keyPrefix + i. Every binaryEvery-th body is binary,
 * every largeEvery-th is a compressible text over the 4 KiB compression threshold, the rest
 * short UTF-8 text with braces, quotes and non-ASCII characters. Each send is reported with
 * its ids, queue, offset, key, tag and base64 body. count -1 produces until stopped; rate
 * limits messages per second (0 = as fast as possible).
 */
final class Producers {
    private Producers() {
    }

    static void produce(String namesrv, JSONObject cmd, AtomicBoolean stop) {
        String id = cmd.getString("id");
        String topic = cmd.getString("topic");
        int count = cmd.getIntValue("count");
        JSONArray tagArray = cmd.getJSONArray("tags");
        List<String> tags = tagArray == null ? List.of("TagA", "TagB") : tagArray.toJavaList(String.class);
        String keyPrefix = cmd.getString("keyPrefix") == null ? id + "-" : cmd.getString("keyPrefix");
        int binaryEvery = cmd.getIntValue("binaryEvery");
        int largeEvery = cmd.getIntValue("largeEvery");
        int largeSize = cmd.getIntValue("largeSize") > 0 ? cmd.getIntValue("largeSize") : 6000;
        Integer queueId = cmd.getInteger("queueId");
        double rate = cmd.getDoubleValue("rate");
        boolean quiet = cmd.getBooleanValue("quiet");

        // trace: the client's message trace (enableMsgTrace), written to RMQ_SYS_TRACE_TOPIC or to
        // "traceTopic" (a customized trace topic)
        DefaultMQProducer producer = new DefaultMQProducer(cmd.getString("group") == null
            ? "harness-producer" : cmd.getString("group"), cmd.getBooleanValue("trace"), cmd.getString("traceTopic"));
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("producer-" + id);
        producer.setClientIP("127.0.0.1");
        producer.setSendMsgTimeout(10000);
        producer.setPollNameServerInterval(1000);
        if (cmd.getString("compressType") != null) {
            producer.setCompressType(CompressionType.of(cmd.getString("compressType")));
        }
        int sent = 0;
        int failures = 0;
        try {
            producer.start();
            long started = System.nanoTime();
            for (int i = 0; count < 0 || i < count; i++) {
                if (stop.get()) {
                    break;
                }
                if (rate > 0) {
                    long due = started + (long) (i * 1e9 / rate);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                }
                String kind = kindOf(i, binaryEvery, largeEvery);
                byte[] body = body(id, i, kind, largeSize);
                String tag = tags.get(i % tags.size());
                String key = keyPrefix + i;
                Message message = new Message(topic, tag, key, body);
                message.putUserProperty("seq", Integer.toString(i));
                SendResult result;
                try {
                    result = queueId == null ? producer.send(message)
                        : producer.send(message, new MessageQueue(topic, brokerOf(producer, topic), queueId));
                } catch (InterruptedException e) {
                    throw e;
                } catch (Exception e) {
                    if (count >= 0) {
                        throw e;  // a counted run reports exactly what it sent: stop at the first failure
                    }
                    // an endless run (the demo) outlives a broker that dies or hangs: report, wait,
                    // send the same message again, and restart the rate schedule from now
                    failures++;
                    if (failures == 1 || failures % 60 == 0) {
                        JSONObject retrying = Events.event("send-retrying", id);
                        retrying.put("failures", failures);
                        retrying.put("cause", e.toString());
                        Events.emit(retrying);
                    }
                    Thread.sleep(1000);
                    i--;
                    started = System.nanoTime() - (long) ((i + 1) * 1e9 / Math.max(rate, 1e-9));
                    continue;
                }
                sent++;
                if (!quiet) {
                    JSONObject event = Events.event("sent", id);
                    event.put("seq", i);
                    event.put("msgId", result.getMsgId());
                    event.put("offsetMsgId", result.getOffsetMsgId());
                    event.put("broker", result.getMessageQueue().getBrokerName());
                    event.put("queueId", result.getMessageQueue().getQueueId());
                    event.put("queueOffset", result.getQueueOffset());
                    event.put("status", result.getSendStatus().name());
                    event.put("key", key);
                    event.put("tag", tag);
                    event.put("kind", kind);
                    event.put("body", Base64.getEncoder().encodeToString(body));
                    event.put("storeTime", System.currentTimeMillis());
                    Events.emit(event);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            Events.error(id, "produce failed after " + sent + " messages", e);
        } finally {
            if (cmd.getBooleanValue("trace")) {
                // the trace dispatcher sends its records asynchronously and the producer's
                // shutdown drops sends still in flight: a long-lived producer never hits this
                try {
                    Thread.sleep(2000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            producer.shutdown();
        }
        JSONObject done = Events.event("produced", id);
        done.put("count", sent);
        Events.emit(done);
    }

    private static String brokerOf(DefaultMQProducer producer, String topic) throws Exception {
        // Queue ids are per broker; with a fixed queue id, use the first broker serving the topic.
        return producer.fetchPublishMessageQueues(topic).stream()
            .map(MessageQueue::getBrokerName).sorted().findFirst()
            .orElseThrow(() -> new IllegalStateException("no queue for " + topic));
    }

    static String kindOf(int i, int binaryEvery, int largeEvery) {
        if (largeEvery > 0 && i % largeEvery == largeEvery - 1) {
            return "large";
        }
        if (binaryEvery > 0 && i % binaryEvery == binaryEvery - 1) {
            return "binary";
        }
        return "text";
    }

    static byte[] body(String id, int i, String kind, int largeSize) {
        switch (kind) {
            case "binary": {
                byte[] bytes = new byte[256 + i % 64];
                for (int b = 0; b < bytes.length; b++) {
                    bytes[b] = (byte) ((b * 31 + i) & 0xFF);
                }
                return bytes;
            }
            case "large": {
                StringBuilder text = new StringBuilder(largeSize + 64);
                while (text.length() < largeSize) {
                    text.append("large body of ").append(id).append(" #").append(i).append(" lorem ipsum; ");
                }
                return text.toString().getBytes(StandardCharsets.UTF_8);
            }
            default:
                return ("{\"msg\":\"" + id + " #" + i + "\",\"note\":\"braces {} quotes \\\" unicode \u00e9\u4e2d\ud83d\ude80\"}")
                    .getBytes(StandardCharsets.UTF_8);
        }
    }
}
