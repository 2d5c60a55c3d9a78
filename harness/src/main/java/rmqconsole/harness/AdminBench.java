package rmqconsole.harness;

import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The Java baseline of the snapshot benchmark: what rocketmq-dashboard does to list groups,
 * examineConsumeStats + examineConsumerConnectionInfo per group on a thread pool.
 * Usage: AdminBench <namesrv> <group-prefix> <count> <threads,threads,...> <rounds>
 * Prints one JSON line per thread count with the best of `rounds` runs.
 */
public final class AdminBench {
    private AdminBench() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String prefix = args[1];
        int count = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[4]);
        List<String> groups = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            groups.add(String.format("%s%04d", prefix, i));
        }
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("admin-bench-" + System.nanoTime());
        admin.start();
        try {
            run(admin, groups, 4);  // warm up the JIT and the connections
            for (String t : args[3].split(",")) {
                int threads = Integer.parseInt(t.trim());
                double best = Double.MAX_VALUE;
                int errors = 0;
                for (int r = 0; r < rounds; r++) {
                    long started = System.nanoTime();
                    errors = run(admin, groups, threads);
                    best = Math.min(best, (System.nanoTime() - started) / 1e9);
                }
                JSONObject result = new JSONObject(true);
                result.put("threads", threads);
                result.put("groups", count);
                result.put("seconds", best);
                result.put("groupsPerSecond", count / best);
                result.put("errors", errors);
                System.out.println(result.toJSONString());
                System.out.flush();
            }
        } finally {
            admin.shutdown();
        }
        Runtime.getRuntime().halt(0);
    }

    private static int run(DefaultMQAdminExt admin, List<String> groups, int threads) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicInteger errors = new AtomicInteger();
        List<Future<?>> futures = new ArrayList<>();
        for (String group : groups) {
            futures.add(pool.submit(() -> {
                try {
                    admin.examineConsumeStats(group);
                } catch (Exception e) {
                    errors.incrementAndGet();
                }
                try {
                    admin.examineConsumerConnectionInfo(group);
                } catch (MQBrokerException e) {
                    if (e.getResponseCode() != ResponseCode.CONSUMER_NOT_ONLINE) {
                        errors.incrementAndGet();
                    }
                } catch (Exception e) {
                    errors.incrementAndGet();
                }
            }));
        }
        for (Future<?> f : futures) {
            f.get();
        }
        pool.shutdown();
        return errors.get();
    }
}
