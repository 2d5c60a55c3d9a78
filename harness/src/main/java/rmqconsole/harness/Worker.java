package rmqconsole.harness;

import com.alibaba.fastjson.JSONObject;
import java.util.concurrent.atomic.AtomicBoolean;

/** Something the harness runs under an id: a producer or a consumer scenario. */
interface Worker {
    String id();

    void stop();

    default void release() {
        throw new IllegalStateException(id() + " has nothing to release");
    }

    default JSONObject status(String type) {
        return Events.event(type, id());
    }

    /** A producer on its own thread; stop() ends it after the current send. */
    final class ProducerWorker implements Worker {
        private final String id;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread thread;

        ProducerWorker(String namesrv, JSONObject command) {
            this.id = command.getString("id");
            this.thread = new Thread(() -> Producers.produce(namesrv, command, stop), "produce-" + id);
            this.thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public void stop() {
            stop.set(true);
            try {
                thread.join(15000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
