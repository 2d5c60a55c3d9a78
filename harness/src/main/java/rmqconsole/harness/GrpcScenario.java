package rmqconsole.harness;

import com.alibaba.fastjson.JSONObject;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * A RocketMQ 5 consumer of the official gRPC SDK (rocketmq-client-java), through a proxy:
 * {"cmd":"grpc-consume", "id":"g1", "endpoint":"127.0.0.1:8081", "group":"G", "topic":"T",
 *  "kind":"simple|push", "mode":"healthy|slow|failing",
 *  "ackEvery":3,            slow (simple): ack one message in this many, leave the rest in flight
 *  "invisibleSeconds":30,   simple: how long a received message stays hidden before it comes back
 *  "sleepMs":0}             pause after each receive (simple) or each message (push)
 * Both kinds consume with POP: the broker hands messages out and hides them until acked. The
 * counts (received, acked, failed, and in flight: received, not acked, still hidden) are the
 * client's own, the oracle for what the console shows of the group. Events: "started" (with the
 * client id the proxy knows), and counts on "status" and "stopped"; no event per message.
 */
final class GrpcScenario implements Worker {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    private final String id;
    private final String kind;
    private final String mode;
    private final int ackEvery;
    private final Duration invisible;
    private final long sleepMs;
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final AtomicInteger received = new AtomicInteger();
    private final AtomicInteger acked = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    // message id -> when it becomes visible again (unacked messages only)
    private final Map<String, Long> hidden = new ConcurrentHashMap<>();
    private final Map<String, Integer> deliveries = new ConcurrentHashMap<>();
    private SimpleConsumer simple;
    private PushConsumer push;
    private Thread loop;

    GrpcScenario(JSONObject cmd) throws Exception {
        this.id = cmd.getString("id");
        this.kind = cmd.getString("kind") == null ? "simple" : cmd.getString("kind");
        this.mode = cmd.getString("mode") == null ? "healthy" : cmd.getString("mode");
        this.ackEvery = cmd.getIntValue("ackEvery") > 0 ? cmd.getIntValue("ackEvery") : 3;
        this.invisible = Duration.ofSeconds(cmd.getIntValue("invisibleSeconds") > 0 ? cmd.getIntValue("invisibleSeconds") : 30);
        this.sleepMs = cmd.getLongValue("sleepMs");
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(cmd.getString("endpoint"))
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        Map<String, FilterExpression> subscription =
            Map.of(cmd.getString("topic"), new FilterExpression("*", FilterExpressionType.TAG));
        String group = cmd.getString("group");
        if ("push".equals(kind)) {
            push = PROVIDER.newPushConsumerBuilder()
                .setClientConfiguration(configuration)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(subscription)
                .setConsumptionThreadCount(2)
                .setMessageListener(this::onMessage)
                .build();
        } else {
            simple = PROVIDER.newSimpleConsumerBuilder()
                .setClientConfiguration(configuration)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(subscription)
                .setAwaitDuration(Duration.ofSeconds(2))
                .build();
        }
    }

    void start() {
        if (simple != null) {
            loop = new Thread(this::receiveLoop, "grpc-" + id);
            loop.setDaemon(true);
            loop.start();
        }
        JSONObject event = Events.event("started", id);
        event.put("clientId", clientId(simple != null ? simple : push));
        Events.emit(event);
    }

    private ConsumeResult onMessage(MessageView view) {
        received.incrementAndGet();
        deliveries.merge(view.getMessageId().toString(), 1, Integer::sum);
        pause();
        if ("failing".equals(mode)) {
            failed.incrementAndGet();
            return ConsumeResult.FAILURE;
        }
        acked.incrementAndGet();
        return ConsumeResult.SUCCESS;
    }

    private void receiveLoop() {
        long n = 0;
        while (!stopped.get()) {
            List<MessageView> views;
            try {
                views = simple.receive(16, invisible);
            } catch (Exception e) {
                if (!stopped.get()) {
                    sleepQuietly(500);  // a receive that found nothing or timed out: try again
                }
                continue;
            }
            long now = System.currentTimeMillis();
            for (MessageView view : views) {
                String messageId = view.getMessageId().toString();
                received.incrementAndGet();
                deliveries.merge(messageId, 1, Integer::sum);
                n++;
                boolean ack = "healthy".equals(mode) || ("slow".equals(mode) && n % ackEvery == 0);
                if (!ack) {
                    if ("failing".equals(mode)) {
                        failed.incrementAndGet();
                    }
                    hidden.put(messageId, now + invisible.toMillis());
                    continue;
                }
                try {
                    simple.ack(view);
                    acked.incrementAndGet();
                    hidden.remove(messageId);
                } catch (Exception e) {
                    hidden.put(messageId, now + invisible.toMillis());
                }
            }
            pause();
        }
    }

    private void pause() {
        if (sleepMs > 0) {
            sleepQuietly(sleepMs);
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String clientId(Object client) {
        for (Class<?> type = client.getClass(); type != null; type = type.getSuperclass()) {
            try {
                Field field = type.getDeclaredField("clientId");
                field.setAccessible(true);
                return String.valueOf(field.get(client));
            } catch (NoSuchFieldException e) {
                // up the hierarchy: ClientImpl holds it
            } catch (IllegalAccessException e) {
                return null;
            }
        }
        return null;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public void stop() {
        if (!stopped.compareAndSet(false, true)) {
            return;
        }
        try {
            if (loop != null) {
                loop.join(10000);
            }
            if (simple != null) {
                simple.close();
            }
            if (push != null) {
                push.close();
            }
        } catch (Exception e) {
            Events.error(id, "close failed", e);
        }
        Events.emit(status("stopped"));
    }

    @Override
    public JSONObject status(String type) {
        JSONObject event = Events.event(type, id);
        long now = System.currentTimeMillis();
        hidden.values().removeIf(until -> until <= now);
        event.put("received", received.get());
        event.put("acked", acked.get());
        event.put("failed", failed.get());
        event.put("inFlight", hidden.size());
        event.put("distinct", deliveries.size());
        event.put("maxDeliveries", deliveries.values().stream().mapToInt(Integer::intValue).max().orElse(0));
        return event;
    }
}
