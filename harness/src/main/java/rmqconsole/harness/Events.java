package rmqconsole.harness;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.PrintStream;

/** One JSON object per line on the real stdout; the Python side reads them as events. */
final class Events {
    private static final PrintStream OUT = System.out;

    private Events() {
    }

    static JSONObject event(String type, String id) {
        JSONObject event = new JSONObject(true);
        event.put("event", type);
        if (id != null) {
            event.put("id", id);
        }
        return event;
    }

    static synchronized void emit(JSONObject event) {
        OUT.println(JSON.toJSONString(event));
        OUT.flush();
    }

    static void error(String id, String message, Throwable cause) {
        JSONObject event = event("error", id);
        event.put("message", message);
        if (cause != null) {
            event.put("cause", cause.toString());
        }
        emit(event);
    }
}
