package rmqconsole.harness;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs real mqadmin commands, one per stdin line ({"args":["consumerProgress","-n",...]}),
 * in one JVM: the same MQAdminStartup code path as the mqadmin script, without paying a JVM
 * start and a 3 s client shutdown per call. Answers {"out":..., "err":..., "millis":...}.
 */
public final class MQAdminServer {
    private MQAdminServer() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        realOut.println("{\"event\":\"ready\"}");
        realOut.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String[] argv = JSON.parseObject(line).getJSONArray("args").toArray(new String[0]);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            long started = System.nanoTime();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            try {
                MQAdminStartup.main0(argv, null);
            } catch (Throwable t) {
                t.printStackTrace(System.err);
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            JSONObject answer = new JSONObject(true);
            answer.put("out", out.toString(StandardCharsets.UTF_8));
            answer.put("err", err.toString(StandardCharsets.UTF_8));
            answer.put("millis", (System.nanoTime() - started) / 1_000_000);
            realOut.println(JSON.toJSONString(answer));
            realOut.flush();
        }
        Runtime.getRuntime().halt(0);
    }
}
