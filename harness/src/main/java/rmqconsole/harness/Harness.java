package rmqconsole.harness;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Traffic for tests and the demo. Reads one JSON command per line on stdin:
 *   {"cmd":"produce", "id":..., "topic":..., "count":...}          see Producers
 *   {"cmd":"consume", "id":..., "group":..., "topic":..., "mode":...} see Scenario
 *   {"cmd":"grpc-consume", "id":..., "endpoint":..., "kind":"simple|push", ...} see GrpcScenario
 *   {"cmd":"stop", "id":...}      shut one consumer down (its offsets are persisted)
 *   {"cmd":"release", "id":...}   let a stalled consumer go on
 *   {"cmd":"status", "id":...}    counts so far
 *   {"cmd":"ping"} / {"cmd":"exit"}
 * and writes one JSON event per line on stdout. Closing stdin also exits.
 */
public final class Harness {
    private final String namesrv;
    private final Map<String, Worker> workers = new ConcurrentHashMap<>();

    private Harness(String namesrv) {
        this.namesrv = namesrv;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Harness <namesrv-address>");
            System.exit(2);
        }
        new Harness(args[0]).run();
    }

    private void run() throws Exception {
        Events.emit(Events.event("ready", null));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JSONObject command;
            try {
                command = JSON.parseObject(line);
            } catch (RuntimeException e) {
                Events.error(null, "not a JSON command: " + line, e);
                continue;
            }
            if ("exit".equals(command.getString("cmd"))) {
                break;
            }
            handle(command);
        }
        exit();
    }

    private void handle(JSONObject command) {
        String id = command.getString("id");
        try {
            switch (command.getString("cmd")) {
                case "ping":
                    Events.emit(Events.event("pong", id));
                    break;
                case "produce":
                    // Producing runs on its own thread so consumers can be driven meanwhile.
                    Worker.ProducerWorker producer = new Worker.ProducerWorker(namesrv, command);
                    register(producer);
                    producer.start();
                    break;
                case "consume":
                    Scenario scenario = new Scenario(namesrv, command);
                    register(scenario);
                    scenario.start();
                    break;
                case "grpc-consume":
                    GrpcScenario grpc = buildGrpc(command);
                    register(grpc);
                    grpc.start();
                    break;
                case "stop":
                    worker(id).stop();
                    break;
                case "release":
                    worker(id).release();
                    break;
                case "status":
                    Events.emit(worker(id).status("status"));
                    break;
                default:
                    Events.error(id, "unknown command " + command.getString("cmd"), null);
            }
        } catch (Exception e) {
            Events.error(id, "command failed: " + command.getString("cmd"), e);
        }
    }

    /** On a loaded machine a gRPC client's start can time out (DEADLINE_EXCEEDED): try again. */
    private static GrpcScenario buildGrpc(JSONObject command) throws Exception {
        Exception last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                return new GrpcScenario(command);
            } catch (Exception e) {
                last = e;
                Thread.sleep(2000);
            }
        }
        throw last;
    }

    private void register(Worker worker) {
        if (workers.putIfAbsent(worker.id(), worker) != null) {
            throw new IllegalArgumentException("id " + worker.id() + " is already in use");
        }
    }

    private Worker worker(String id) {
        Worker worker = workers.get(id);
        if (worker == null) {
            throw new IllegalArgumentException("no producer or consumer with id " + id);
        }
        return worker;
    }

    private void exit() {
        for (Worker worker : workers.values()) {
            try {
                worker.stop();
            } catch (RuntimeException e) {
                Events.error(worker.id(), "stop failed", e);
            }
        }
        Events.emit(Events.event("exited", null));
        // A stalled listener thread never returns; halt rather than wait for it.
        Runtime.getRuntime().halt(0);
    }
}
