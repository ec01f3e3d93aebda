package ducc.spike;

import java.util.HashMap;
import java.util.Map;

import org.apache.uima.aae.client.UimaAsynchronousEngine;
import org.apache.uima.adapter.jms.client.BaseUIMAAsynchronousEngine_impl;

/**
 * Spike: UIMA-AS's own DD deployment, BaseUIMAAsynchronousEngine_impl.deploy(dd, ctx),
 * which runs Saxon over dd2spring.xsl. Debian ships neither that XSL nor (by
 * default) Saxon: this takes their paths.
 *
 * <pre>
 * DeployWithDd2spring DD.xml DD2SPRING_XSL SAXON_JAR    (-DdefaultBrokerURL=... for ${defaultBrokerURL})
 * </pre>
 */
public final class DeployWithDd2spring {
  private DeployWithDd2spring() {}

  public static void main(String[] args) throws Exception {
    long jvmStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
    Map<String, Object> ctx = new HashMap<>();
    ctx.put(UimaAsynchronousEngine.DD2SpringXsltFilePath, args[1]);
    ctx.put(UimaAsynchronousEngine.SaxonClasspath, "file:" + args[2]);
    BaseUIMAAsynchronousEngine_impl engine = new BaseUIMAAsynchronousEngine_impl();
    long t0 = System.nanoTime();
    String id = engine.deploy(args[0], ctx);
    System.out.println("deployed " + id + " in-ms " + (System.nanoTime() - t0) / 1_000_000
        + " since-jvm-start-ms " + (System.currentTimeMillis() - jvmStart));
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        engine.undeploy(id);
      } catch (Exception e) {
        System.out.println("undeploy failed: " + e);
      }
    }));
    Thread.currentThread().join();
  }
}
