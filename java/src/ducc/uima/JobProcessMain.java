package ducc.uima;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.uima.Constants;
import org.apache.uima.UIMAFramework;
import org.apache.uima.analysis_engine.AnalysisEngine;
import org.apache.uima.analysis_engine.AnalysisEngineDescription;
import org.apache.uima.analysis_engine.impl.AnalysisEngineDescription_impl;
import org.apache.uima.analysis_engine.metadata.AnalysisEngineMetaData;
import org.apache.uima.analysis_engine.metadata.impl.FixedFlow_impl;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.CASException;
import org.apache.uima.cas.FSIterator;
import org.apache.uima.cas.text.AnnotationFS;
import org.apache.uima.analysis_engine.CasIterator;
import org.apache.uima.resource.ResourceManager;
import org.apache.uima.resource.ResourceSpecifier;
import org.apache.uima.resource.ResourceCreationSpecifier;
import org.apache.uima.resource.metadata.Capability;
import org.apache.uima.resource.metadata.OperationalProperties;
import org.apache.uima.resource.metadata.ProcessingResourceMetaData;

/**
 * A ducc job process that runs a UIMA aggregate over ducc's stream
 * protocol (docs/jobs.md): it builds the pipeline (an analysis engine; or
 * CM, AE and CC composed into one aggregate; or the aggregate a deployment
 * descriptor names), creates $DUCC_PIPELINES instances of it, one per
 * thread, prints {"ready": true}, then takes {"id", "item"} lines and
 * answers {"id", "ok", "result"} with the annotations by type, or
 * {"id", "error"} with the exception. An item is a serialized CAS
 * (CasItems) or, from an input file, a plain document text. When standard
 * input closes, or on SIGTERM (ducc's stop at the end of the job), the
 * items under way finish, then every instance's collectionProcessComplete
 * is called and the process exits 0. A pipeline that cannot start: its
 * exception on standard error, exit 1.
 */
public final class JobProcessMain {
    private JobProcessMain() {}

    static final String USAGE = "JobProcessMain [--cm D] [--ae D] [--cc D] [--dd D] [--cm-override|--ae-override|--cc-override NAME=VALUE]... [--pipelines N]";

    /** At most this many types are counted in a result. */
    static final int MAX_TYPES = 32;

    private static final String[] STOP = new String[0];

    public static void main(String[] args) throws Exception {
        Lines lines = new Lines();
        List<AnalysisEngine> engines = new ArrayList<>();
        try {
            Map<String, List<String>> o = Lines.options(args, USAGE, "cm", "ae", "cc", "dd", "cm-override", "ae-override", "cc-override", "pipelines");
            int n = pipelines(o.get("pipelines"));
            ResourceManager rm = Descriptors.resourceManager();
            ResourceSpecifier top = pipeline(o, rm);
            for (int i = 0; i < n; i++) {
                engines.add(UIMAFramework.produceAnalysisEngine(top, rm, null));
            }
        } catch (Throwable e) {
            Lines.fail("the pipeline could not be initialized", e);
            return;
        }
        BlockingQueue<String[]> queue = new ArrayBlockingQueue<>(engines.size());
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < engines.size(); i++) {
            AnalysisEngine ae = engines.get(i);
            Thread t = new Thread(() -> work(ae, queue, lines), "pipeline-" + i);
            t.start();
            threads.add(t);
        }
        Finisher fin = new Finisher(engines, threads, queue);
        // ducc stops a job process with SIGTERM when the job's items are
        // done (and when it is preempted or cancelled): finish the items
        // under way and complete the collection then too.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> fin.finish(STOP_GRACE_MS), "ducc-stop"));
        lines.send("{\"ready\": true}");
        try {
            for (String line; (line = lines.read()) != null; ) {
                if (line.isBlank()) continue;
                Map<String, Object> m = Lines.parse(line);
                Object id = m.get("id"), item = m.get("item");
                if (!(id instanceof String) || !(item instanceof String)) {
                    throw new IllegalArgumentException("expected {\"id\": \"...\", \"item\": \"...\"}, got " + Json.quote(line));
                }
                queue.put(new String[] {(String) id, (String) item});
            }
            fin.finish(0);
        } catch (Throwable e) {
            Lines.fail("the job process failed", e);
        }
        System.exit(0);
    }

    /** How long a stopped job process lets its items under way finish. */
    static final long STOP_GRACE_MS = 10_000;

    /**
     * Ends the pipelines once: the items under way finish, then every
     * instance's collectionProcessComplete, then destroy.
     */
    static final class Finisher {
        private final List<AnalysisEngine> engines;
        private final List<Thread> threads;
        private final BlockingQueue<String[]> queue;
        private boolean done;

        Finisher(List<AnalysisEngine> engines, List<Thread> threads, BlockingQueue<String[]> queue) {
            this.engines = engines;
            this.threads = threads;
            this.queue = queue;
        }

        /** Finishes; graceMs > 0 bounds the wait for the items under way (0: all queued items first). */
        synchronized void finish(long graceMs) {
            if (done) return;
            done = true;
            if (graceMs > 0) {
                queue.clear(); // not started: ducc gives them to another process
            }
            long deadline = System.currentTimeMillis() + graceMs;
            try {
                for (int i = 0; i < threads.size(); ) {
                    if (queue.offer(STOP, 10, TimeUnit.MILLISECONDS)) {
                        i++;
                    } else if (graceMs > 0 && System.currentTimeMillis() > deadline) {
                        break;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            for (int i = 0; i < threads.size(); i++) {
                Thread t = threads.get(i);
                try {
                    if (graceMs > 0) {
                        t.join(Math.max(1, deadline - System.currentTimeMillis()));
                    } else {
                        t.join();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                if (t.isAlive()) {
                    System.err.println("pipeline " + i + " is still processing an item; its collectionProcessComplete is not called");
                    continue;
                }
                try {
                    engines.get(i).collectionProcessComplete();
                    engines.get(i).destroy();
                } catch (Throwable e) {
                    System.err.println("collectionProcessComplete of pipeline " + i + " failed: " + Descriptors.describe(e));
                }
            }
            System.err.flush();
        }
    }

    static int pipelines(List<String> opt) {
        String s = opt.isEmpty() ? System.getenv("DUCC_PIPELINES") : opt.get(opt.size() - 1);
        if (s == null || s.isEmpty()) return 1;
        int n = Integer.parseInt(s.trim());
        if (n < 1) throw new IllegalArgumentException("pipelines must be at least 1, got " + n);
        return n;
    }

    /** The descriptor the job process instantiates. */
    static ResourceSpecifier pipeline(Map<String, List<String>> o, ResourceManager rm) throws Exception {
        List<String> dd = o.get("dd");
        if (!dd.isEmpty()) {
            if (!o.get("cm").isEmpty() || !o.get("ae").isEmpty() || !o.get("cc").isEmpty()) {
                throw new IllegalArgumentException("a deployment descriptor names the whole pipeline: give --dd alone, or --cm/--ae/--cc without it");
            }
            return Descriptors.parse(Descriptors.deploymentTop(dd.get(0), rm));
        }
        Map<String, ResourceSpecifier> parts = new LinkedHashMap<>();
        for (String k : new String[] {"cm", "ae", "cc"}) {
            List<String> d = o.get(k);
            if (d.size() > 1) throw new IllegalArgumentException("give --" + k + " once");
            if (d.isEmpty()) {
                if (!o.get(k + "-override").isEmpty()) {
                    throw new IllegalArgumentException("overrides for the " + k.toUpperCase() + " but no " + k.toUpperCase() + " descriptor");
                }
                continue;
            }
            parts.put(k.toUpperCase(), Descriptors.load(d.get(0), o.get(k + "-override"), rm));
        }
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("no pipeline: give --ae, --cm, --cc or --dd; usage: " + USAGE);
        }
        if (parts.size() == 1 && parts.containsKey("AE")) {
            return parts.get("AE");
        }
        AnalysisEngineDescription agg = new AnalysisEngineDescription_impl();
        agg.setFrameworkImplementation(Constants.JAVA_FRAMEWORK_NAME);
        agg.setPrimitive(false);
        agg.getDelegateAnalysisEngineSpecifiersWithImports().putAll(parts);
        AnalysisEngineMetaData md = agg.getAnalysisEngineMetaData();
        md.setName("ducc job process: " + String.join(" → ", parts.keySet()));
        FixedFlow_impl flow = new FixedFlow_impl();
        flow.setFixedFlow(parts.keySet().toArray(new String[0]));
        md.setFlowConstraints(flow);
        // The aggregate outputs what its parts output, so that each part's
        // result specification asks for its types (as if the parts ran alone).
        List<Capability> caps = new ArrayList<>();
        for (ResourceSpecifier part : parts.values()) {
            if (part instanceof ResourceCreationSpecifier
                    && ((ResourceCreationSpecifier) part).getMetaData() instanceof ProcessingResourceMetaData) {
                Capability[] c = ((ProcessingResourceMetaData) ((ResourceCreationSpecifier) part).getMetaData()).getCapabilities();
                if (c != null) caps.addAll(List.of(c));
            }
        }
        md.setCapabilities(caps.toArray(new Capability[0]));
        OperationalProperties op = md.getOperationalProperties();
        op.setModifiesCas(true);
        op.setMultipleDeploymentAllowed(true);
        op.setOutputsNewCASes(false);
        return agg;
    }

    /** One pipeline's thread: takes items until told to stop. */
    static void work(AnalysisEngine ae, BlockingQueue<String[]> queue, Lines lines) {
        CAS cas;
        try {
            cas = ae.newCAS();
        } catch (Throwable e) {
            Lines.fail("cannot create a CAS for the pipeline", e);
            return;
        }
        for (;;) {
            String[] it;
            try {
                it = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            if (it == STOP) return;
            String answer;
            try {
                CasItems.decode(it[1], cas);
                CasIterator children = ae.processAndOutputNewCASes(cas);
                while (children.hasNext()) {
                    children.next().release();
                }
                answer = "{\"id\": " + Json.quote(it[0]) + ", \"ok\": true, \"result\": " + result(cas) + "}";
            } catch (VirtualMachineError e) {
                Lines.fail("the pipeline ran out of resources on item " + it[0] + " (" + CasItems.itemLabel(it[1]) + ")", e);
                return;
            } catch (Throwable e) {
                answer = "{\"id\": " + Json.quote(it[0]) + ", \"error\": " + Json.quote(Descriptors.describe(e)) + "}";
            }
            try {
                lines.send(answer);
            } catch (Exception e) {
                Lines.fail("cannot answer", e);
            }
        }
    }

    /** The item's result: annotations counted by type. */
    static String result(CAS cas) throws CASException {
        Map<String, Integer> byType = new LinkedHashMap<>();
        int total = 0;
        FSIterator<AnnotationFS> it = cas.getAnnotationIndex().iterator();
        while (it.hasNext()) {
            String t = it.next().getType().getName();
            if (t.equals(CAS.TYPE_NAME_DOCUMENT_ANNOTATION)) continue;
            total++;
            if (byType.containsKey(t) || byType.size() < MAX_TYPES) byType.merge(t, 1, Integer::sum);
        }
        StringBuilder b = new StringBuilder("{\"annotations\": ").append(total).append(", \"types\": {");
        String sep = "";
        for (Map.Entry<String, Integer> e : byType.entrySet()) {
            b.append(sep);
            Json.quote(b, e.getKey()).append(": ").append(e.getValue());
            sep = ", ";
        }
        return b.append("}}").toString();
    }

}
