package ducc.spike;

import java.util.HashMap;
import java.util.Map;

import org.apache.uima.aae.client.UimaAsynchronousEngine;
import org.apache.uima.adapter.jms.client.BaseUIMAAsynchronousEngine_impl;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.Type;
import org.apache.uima.resource.metadata.ProcessingResourceMetaData;

/**
 * Spike: a UIMA-AS client over Debian's UIMA-AS 2.3.1.
 *
 * <pre>
 * SpikeClient BROKER_URL QUEUE meta [TIMEOUT_MS] [N]      getMeta only (the "alive" check of DUCC's UIMA-AS pinger), N times, a new engine each time
 * SpikeClient BROKER_URL QUEUE process TEXT [N] [TIMEOUT_MS]  getMeta, then N CASes (sendAndReceiveCAS)
 * </pre>
 *
 * Prints one line per step with its time in ms; exit code 0 when everything
 * answered, 1 when not (the exception's class and message are printed).
 */
public final class SpikeClient {
  private SpikeClient() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: SpikeClient BROKER_URL QUEUE meta [TIMEOUT_MS] | process TEXT [N] [TIMEOUT_MS]");
      System.exit(2);
    }
    String broker = args[0], queue = args[1], mode = args[2];
    int timeout = 5000, n = 1;
    String text = "";
    if (mode.equals("meta")) {
      if (args.length > 3) timeout = Integer.parseInt(args[3]);
      if (args.length > 4) n = Integer.parseInt(args[4]);
      for (int i = 1; i < n; i++) { // the warm rounds; the last one runs below
        BaseUIMAAsynchronousEngine_impl e = new BaseUIMAAsynchronousEngine_impl();
        long t = System.nanoTime();
        try {
          e.initialize(context(broker, queue, timeout));
          System.out.println("getmeta-ms " + ms(t));
        } catch (Exception x) {
          System.out.println("getmeta failed-after-ms " + ms(t) + " " + x);
        }
        e.stop();
      }
    } else {
      text = args.length > 3 ? args[3] : "hello UIMA-AS world";
      if (args.length > 4) n = Integer.parseInt(args[4]);
      if (args.length > 5) timeout = Integer.parseInt(args[5]);
    }
    long jvmStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
    System.out.println("jvm-to-main-ms " + (System.currentTimeMillis() - jvmStart));

    BaseUIMAAsynchronousEngine_impl engine = new BaseUIMAAsynchronousEngine_impl();
    Map<String, Object> ctx = context(broker, queue, timeout);
    int rc = 0;
    long t0 = System.nanoTime();
    try {
      // initialize() connects, sends a GetMeta request to QUEUE and waits for
      // the answer up to GetMetaTimeout: it is the "alive" check.
      engine.initialize(ctx);
      System.out.println("getmeta-ms " + ms(t0));
      ProcessingResourceMetaData md = engine.getMetaData();
      System.out.println("service-name " + md.getName());
      if (mode.equals("process")) {
        Type word = null;
        for (int i = 0; i < n; i++) {
          CAS cas = engine.getCAS();
          cas.setDocumentText(text);
          long t1 = System.nanoTime();
          engine.sendAndReceiveCAS(cas);
          long took = ms(t1);
          if (word == null) word = cas.getTypeSystem().getType("ducc.test.Word");
          int words = word == null ? -1 : cas.getAnnotationIndex(word).size();
          System.out.println("process-ms " + took + " words " + words);
          cas.release();
        }
      }
    } catch (Exception e) {
      System.out.println("failed-after-ms " + ms(t0) + " " + e.getClass().getName() + ": " + e.getMessage());
      Throwable c = e.getCause();
      while (c != null) {
        System.out.println("  cause " + c.getClass().getName() + ": " + c.getMessage());
        c = c.getCause();
      }
      rc = 1;
    }
    long t2 = System.nanoTime();
    try {
      engine.stop();
    } catch (Exception e) {
      System.out.println("stop failed: " + e);
    }
    System.out.println("stop-ms " + ms(t2));
    System.out.println("total-jvm-ms " + (System.currentTimeMillis() - jvmStart));
    System.exit(rc);
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

  private static long ms(long since) {
    return (System.nanoTime() - since) / 1_000_000;
  }
}
