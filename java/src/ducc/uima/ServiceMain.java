package ducc.uima;

import java.io.File;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import javax.xml.parsers.DocumentBuilderFactory;

import org.apache.log4j.BasicConfigurator;
import org.apache.log4j.ConsoleAppender;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;
import org.apache.uima.adapter.jms.client.BaseUIMAAsynchronousEngine_impl;
import org.w3c.dom.Document;

/**
 * One instance of a ducc UIMA-AS service (docs/services.md, "UIMA-AS
 * services"): deploys a UIMA-AS deployment descriptor (DD) with Debian's
 * UIMA-AS 2.3.1 and serves its queue until SIGTERM, then undeploys.
 *
 * <pre>
 * ServiceMain --dd DD --endpoint UIMA-AS:QUEUE:BROKER
 * </pre>
 *
 * The DD is a file (a name ending in .xml or with a slash, relative to the
 * working directory) or a name on the class path, as DUCC finds it. The
 * endpoint is the service's, with ${DefaultBrokerURL} already resolved by
 * the head: its broker is the default of the system properties
 * defaultBrokerURL and DefaultBrokerURL (UIMA-AS's and DUCC's names), so a
 * DD that says brokerURL="${defaultBrokerURL}" reaches the cluster's
 * broker; ${NAME} in the DD's inputQueue is resolved from the system
 * properties (-DNAME=... in process_jvm_args). The queue and broker the DD
 * then names must be the endpoint's: ducc's pinger and the jobs that
 * depend on the service use the endpoint.
 *
 * UIMA-AS turns a DD into a Spring context with dd2spring.xsl and Saxon,
 * which Debian does not ship; DDTranslator writes the context itself
 * (docs/decisions.md, "UIMA-AS services: our own DD translator"). A DD
 * it does not cover, a queue or broker other than the endpoint's, or a
 * deployment that fails: the reason on standard error, exit 1.
 */
public final class ServiceMain {
    private ServiceMain() {}

    static final String USAGE = "ServiceMain --dd DD --endpoint UIMA-AS:QUEUE:BROKER";

    /** Reaches the protected deploySpringContainer. */
    static final class Engine extends BaseUIMAAsynchronousEngine_impl {
        String deploy(String springFile) throws Exception {
            return deploySpringContainer(new String[] {springFile});
        }
    }

    public static void main(String[] args) {
        String id;
        Engine engine;
        DDTranslator.Deployment d;
        try {
            Map<String, List<String>> o = Lines.options(args, USAGE, "dd", "endpoint");
            if (o.get("dd").size() != 1 || o.get("endpoint").size() != 1) {
                throw new IllegalArgumentException("give --dd and --endpoint once each; usage: " + USAGE);
            }
            String[] ep = splitEndpoint(o.get("endpoint").get(0));
            for (String p : new String[] {"defaultBrokerURL", "DefaultBrokerURL"}) {
                if (System.getProperty(p) == null) System.setProperty(p, ep[1]);
            }
            logging();
            String dd = o.get("dd").get(0);
            URL url = Descriptors.locate(dd, Descriptors.resourceManager());
            d = DDTranslator.translate(read(url), url, dd, System.getProperties());
            if (!d.queue.equals(ep[0]) || !d.broker.equals(ep[1])) {
                throw new IllegalArgumentException("deployment descriptor " + dd + " serves UIMA-AS:" + d.queue + ":" + d.broker
                        + ", not the service's endpoint " + o.get("endpoint").get(0) + ": ducc would ping and send jobs elsewhere");
            }
            for (String w : d.notes) System.err.println("ducc: " + w);
            File f = File.createTempFile("ducc-uimaas-", ".xml");
            f.deleteOnExit();
            Files.writeString(f.toPath(), d.spring, StandardCharsets.UTF_8);
            engine = new Engine();
            id = engine.deploy(f.getPath());
        } catch (Throwable e) {
            Lines.fail("the UIMA-AS service could not be deployed", e);
            return;
        }
        System.out.println("ducc: UIMA-AS service deployed: queue " + d.queue + " on " + d.broker + ", " + d.instances
                + (d.instances == 1 ? " instance" : " instances") + " of " + d.descriptor);
        System.out.flush();
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                engine.undeploy(id);
                System.out.println("ducc: UIMA-AS service undeployed");
            } catch (Exception e) {
                System.err.println("ducc: undeploy failed: " + e);
            }
            System.out.flush();
            done.countDown();
        }, "ducc-undeploy"));
        try {
            done.await(); // until SIGTERM runs the hook
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** QUEUE and BROKER of UIMA-AS:QUEUE:BROKER. */
    static String[] splitEndpoint(String ep) {
        String p = "UIMA-AS:";
        int c = ep.indexOf(':', p.length());
        if (!ep.regionMatches(true, 0, p, 0, p.length()) || c <= p.length() || c == ep.length() - 1) {
            throw new IllegalArgumentException("endpoint " + ep + " is not UIMA-AS:QUEUE:BROKER");
        }
        return new String[] {ep.substring(p.length(), c), ep.substring(c + 1)};
    }

    static Document read(URL url) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        return f.newDocumentBuilder().parse(url.toString());
    }

    /**
     * Console logging for Spring and ActiveMQ (log4j 1.2) unless the user
     * configured it (-Dlog4j.configuration): INFO, Spring at WARN.
     */
    static void logging() {
        if (System.getProperty("log4j.configuration") != null) return;
        BasicConfigurator.configure(new ConsoleAppender(new PatternLayout("%d{HH:mm:ss,SSS} %-5p %c{1} - %m%n"), ConsoleAppender.SYSTEM_ERR));
        Logger.getRootLogger().setLevel(Level.INFO);
        Logger.getLogger("org.springframework").setLevel(Level.WARN);
        Logger.getLogger("org.apache.activemq.spring").setLevel(Level.WARN);
    }
}
