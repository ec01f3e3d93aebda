package ducc.uima;

import java.io.File;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * Turns a UIMA-AS deployment descriptor into the Spring context UIMA-AS
 * 2.3.1's dd2spring.xsl would generate for it, for the DDs DUCC's services
 * use: a top-level primitive, or an aggregate deployed synchronously (one
 * controller runs the whole aggregate, async="false", the default), with
 * scaleout, casPool (numberOfCASes, initialFsHeapSize) and the input
 * queue's prefetch. Refused, with why: async aggregates, remote delegates,
 * a top-level CAS multiplier. Delegate settings of a synchronous aggregate
 * (their scaleout, a CAS multiplier's poolSize) and error configurations
 * are not translated: each is named in a note the service logs.
 * (docs/decisions.md, "UIMA-AS services: our own DD translator".)
 */
final class DDTranslator {
    private DDTranslator() {}

    /** Spring's listener containers retry a lost broker this often (ms), not every 5 ms. */
    static final int RECOVERY_INTERVAL_MS = 2000;

    /** A translated DD. */
    static final class Deployment {
        String queue, broker, descriptor, spring;
        int instances;
        final List<String> notes = new ArrayList<>();
    }

    /**
     * Translates the DD read from url (named dd by the user); ${NAME} in
     * the input queue's attributes is resolved from props.
     */
    static Deployment translate(Document doc, URL url, String dd, Properties props) {
        Element root = doc.getDocumentElement();
        if (!"analysisEngineDeploymentDescription".equals(root.getLocalName())) {
            throw bad(dd, "is a <" + root.getLocalName() + ">, not a UIMA-AS <analysisEngineDeploymentDescription>");
        }
        Deployment d = new Deployment();
        Element deployment = one(dd, root, "deployment");
        Element service = one(dd, deployment, "service");
        Element input = one(dd, service, "inputQueue");
        d.queue = resolve(dd, "inputQueue endpoint", input.getAttribute("endpoint"), props);
        if (d.queue.isEmpty()) throw bad(dd, "<inputQueue> has no endpoint (the queue's name)");
        String broker = input.getAttribute("brokerURL");
        d.broker = resolve(dd, "inputQueue brokerURL", broker.isEmpty() ? "${defaultBrokerURL}" : broker, props);
        String prefetch = input.getAttribute("prefetch").isEmpty() ? "0" : number(dd, "inputQueue prefetch", input.getAttribute("prefetch"), 0);

        Element imp = one(dd, one(dd, service, "topDescriptor"), "import");
        if (!imp.getAttribute("location").isEmpty()) {
            String loc = imp.getAttribute("location").replace('\\', '/');
            File f = new File(loc);
            if (!f.isAbsolute()) {
                if (!"file".equals(url.getProtocol())) {
                    throw bad(dd, "(found in " + url + ") imports its top descriptor by a relative location, " + loc
                            + ", which UIMA-AS cannot read from there: import it by name (<import name=\"...\"/>) or give the DD as a file");
                }
                try {
                    f = new File(new URL(url, loc).toURI());
                } catch (Exception e) {
                    throw bad(dd, "topDescriptor location " + loc + ": " + e.getMessage());
                }
            }
            d.descriptor = f.getPath();
        } else if (!imp.getAttribute("name").isEmpty()) {
            d.descriptor = "*importByName:" + imp.getAttribute("name");
        } else {
            throw bad(dd, "the <import> of <topDescriptor> has neither location nor name");
        }

        Element ae = optional(service, "analysisEngine");
        String key = d.queue;
        d.instances = 1;
        if (ae != null) {
            if (!ae.getAttribute("key").isEmpty()) key = ae.getAttribute("key");
            String async = ae.getAttribute("async").trim().toLowerCase();
            if (async.equals("true") || async.equals("yes")) {
                throw bad(dd, "deploys an async aggregate (async=\"" + ae.getAttribute("async")
                        + "\"): ducc's DD translator deploys a primitive or a synchronous aggregate (async=\"false\"); deploy it synchronously or run the delegates as services of their own");
            }
            NodeList remote = ae.getElementsByTagNameNS("*", "remoteAnalysisEngine");
            if (remote.getLength() > 0) {
                throw bad(dd, "has a remote delegate (" + ((Element) remote.item(0)).getAttribute("key")
                        + "): ducc's DD translator deploys a primitive or a synchronous aggregate; make the delegate local");
            }
            if (optional(ae, "casMultiplier") != null) {
                throw bad(dd, "deploys a CAS multiplier as the service itself: ducc's DD translator does not cover top-level CAS multipliers; put it inside an aggregate");
            }
            Element s = optional(ae, "scaleout");
            if (s != null && !s.getAttribute("numberOfInstances").isEmpty()) {
                d.instances = Integer.parseInt(number(dd, "scaleout numberOfInstances", s.getAttribute("numberOfInstances"), 1));
            }
            Element delegates = optional(ae, "delegates");
            if (delegates != null) {
                for (Node n = delegates.getFirstChild(); n != null; n = n.getNextSibling()) {
                    if (n instanceof Element) {
                        d.notes.add("the settings of delegate " + ((Element) n).getAttribute("key")
                                + " in the DD are not applied: a synchronous aggregate runs whole in each of the service's " + d.instances
                                + " instance(s) (scaleout of the top level), with UIMA's defaults for its delegates");
                    }
                }
            }
            for (String ec : new String[] {"asyncPrimitiveErrorConfiguration", "asyncAggregateErrorConfiguration"}) {
                if (ae.getElementsByTagNameNS("*", ec).getLength() > 0) {
                    d.notes.add("the DD's <" + ec + "> is not applied: ducc's DD translator leaves UIMA-AS's default error handling");
                }
            }
        }
        int cases = d.instances;
        String heap = "2000000";
        Element pool = optional(deployment, "casPool");
        if (pool != null) {
            if (!pool.getAttribute("numberOfCASes").isEmpty()) {
                cases = Math.max(d.instances, Integer.parseInt(number(dd, "casPool numberOfCASes", pool.getAttribute("numberOfCASes"), 1)));
            }
            if (!pool.getAttribute("initialFsHeapSize").isEmpty()) {
                heap = number(dd, "casPool initialFsHeapSize", pool.getAttribute("initialFsHeapSize"), 1);
            }
        }
        d.spring = spring(d, key, prefetch, cases, heap);
        return d;
    }

    private static String spring(Deployment d, String key, String prefetch, int cases, String heap) {
        String n = Integer.toString(d.instances);
        StringBuilder b = new StringBuilder();
        b.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
                .append("<beans xmlns=\"http://www.springframework.org/schema/beans\"")
                .append(" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"")
                // resolved offline, from spring-beans' META-INF/spring.schemas
                .append(" xsi:schemaLocation=\"http://www.springframework.org/schema/beans")
                .append(" http://www.springframework.org/schema/beans/spring-beans-3.0.xsd\">\n");
        bean(b, "prefetchPolicy", "org.apache.activemq.ActiveMQPrefetchPolicy", prop("queuePrefetch", prefetch));
        bean(b, "brokerFactory", "org.apache.activemq.ActiveMQConnectionFactory",
                prop("brokerURL", d.broker) + "<property name=\"prefetchPolicy\" ref=\"prefetchPolicy\"/>");
        b.append("<bean id=\"resourceManager\" class=\"org.apache.uima.aae.UimaClassFactory\" factory-method=\"produceResourceManager\"/>\n");
        bean(b, "casManager", "org.apache.uima.aae.AsynchAECasManager_impl",
                "<constructor-arg index=\"0\" ref=\"resourceManager\"/>" + prop("casPoolSize", Integer.toString(cases)) + prop("initialFsHeapSize", heap));
        bean(b, "inProcessCache", "org.apache.uima.aae.InProcessCache", "");
        bean(b, "inputQueue", "org.apache.activemq.command.ActiveMQQueue", "<constructor-arg index=\"0\" value=\"" + x(d.queue) + "\"/>");
        b.append("<bean id=\"controller\" class=\"org.apache.uima.aae.controller.PrimitiveAnalysisEngineController_impl\" init-method=\"initialize\">")
                .append("<constructor-arg index=\"0\"><null/></constructor-arg>")
                .append("<constructor-arg index=\"1\" value=\"").append(x(key)).append("\"/>")
                .append("<constructor-arg index=\"2\" value=\"").append(x(d.descriptor)).append("\"/>")
                .append("<constructor-arg index=\"3\" ref=\"casManager\"/><constructor-arg index=\"4\" ref=\"inProcessCache\"/>")
                .append("<constructor-arg index=\"5\" value=\"10\"/><constructor-arg index=\"6\" value=\"").append(n).append("\"/>")
                .append("<property name=\"outputChannel\" ref=\"outputChannel\"/></bean>\n");
        bean(b, "taskExecutor", "org.springframework.scheduling.concurrent.ThreadPoolTaskExecutor",
                prop("corePoolSize", n) + prop("maxPoolSize", n) + prop("queueCapacity", n));
        bean(b, "metaHandler", "org.apache.uima.aae.handler.input.MetadataRequestHandler_impl",
                "<constructor-arg index=\"0\" value=\"MetadataRequestHandler\"/><property name=\"controller\" ref=\"controller\"/><property name=\"delegate\" ref=\"processHandler\"/>");
        bean(b, "processHandler", "org.apache.uima.aae.handler.input.ProcessRequestHandler_impl",
                "<constructor-arg index=\"0\" value=\"ProcessRequestHandler\"/><property name=\"controller\" ref=\"controller\"/>");
        bean(b, "inputChannel", "org.apache.uima.adapter.jms.activemq.JmsInputChannel",
                "<property name=\"messageHandler\" ref=\"metaHandler\"/>" + prop("endpointName", "inputQueue")
                        + "<property name=\"controller\" ref=\"controller\"/><property name=\"listenerContainer\" ref=\"processListener\"/>");
        // Process and CPC requests: scaleout consumers on the pinned pool;
        // GetMeta (the pinger's call): one consumer of its own.
        listener(b, "processListener", n, "Command=2000 OR Command=2002", true);
        listener(b, "metaListener", "1", "Command=2001", false);
        b.append("<bean id=\"outputChannel\" class=\"org.apache.uima.adapter.jms.activemq.JmsOutputChannel\" init-method=\"initialize\">")
                .append(prop("serviceInputEndpoint", d.queue)).append("<property name=\"controller\" ref=\"controller\"/></bean>\n");
        return b.append("</beans>\n").toString();
    }

    private static void listener(StringBuilder b, String id, String consumers, String selector, boolean pool) {
        bean(b, id, "org.apache.uima.adapter.jms.activemq.UimaDefaultMessageListenerContainer",
                (pool ? "<property name=\"taskExecutor\" ref=\"taskExecutor\"/>" : "")
                        + prop("concurrentConsumers", consumers)
                        + "<property name=\"destination\" ref=\"inputQueue\"/><property name=\"messageListener\" ref=\"inputChannel\"/>"
                        + "<property name=\"connectionFactory\" ref=\"brokerFactory\"/>" + prop("messageSelector", selector)
                        + prop("recoveryInterval", Integer.toString(RECOVERY_INTERVAL_MS)));
    }

    private static void bean(StringBuilder b, String id, String cls, String body) {
        b.append("<bean id=\"").append(id).append("\" class=\"").append(cls).append("\">").append(body).append("</bean>\n");
    }

    private static String prop(String name, String value) {
        return "<property name=\"" + name + "\" value=\"" + x(value) + "\"/>";
    }

    /** XML-escapes an attribute value (the context has no placeholder configurer: values are final). */
    private static String x(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace("\"", "&quot;");
    }

    /** Resolves ${NAME} from props; an undefined one is an error. */
    static String resolve(String dd, String what, String v, Properties props) {
        StringBuilder b = new StringBuilder();
        int i = 0;
        while (true) {
            int s = v.indexOf("${", i);
            if (s < 0) break;
            int e = v.indexOf('}', s);
            if (e < 0) throw bad(dd, what + " \"" + v + "\": unclosed ${");
            String name = v.substring(s + 2, e);
            String val = props.getProperty(name);
            if (val == null) {
                throw bad(dd, what + " \"" + v + "\": ${" + name + "} is not defined; define it with -D" + name + "=... in process_jvm_args");
            }
            b.append(v, i, s).append(val);
            i = e + 1;
        }
        return b.append(v.substring(i)).toString().trim();
    }

    private static String number(String dd, String what, String v, int min) {
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= min) return Integer.toString(n);
        } catch (NumberFormatException e) {
            // below
        }
        throw bad(dd, what + " \"" + v + "\" is not a whole number of at least " + min);
    }

    private static IllegalArgumentException bad(String dd, String msg) {
        return new IllegalArgumentException("deployment descriptor " + dd + " " + msg);
    }

    private static Element optional(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element && name.equals(n.getLocalName())) return (Element) n;
        }
        return null;
    }

    private static Element one(String dd, Element parent, String name) {
        Element e = optional(parent, name);
        if (e == null) throw bad(dd, "has no <" + name + "> in <" + parent.getLocalName() + ">");
        return e;
    }
}
