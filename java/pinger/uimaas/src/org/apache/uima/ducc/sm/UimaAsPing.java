package org.apache.uima.ducc.sm;

import java.net.ConnectException;
import java.net.URI;
import java.util.HashMap;
import java.util.Map;

import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

import org.apache.uima.aae.client.UimaAsynchronousEngine;
import org.apache.uima.adapter.jms.client.BaseUIMAAsynchronousEngine_impl;
import org.apache.uima.ducc.cli.AServicePing;
import org.apache.uima.ducc.cli.ServiceStatistics;
import org.apache.uima.ducc.common.IServiceStatistics;

/**
 * ducc's default pinger of UIMA-AS services (DUCC's name; docs/services.md,
 * "The UIMA-AS pinger"), run by ducc's pinger host like any Java pinger.
 * Endpoint UIMA-AS:QUEUE:BROKER_URL; service_ping_arguments, comma
 * separated: meta-timeout=MS (default 5000) and broker-jmx-port=N (default
 * 1099, DUCC's; "none": no statistics). Each ping:
 *
 * <ul>
 * <li>alive: a UIMA-AS getMeta on the queue is answered within
 *     meta-timeout (a new client each time, as DUCC's pinger does);
 * <li>the queue's statistics from the broker's JMX (the broker URL's host,
 *     port N): queue depth, average enqueue time, consumers, producers,
 *     ... in the info, as DUCC shows them;
 * <li>healthy: alive, and the statistics could be read where the broker
 *     offers JMX (a broker that refuses JMX connections offers none: then
 *     healthy is alive, and the info says so);
 * <li>last use: now, when the queue has a producer at ping time.
 * </ul>
 */
public class UimaAsPing extends AServicePing {
  private String queue;
  private String broker;
  private int metaTimeout = 5000;
  private String jmxHost;
  private int jmxPort = 1099;
  private JMXConnector jmx;

  @Override
  public void init(String arguments, String endpoint) throws Exception {
    String[] p = endpoint == null ? new String[0] : endpoint.split(":", 3);
    if (p.length < 3 || !p[0].equalsIgnoreCase("UIMA-AS") || p[1].isEmpty() || p[2].isEmpty()) {
      throw new IllegalArgumentException("endpoint " + endpoint + " is not UIMA-AS:queue:brokerURL");
    }
    queue = p[1];
    broker = p[2];
    String b = broker.replaceFirst("^failover:\\(?", "").replaceFirst("[),].*$", "");
    jmxHost = URI.create(b).getHost();
    if (jmxHost == null) {
      jmxHost = "127.0.0.1";
    }
    if (arguments != null) {
      for (String kv : arguments.split("[,\\s]+")) {
        String[] a = kv.trim().split("=", 2);
        if (a[0].isEmpty()) {
          continue;
        }
        String v = a.length > 1 ? a[1].trim() : "";
        switch (a[0]) {
          case "meta-timeout":
            metaTimeout = Integer.parseInt(v);
            break;
          case "broker-jmx-port":
            jmxPort = v.equals("none") ? -1 : Integer.parseInt(v);
            break;
          default:
            throw new IllegalArgumentException("unknown argument " + a[0] + " (UimaAsPing takes meta-timeout=MS and broker-jmx-port=N|none)");
        }
      }
    }
    doLog("init", "queue", queue, "broker", broker, "jmx", jmxHost + ":" + jmxPort, "meta-timeout", metaTimeout);
  }

  @Override
  public void stop() {
    closeJmx();
  }

  @Override
  public IServiceStatistics getStatistics() {
    ServiceStatistics st = new ServiceStatistics(false, false, "<NA>");
    String stats = null;
    boolean statsOk = jmxPort < 0;
    if (jmxPort >= 0) {
      try {
        stats = queueStats();
        statsOk = true;
      } catch (Exception e) {
        closeJmx();
        boolean offered = !refused(e);
        statsOk = !offered;
        stats = offered ? "JMX " + jmxHost + ":" + jmxPort + " failed: " + e
            : "no queue statistics (the broker offers no JMX at " + jmxHost + ":" + jmxPort + ")";
      }
    }
    long t0 = System.nanoTime();
    BaseUIMAAsynchronousEngine_impl engine = new BaseUIMAAsynchronousEngine_impl();
    Map<String, Object> ctx = new HashMap<>();
    ctx.put(UimaAsynchronousEngine.ServerUri, broker);
    ctx.put(UimaAsynchronousEngine.Endpoint, queue);
    ctx.put(UimaAsynchronousEngine.GetMetaTimeout, metaTimeout);
    String meta;
    try {
      engine.initialize(ctx);
      st.setAlive(true);
      meta = "getMeta " + (System.nanoTime() - t0) / 1_000_000 + " ms";
    } catch (Exception e) {
      Throwable c = e.getCause() != null ? e.getCause() : e;
      meta = "no getMeta answer from " + queue + " at " + broker + ": " + c.getClass().getSimpleName()
          + (c.getMessage() == null ? "" : ": " + c.getMessage());
    } finally {
      try {
        engine.stop();
      } catch (Exception e) {
        doLog("getStatistics", "stop:", e);
      }
    }
    st.setHealthy(st.isAlive() && statsOk);
    st.setInfo(stats == null ? meta : meta + "; " + stats);
    return st;
  }

  @Override
  public long getLastUse() {
    return last_use;
  }

  /** Whether the JMX connection was refused: the broker offers no JMX there. */
  private static boolean refused(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return true;
      }
    }
    return false;
  }

  private String queueStats() throws Exception {
    if (jmx == null) {
      jmx = JMXConnectorFactory.connect(new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + jmxHost + ":" + jmxPort + "/jmxrmi"));
    }
    MBeanServerConnection mbs = jmx.getMBeanServerConnection();
    ObjectName q = null;
    for (ObjectName n : mbs.queryNames(new ObjectName(
        "org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=" + queue), null)) {
      q = n;
    }
    if (q == null) {
      return "queue " + queue + " not on the broker";
    }
    long producers = ((Number) mbs.getAttribute(q, "ProducerCount")).longValue();
    if (producers > 0) {
      last_use = System.currentTimeMillis();
    }
    return String.format("QDEPTH[%s] AveNQ[%.1f] Consum[%s] Prod[%s] minNQ[%s] maxNQ[%s] expCnt[%s] inFlt[%s] DQ[%s] NQ[%s] Disp[%s]",
        mbs.getAttribute(q, "QueueSize"), ((Number) mbs.getAttribute(q, "AverageEnqueueTime")).doubleValue(),
        mbs.getAttribute(q, "ConsumerCount"), producers, mbs.getAttribute(q, "MinEnqueueTime"),
        mbs.getAttribute(q, "MaxEnqueueTime"), mbs.getAttribute(q, "ExpiredCount"), mbs.getAttribute(q, "InFlightCount"),
        mbs.getAttribute(q, "DequeueCount"), mbs.getAttribute(q, "EnqueueCount"), mbs.getAttribute(q, "DispatchCount"));
  }

  private void closeJmx() {
    if (jmx != null) {
      try {
        jmx.close();
      } catch (Exception e) {
        // gone already
      }
      jmx = null;
    }
  }
}
