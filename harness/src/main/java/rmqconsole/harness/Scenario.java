package rmqconsole.harness;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

/**
 * A consumer scenario:
 * {"cmd":"consume", "id":"c1", "group":"G", "topic":"T", "subscription":"*",
 *  "mode":"healthy|lagging|failing|stalled", "model":"CLUSTERING|BROADCASTING", "orderly":false,
 *  "instanceName":"c1", "threads":4, "sleepMs":0,
 *  "stopAfter":40,                       lagging: acknowledge this many, then consume nothing more
 *  "failKeys":[...], "failEvery":3,      failing: these keys (or keys whose number % failEvery == 0,
 *  "failAll":true, "maxReconsumeTimes":2             or all) return RECONSUME_LATER every time
 *                                        throwing: the same keys make the listener throw
 *                                        IllegalStateException("inventory down: cannot reserve <key>")
 *  "stallKey":"k7",                      stalled: block on this key (or the first message) until release
 *                                        locked: every delivery takes one lock of the consumer's: the
 *                                        first keeps it until release, the others wait for it (BLOCKED)
 *  "quiet":false,
 *  "pop":false}                          pop: ask the broker for assignments (setClientRebalance(false)),
 *                                        so a group switched to POP (mqadmin setConsumeMode) pops
 *
 * Every delivery is reported ("received", with result ok, later or held). A lagging consumer
 * runs with one thread, so the messages it acknowledged are a prefix of each queue and its
 * committed offsets say exactly what it consumed.
 */
final class Scenario implements Worker {
    private final String id;
    private final JSONObject cmd;
    private final String mode;
    private final DefaultMQPushConsumer consumer;
    private final Set<String> failKeys = new HashSet<>();
    private final int failEvery;
    private final boolean failAll;
    private final int stopAfter;
    private final String stallKey;
    private final long sleepMs;
    private final boolean quiet;
    private final CountDownLatch released = new CountDownLatch(1);
    private final Object inventoryLock = new Object();
    private final CountDownLatch never = new CountDownLatch(1);
    private final AtomicBoolean stalledOnce = new AtomicBoolean();
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final AtomicInteger received = new AtomicInteger();
    private final AtomicInteger acked = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final AtomicInteger held = new AtomicInteger();

    Scenario(String namesrv, JSONObject cmd) throws Exception {
        this.cmd = cmd;
        this.id = cmd.getString("id");
        this.mode = cmd.getString("mode") == null ? "healthy" : cmd.getString("mode");
        JSONArray keys = cmd.getJSONArray("failKeys");
        if (keys != null) {
            failKeys.addAll(keys.toJavaList(String.class));
        }
        this.failEvery = cmd.getIntValue("failEvery");
        this.failAll = cmd.getBooleanValue("failAll");
        this.stopAfter = cmd.getIntValue("stopAfter");
        this.stallKey = cmd.getString("stallKey");
        this.sleepMs = cmd.getLongValue("sleepMs");
        this.quiet = cmd.getBooleanValue("quiet");

        // trace: the client writes a trace of each consumption (enableMsgTrace), to "traceTopic" if given
        consumer = new DefaultMQPushConsumer(cmd.getString("group"), cmd.getBooleanValue("trace"),
            cmd.getString("traceTopic"));
        consumer.setNamesrvAddr(namesrv);
        consumer.setClientIP("127.0.0.1");
        consumer.setInstanceName(cmd.getString("instanceName") == null ? id : cmd.getString("instanceName"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        // Defaults of 30 s and 5 s would make every test wait for routes and offset commits.
        consumer.setPollNameServerInterval(1000);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.setHeartbeatBrokerInterval(2000);
        if ("BROADCASTING".equals(cmd.getString("model"))) {
            consumer.setMessageModel(MessageModel.BROADCASTING);
        }
        if (cmd.getBooleanValue("pop")) {
            consumer.setClientRebalance(false);
        }
        if (cmd.containsKey("maxReconsumeTimes")) {
            consumer.setMaxReconsumeTimes(cmd.getIntValue("maxReconsumeTimes"));
        }
        int threads = "lagging".equals(mode) ? 1 : Math.max(1, cmd.getIntValue("threads") == 0 ? 4 : cmd.getIntValue("threads"));
        if ("stalled".equals(mode) || "lagging".equals(mode)) {
            // A held message is given up after consumeTimeout (15 min by default): the client sends
            // it back and its queue's offset moves on. These scenarios hold for a whole test session.
            consumer.setConsumeTimeout(24 * 60);
        }
        consumer.setConsumeThreadMin(threads);
        consumer.setConsumeThreadMax(threads);
        consumer.subscribe(cmd.getString("topic"), cmd.getString("subscription") == null ? "*" : cmd.getString("subscription"));
        if (cmd.getBooleanValue("orderly")) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                for (MessageExt msg : msgs) {
                    if (!"ok".equals(handle(msg))) {
                        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                    }
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                for (MessageExt msg : msgs) {
                    if (!"ok".equals(handle(msg))) {
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
    }

    void start() throws Exception {
        consumer.start();
        JSONObject event = Events.event("started", id);
        event.put("clientId", consumer.buildMQClientId());
        event.put("group", cmd.getString("group"));
        Events.emit(event);
    }

    private String handle(MessageExt msg) {
        received.incrementAndGet();
        String key = msg.getKeys();
        String result;
        if ("lagging".equals(mode) && acked.get() >= stopAfter) {
            result = "held";
        } else if ("failing".equals(mode) && shouldFail(key)) {
            result = "later";
        } else if ("throwing".equals(mode) && shouldFail(key)) {
            result = "thrown";
        } else if ("stalled".equals(mode) && shouldStall(key)) {
            result = "held";
        } else if ("locked".equals(mode)) {
            result = "locked";
        } else {
            result = "ok";
        }
        report(msg, result);
        switch (result) {
            case "later":
                failed.incrementAndGet();
                return result;
            case "thrown":
                failed.incrementAndGet();
                throw new IllegalStateException("inventory down: cannot reserve " + key);
            case "locked":
                held.incrementAndGet();
                reserveUnderLock();
                break;
            case "held":
                held.incrementAndGet();
                // Lagging consumers hold forever; a stalled one until released. Interrupts (from
                // shutdown) are ignored so the message is never acknowledged by accident.
                awaitUninterruptibly("lagging".equals(mode) ? never : released);
                break;
            default:
                break;
        }
        if (sleepMs > 0) {
            sleepQuietly(sleepMs);
        }
        acked.incrementAndGet();
        report(msg, "acked");
        return "ok";
    }

    private boolean shouldFail(String key) {
        if (failAll || failKeys.contains(key)) {
            return true;
        }
        if (failEvery > 0 && key != null) {
            String digits = key.replaceAll("^.*?(\\d+)$", "$1");
            return digits.matches("\\d+") && Long.parseLong(digits) % failEvery == 0;
        }
        return false;
    }

    private boolean shouldStall(String key) {
        if (stallKey != null) {
            return stallKey.equals(key) && released.getCount() > 0;
        }
        return stalledOnce.compareAndSet(false, true);
    }

    private void report(MessageExt msg, String result) {
        if (quiet) {
            return;
        }
        JSONObject event = Events.event("acked".equals(result) ? "acked" : "received", id);
        event.put("msgId", msg.getMsgId());
        event.put("key", msg.getKeys());
        event.put("tags", msg.getTags());
        event.put("topic", msg.getTopic());
        event.put("queueId", msg.getQueueId());
        event.put("queueOffset", msg.getQueueOffset());
        event.put("broker", msg.getBrokerName());
        event.put("reconsumeTimes", msg.getReconsumeTimes());
        event.put("originMsgId", msg.getProperty("ORIGIN_MESSAGE_ID"));
        event.put("redriveJob", msg.getProperty("REDRIVE_JOB"));
        event.put("storeTime", msg.getStoreTimestamp());
        event.put("popCk", msg.getProperty("POP_CK")); // set by the broker on a message handed out by POP
        event.put("result", result);
        Events.emit(event);
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public void release() {
        released.countDown();
    }

    @Override
    public void stop() {
        if (!stopped.compareAndSet(false, true)) {
            return;
        }
        // shutdown() persists the offsets of every queue: the first unacknowledged message.
        consumer.shutdown();
        Events.emit(status("stopped"));
    }

    @Override
    public JSONObject status(String type) {
        JSONObject event = Events.event(type, id);
        event.put("received", received.get());
        event.put("acked", acked.get());
        event.put("failedDeliveries", failed.get());
        event.put("held", held.get());
        return event;
    }

    // the lock's holder waits for release inside it; every other consume thread is BLOCKED here
    private void reserveUnderLock() {
        synchronized (inventoryLock) {
            awaitUninterruptibly(released);
        }
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        while (true) {
            try {
                latch.await();
                return;
            } catch (InterruptedException e) {
                // keep holding
            }
        }
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
