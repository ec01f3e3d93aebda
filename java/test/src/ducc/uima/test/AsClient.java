package ducc.uima.test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.uima.aae.client.UimaAsynchronousEngine;
import org.apache.uima.adapter.jms.client.BaseUIMAAsynchronousEngine_impl;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.Type;

/**
 * A test UIMA-AS client (Debian's UIMA-AS 2.3.1) for the end-to-end tests
 * of UIMA-AS services (e2e/uimaas_e2e_test.go).
 *
 * <pre>
 * AsClient process BROKER QUEUE TEXT    one CAS through the service: prints "words N" (ducc.test.Word annotations)
 * AsClient ping [TIMEOUT_MS]            a ducc command pinger: reads the ping state on standard input, getMeta on
 *                                       $DUCC_SERVICE_ENDPOINT (UIMA-AS:QUEUE:BROKER), prints {"alive": ..., "info": ...}
 * </pre>
 *
 * The ping is the alive check of DUCC's default UIMA-AS pinger (a getMeta
 * round trip); it stands in until ducc ships that pinger. Put
 * dist/ducc-uima.jar first on its class path: Debian's UIMA-AS client
 * checks the service's reply against the same stale version constant as
 * the service does, and ducc-uima.jar's UimaAsVersion answers it.
 */
public final class AsClient {
    private AsClient() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 4 && args[0].equals("process")) {
            System.exit(process(args[1], args[2], args[3]));
        }
        if (args.length >= 1 && args[0].equals("ping")) {
            int timeout = args.length > 1 ? Integer.parseInt(args[1]) : 5000;
            System.exit(ping(timeout));
        }
        System.err.println("usage: AsClient process BROKER QUEUE TEXT | ping [TIMEOUT_MS]");
        System.exit(2);
    }

    static int process(String broker, String queue, String text) {
        BaseUIMAAsynchronousEngine_impl engine = new BaseUIMAAsynchronousEngine_impl();
        try {
            engine.initialize(context(broker, queue, 20000));
            CAS cas = engine.getCAS();
            cas.setDocumentText(text);
            engine.sendAndReceiveCAS(cas);
            Type word = cas.getTypeSystem().getType("ducc.test.Word");
            System.out.println("words " + (word == null ? -1 : cas.getAnnotationIndex(word).size()));
            cas.release();
            return 0;
        } catch (Exception e) {
            System.out.println("failed: " + describe(e));
            return 1;
        } finally {
            stop(engine);
        }
    }

    static int ping(int timeout) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        in.readLine(); // the ping state: this pinger needs only the endpoint
        String ep = System.getenv("DUCC_SERVICE_ENDPOINT");
        String p = "UIMA-AS:";
        int c = ep == null ? -1 : ep.indexOf(':', p.length());
        if (c < 0 || !ep.startsWith(p)) {
            System.out.println("{\"alive\": false, \"info\": " + quote("endpoint " + ep + " is not UIMA-AS:QUEUE:BROKER") + "}");
            return 0;
        }
        String queue = ep.substring(p.length(), c), broker = ep.substring(c + 1);
        BaseUIMAAsynchronousEngine_impl engine = new BaseUIMAAsynchronousEngine_impl();
        long t0 = System.nanoTime();
        try {
            engine.initialize(context(broker, queue, timeout));
            System.out.println("{\"alive\": true, \"healthy\": true, \"info\": " + quote("getMeta of " + queue + " answered in "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms") + "}");
        } catch (Exception e) {
            System.out.println("{\"alive\": false, \"info\": " + quote("getMeta of " + queue + " on " + broker + " failed: " + describe(e)) + "}");
        } finally {
            stop(engine);
        }
        return 0;
    }

    private static void stop(BaseUIMAAsynchronousEngine_impl engine) {
        try {
            engine.stop();
        } catch (Exception e) {
            // the answer is out already
        }
    }

    private static Map<String, Object> context(String broker, String queue, int timeout) {
        Map<String, Object> ctx = new HashMap<>();
        ctx.put(UimaAsynchronousEngine.ServerUri, broker);
        ctx.put(UimaAsynchronousEngine.Endpoint, queue);
        ctx.put(UimaAsynchronousEngine.GetMetaTimeout, timeout);
        ctx.put(UimaAsynchronousEngine.Timeout, timeout);
        ctx.put(UimaAsynchronousEngine.CpcTimeout, timeout);
        ctx.put(UimaAsynchronousEngine.CasPoolSize, 1);
        return ctx;
    }

    private static String describe(Throwable e) {
        StringBuilder b = new StringBuilder(e.getClass().getSimpleName() + ": " + e.getMessage());
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            b.append("; ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return b.toString();
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
}
