package ducc.spike;

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
 * Spike: a UIMA-AS pinger with the behaviour DUCC documents for its default
 * one, run by ducc's PingerHost (dist/ducc-pinger.jar). Endpoint
 * UIMA-AS:QUEUE:BROKER_URL; arguments "meta-timeout=MS,broker-jmx-port=N"
 * (N "none": no JMX). Each ping: the queue's statistics over JMX (the
 * broker's host, port N), then a getMeta with meta-timeout (a new client
 * each time). Alive: getMeta answered; healthy: alive and JMX answered.
 * A producer on the queue counts as a use (getLastUse).
 */
public class UimaAsPinger extends AServicePing {
  private String queue;
  private String broker;
  private int metaTimeout = 5000;
  private String jmxHost;
  private int jmxPort = 1099; // DUCC's default
  private JMXConnector jmx;

  @Override
  public void init(String arguments, String endpoint) throws Exception {
    String[] p = endpoint.split(":", 3);
    if (p.length < 3 || !p[0].equals("UIMA-AS")) {
      throw new IllegalArgumentException("endpoint " + endpoint + " is not UIMA-AS:queue:brokerURL");
    }
    queue = p[1];
    broker = p[2];
    String b = broker.replaceFirst("^failover:\\(?", "").replaceFirst("[),].*$", "");
    jmxHost = URI.create(b).getHost();
    if (arguments != null) {
      for (String kv : arguments.split(",")) {
        String[] a = kv.trim().split("=", 2);
        if (a.length < 2) continue;
        if (a[0].equals("meta-timeout")) metaTimeout = Integer.parseInt(a[1].trim());
        if (a[0].equals("broker-jmx-port")) jmxPort = a[1].trim().equals("none") ? -1 : Integer.parseInt(a[1].trim());
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
    boolean jmxOk = jmxPort < 0;
    if (jmxPort >= 0) {
      try {
        stats = queueStats();
        jmxOk = true;
      } catch (Exception e) {
        closeJmx();
        stats = "JMX " + jmxHost + ":" + jmxPort + " failed: " + e;
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
      meta = "cannot issue getMeta to " + queue + ":" + broker + ": " + c.getClass().getSimpleName()
          + (c.getMessage() == null ? "" : ": " + c.getMessage());
    } finally {
      try {
        engine.stop();
      } catch (Exception e) {
        doLog("getStatistics", "stop:", e);
      }
    }
    st.setHealthy(st.isAlive() && jmxOk);
    st.setInfo(stats == null ? meta : meta + "; " + stats);
    return st;
  }

  @Override
  public long getLastUse() {
    return last_use;
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
