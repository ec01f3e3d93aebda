package ducc.spike;

import java.util.Set;

import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Spike: an ActiveMQ 5.17 queue's statistics over JMX (JDK only, no
 * ActiveMQ jar needed).
 *
 * <pre>
 * QueueStats JMX_HOST:PORT [QUEUE...]    (no QUEUE: every queue of every broker)
 * </pre>
 *
 * One line per queue: name, depth (QueueSize), consumers, producers,
 * enqueued, dequeued, dispatched, in flight, expired, enqueue time
 * (average, min, max, ms: how long messages waited in the queue), memory
 * use. This is what DUCC's UIMA-AS pinger reads for its "info".
 */
public final class QueueStats {
  private QueueStats() {}

  private static final String[] ATTRS = {
    "QueueSize", "ConsumerCount", "ProducerCount", "EnqueueCount", "DequeueCount",
    "DispatchCount", "InFlightCount", "ExpiredCount", "AverageEnqueueTime",
    "MinEnqueueTime", "MaxEnqueueTime", "MemoryUsageByteCount",
  };

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: QueueStats JMX_HOST:PORT [QUEUE...]");
      System.exit(2);
    }
    long t0 = System.nanoTime();
    JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://" + args[0] + "/jmxrmi");
    try (JMXConnector c = JMXConnectorFactory.connect(url)) {
      MBeanServerConnection mbs = c.getMBeanServerConnection();
      System.out.println("connect-ms " + (System.nanoTime() - t0) / 1_000_000);
      long t1 = System.nanoTime();
      Set<ObjectName> names;
      if (args.length == 1) {
        names = mbs.queryNames(new ObjectName("org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=*"), null);
      } else {
        names = new java.util.LinkedHashSet<>();
        for (int i = 1; i < args.length; i++) {
          names.addAll(mbs.queryNames(new ObjectName(
              "org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=" + ObjectName.quote(args[i]).replaceAll("^\"|\"$", "")), null));
        }
      }
      for (ObjectName n : names) {
        StringBuilder sb = new StringBuilder(n.getKeyProperty("destinationName"));
        for (javax.management.Attribute a : mbs.getAttributes(n, ATTRS).asList()) {
          sb.append(' ').append(a.getName()).append('=').append(a.getValue());
        }
        System.out.println(sb);
      }
      System.out.println("query-ms " + (System.nanoTime() - t1) / 1_000_000 + " queues " + names.size());
    }
  }
}
