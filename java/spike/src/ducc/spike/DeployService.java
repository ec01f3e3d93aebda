package ducc.spike;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import javax.xml.parsers.DocumentBuilderFactory;

import org.apache.uima.adapter.jms.client.BaseUIMAAsynchronousEngine_impl;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Spike: deploys a UIMA-AS service from a deployment descriptor (DD) with
 * Debian's UIMA-AS 2.3.1, without dd2spring.xsl and Saxon (Debian ships
 * neither): reads the DD itself, writes the Spring context UIMA-AS would
 * have generated for it, and deploys that.
 *
 * <pre>
 * DeployService DD.xml [-brokerURL URL]     (URL default: $defaultBrokerURL, else tcp://localhost:61616)
 * </pre>
 *
 * Only what a top-level primitive (or a synchronous aggregate, async
 * false) needs: inputQueue (endpoint, brokerURL, prefetch),
 * topDescriptor (import location or name), scaleout, casPool. Refused:
 * async aggregates, remote delegates, CAS multipliers, error
 * configuration. Runs until SIGTERM/SIGINT, then undeploys (quiesce).
 */
public final class DeployService {
  private DeployService() {}

  /** Reaches the protected deploySpringContainer. */
  static final class Engine extends BaseUIMAAsynchronousEngine_impl {
    String deploy(String springFile) throws Exception {
      return deploySpringContainer(new String[] {springFile});
    }
  }

  public static void main(String[] args) throws Exception {
    long jvmStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
    if (args.length < 1) {
      System.err.println("usage: DeployService DD.xml [-brokerURL URL]");
      System.exit(2);
    }
    String broker = System.getProperty("defaultBrokerURL", "tcp://localhost:61616");
    for (int i = 1; i + 1 < args.length; i += 2) {
      if (args[i].equals("-brokerURL")) broker = args[i + 1];
    }
    File dd = new File(args[0]).getAbsoluteFile();
    String spring;
    try {
      spring = springContext(dd, broker);
    } catch (IllegalArgumentException e) {
      System.err.println("DeployService: " + dd + ": " + e.getMessage());
      System.exit(2);
      return;
    }
    File f = File.createTempFile("ducc-uimaas-", ".xml");
    f.deleteOnExit();
    Files.writeString(f.toPath(), spring, StandardCharsets.UTF_8);
    System.out.println("spring-context " + f);

    long t0 = System.nanoTime();
    Engine engine = new Engine();
    String id = engine.deploy(f.getPath());
    System.out.println("deployed " + id + " in-ms " + (System.nanoTime() - t0) / 1_000_000
        + " since-jvm-start-ms " + (System.currentTimeMillis() - jvmStart));
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      long t1 = System.nanoTime();
      try {
        engine.undeploy(id);
      } catch (Exception e) {
        System.out.println("undeploy failed: " + e);
      }
      System.out.println("undeployed in-ms " + (System.nanoTime() - t1) / 1_000_000);
    }));
    Thread.currentThread().join(); // until a signal
  }

  /** The Spring context for dd; IllegalArgumentException for what the spike does not do. */
  static String springContext(File dd, String broker) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setNamespaceAware(true);
    Document doc = f.newDocumentBuilder().parse(dd);
    Element deployment = one(doc.getDocumentElement(), "deployment");
    Element service = one(deployment, "service");
    Element input = one(service, "inputQueue");
    String queue = input.getAttribute("endpoint");
    if (queue.isEmpty()) throw new IllegalArgumentException("inputQueue has no endpoint");
    String url = input.getAttribute("brokerURL");
    if (url.isEmpty() || url.equals("${defaultBrokerURL}")) url = broker;
    if (url.contains("${")) throw new IllegalArgumentException("brokerURL " + url + ": only ${defaultBrokerURL} is known");
    String prefetch = input.getAttribute("prefetch").isEmpty() ? "0" : input.getAttribute("prefetch");

    Element imp = one(one(service, "topDescriptor"), "import");
    String descriptor;
    if (!imp.getAttribute("location").isEmpty()) {
      File d = new File(imp.getAttribute("location"));
      if (!d.isAbsolute()) d = new File(dd.getParentFile(), imp.getAttribute("location"));
      descriptor = d.getPath();
    } else if (!imp.getAttribute("name").isEmpty()) {
      descriptor = "*importByName:" + imp.getAttribute("name");
    } else {
      throw new IllegalArgumentException("topDescriptor's import has neither location nor name");
    }

    Element ae = optional(service, "analysisEngine");
    String key = ae != null && !ae.getAttribute("key").isEmpty() ? ae.getAttribute("key") : queue;
    int scaleout = 1;
    if (ae != null) {
      if (ae.getAttribute("async").equals("true") || ae.getAttribute("async").equals("yes")) {
        throw new IllegalArgumentException("async aggregates are not in the spike (async=\"true\")");
      }
      if (ae.getElementsByTagNameNS("*", "remoteAnalysisEngine").getLength() > 0) {
        throw new IllegalArgumentException("remote delegates are not in the spike");
      }
      if (optional(ae, "casMultiplier") != null) {
        throw new IllegalArgumentException("CAS multipliers are not in the spike");
      }
      Element s = optional(ae, "scaleout");
      if (s != null && !s.getAttribute("numberOfInstances").isEmpty()) {
        scaleout = Integer.parseInt(s.getAttribute("numberOfInstances"));
      }
    }
    int cases = scaleout;
    Element pool = optional(deployment, "casPool");
    if (pool != null && !pool.getAttribute("numberOfCASes").isEmpty()) {
      cases = Math.max(scaleout, Integer.parseInt(pool.getAttribute("numberOfCASes")));
    }

    String n = Integer.toString(scaleout);
    StringBuilder b = new StringBuilder();
    b.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .append("<beans xmlns=\"http://www.springframework.org/schema/beans\"")
        .append(" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"")
        // resolved offline, from spring-beans' META-INF/spring.schemas
        .append(" xsi:schemaLocation=\"http://www.springframework.org/schema/beans")
        .append(" http://www.springframework.org/schema/beans/spring-beans-3.0.xsd\">\n");
    bean(b, "prefetchPolicy", "org.apache.activemq.ActiveMQPrefetchPolicy", "<property name=\"queuePrefetch\" value=\"" + x(prefetch) + "\"/>");
    bean(b, "brokerFactory", "org.apache.activemq.ActiveMQConnectionFactory",
        "<property name=\"brokerURL\" value=\"" + x(url) + "\"/><property name=\"prefetchPolicy\" ref=\"prefetchPolicy\"/>");
    b.append("<bean id=\"resourceManager\" class=\"org.apache.uima.aae.UimaClassFactory\" factory-method=\"produceResourceManager\"/>\n");
    bean(b, "casManager", "org.apache.uima.aae.AsynchAECasManager_impl",
        "<constructor-arg index=\"0\" ref=\"resourceManager\"/><property name=\"casPoolSize\" value=\"" + cases
            + "\"/><property name=\"initialFsHeapSize\" value=\"2000000\"/>");
    bean(b, "inProcessCache", "org.apache.uima.aae.InProcessCache", "");
    bean(b, "inputQueue", "org.apache.activemq.command.ActiveMQQueue", "<constructor-arg index=\"0\" value=\"" + x(queue) + "\"/>");
    b.append("<bean id=\"controller\" class=\"org.apache.uima.aae.controller.PrimitiveAnalysisEngineController_impl\" init-method=\"initialize\">")
        .append("<constructor-arg index=\"0\"><null/></constructor-arg>")
        .append("<constructor-arg index=\"1\" value=\"").append(x(key)).append("\"/>")
        .append("<constructor-arg index=\"2\" value=\"").append(x(descriptor)).append("\"/>")
        .append("<constructor-arg index=\"3\" ref=\"casManager\"/><constructor-arg index=\"4\" ref=\"inProcessCache\"/>")
        .append("<constructor-arg index=\"5\" value=\"10\"/><constructor-arg index=\"6\" value=\"").append(n).append("\"/>")
        .append("<property name=\"outputChannel\" ref=\"outputChannel\"/></bean>\n");
    bean(b, "taskExecutor", "org.springframework.scheduling.concurrent.ThreadPoolTaskExecutor",
        "<property name=\"corePoolSize\" value=\"" + n + "\"/><property name=\"maxPoolSize\" value=\"" + n
            + "\"/><property name=\"queueCapacity\" value=\"" + n + "\"/>");
    bean(b, "metaHandler", "org.apache.uima.aae.handler.input.MetadataRequestHandler_impl",
        "<constructor-arg index=\"0\" value=\"MetadataRequestHandler\"/><property name=\"controller\" ref=\"controller\"/><property name=\"delegate\" ref=\"processHandler\"/>");
    bean(b, "processHandler", "org.apache.uima.aae.handler.input.ProcessRequestHandler_impl",
        "<constructor-arg index=\"0\" value=\"ProcessRequestHandler\"/><property name=\"controller\" ref=\"controller\"/>");
    bean(b, "inputChannel", "org.apache.uima.adapter.jms.activemq.JmsInputChannel",
        "<property name=\"messageHandler\" ref=\"metaHandler\"/><property name=\"endpointName\" value=\"inputQueue\"/>"
            + "<property name=\"controller\" ref=\"controller\"/><property name=\"listenerContainer\" ref=\"processListener\"/>");
    // Process and CPC requests: scaleout consumers on the pinned pool; GetMeta: one consumer of its own.
    listener(b, "processListener", n, "Command=2000 OR Command=2002", true);
    listener(b, "metaListener", "1", "Command=2001", false);
    bean(b, "outputChannel\" init-method=\"initialize", "org.apache.uima.adapter.jms.activemq.JmsOutputChannel",
        "<property name=\"serviceInputEndpoint\" value=\"" + x(queue) + "\"/><property name=\"controller\" ref=\"controller\"/>");
    return b.append("</beans>\n").toString();
  }

  private static void listener(StringBuilder b, String id, String consumers, String selector, boolean pool) {
    bean(b, id, "org.apache.uima.adapter.jms.activemq.UimaDefaultMessageListenerContainer",
        (pool ? "<property name=\"taskExecutor\" ref=\"taskExecutor\"/>" : "")
            + "<property name=\"concurrentConsumers\" value=\"" + consumers + "\"/>"
            + "<property name=\"destination\" ref=\"inputQueue\"/><property name=\"messageListener\" ref=\"inputChannel\"/>"
            + "<property name=\"connectionFactory\" ref=\"brokerFactory\"/><property name=\"messageSelector\" value=\"" + x(selector) + "\"/>");
  }

  private static void bean(StringBuilder b, String id, String cls, String body) {
    b.append("<bean id=\"").append(id).append("\" class=\"").append(cls).append("\">").append(body).append("</bean>\n");
  }

  private static String x(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace("\"", "&quot;");
  }

  private static Element optional(Element parent, String name) {
    NodeList l = parent.getElementsByTagNameNS("*", name);
    for (int i = 0; i < l.getLength(); i++) {
      if (l.item(i).getParentNode() == parent) return (Element) l.item(i);
    }
    return null;
  }

  private static Element one(Element parent, String name) {
    Element e = optional(parent, name);
    if (e == null) throw new IllegalArgumentException("<" + parent.getLocalName() + "> has no <" + name + ">");
    return e;
  }
}
