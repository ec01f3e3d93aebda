package ducc.uima;

import java.util.List;
import java.util.Map;

import org.apache.uima.UIMAFramework;
import org.apache.uima.cas.CAS;
import org.apache.uima.collection.CollectionReader;
import org.apache.uima.resource.ResourceManager;
import org.apache.uima.resource.ResourceSpecifier;
import org.apache.uima.util.CasCreationUtils;
import org.apache.uima.util.Progress;

/**
 * A ducc driver process that runs a UIMA collection reader: every CAS it
 * produces is one work item (see CasItems). The protocol (JSON lines):
 *
 * <pre>
 * → {"ready": true}            initialized (and {"total": N} when the reader knows)
 * ← {"more": N}                ducc asks for up to N items
 * → {"item": "..."}            one per CAS: N of them, or fewer when the
 * → {"end": true}              reader has no more, followed by the end
 * </pre>
 *
 * The reader is asked for a CAS only when ducc asks for an item, so the
 * driver holds one CAS at a time whatever the size of the collection.
 * After the end (or when standard input closes) the reader is closed and
 * the process exits 0.
 * A reader that cannot start: its exception on standard error, exit 1.
 */
public final class DriverMain {
    private DriverMain() {}

    static final String USAGE = "DriverMain --cr DESCRIPTOR [--cr-override NAME=VALUE]...";

    /** Items are at most 1 MiB in ducc. */
    static final int MAX_ITEM = 1 << 20;

    public static void main(String[] args) throws Exception {
        Lines lines = new Lines();
        CollectionReader cr = null;
        CAS cas = null;
        try {
            Map<String, List<String>> o = Lines.options(args, USAGE, "cr", "cr-override");
            if (o.get("cr").size() != 1) {
                throw new IllegalArgumentException("give one --cr; usage: " + USAGE);
            }
            ResourceManager rm = Descriptors.resourceManager();
            String d = o.get("cr").get(0);
            ResourceSpecifier spec = Descriptors.load(d, o.get("cr-override"), rm);
            cr = UIMAFramework.produceCollectionReader(spec, rm, null);
            cas = CasCreationUtils.createCas(List.of(cr.getProcessingResourceMetaData()), null, rm);
        } catch (Throwable e) {
            Lines.fail("the collection reader could not be initialized", e);
            return;
        }
        lines.send("{\"ready\": true}");
        long total = total(cr, -1, lines);
        long n = 0;
        try {
            for (String line; (line = lines.read()) != null; ) {
                if (line.isBlank()) continue;
                Object more = Lines.parse(line).get("more");
                if (!(more instanceof Long)) {
                    throw new IllegalArgumentException("expected {\"more\": N}, got " + Json.quote(line));
                }
                long k = (Long) more;
                for (; k > 0 && cr.hasNext(); k--) {
                    cas.reset();
                    cr.getNext(cas);
                    n++;
                    String item = CasItems.encode(cas);
                    if (item.length() > MAX_ITEM) {
                        throw new IllegalStateException("CAS " + n + " (" + CasItems.escape(String.valueOf(CasItems.label(cas)))
                                + ") is " + item.length() + " bytes as a work item; ducc's items are at most 1 MiB: let the reader"
                                + " produce smaller documents (e.g. references to files, read by a CAS multiplier in the job process)");
                    }
                    lines.write("{\"item\": " + Json.quote(item) + "}");
                }
                if (k > 0) {
                    // Fewer than asked: the collection ended. The end answers
                    // the request; then the driver is done.
                    lines.send("{\"end\": true}");
                    break;
                }
                lines.flush();
                total = total(cr, total, lines);
            }
            cr.close();
            cr.destroy();
        } catch (Throwable e) {
            Lines.fail("the collection reader failed after " + n + " CASes", e);
        }
        System.exit(0);
    }

    /** Sends {"total": N} when the reader's progress gives a new exact total. */
    static long total(CollectionReader cr, long last, Lines lines) throws Exception {
        Progress[] ps = cr.getProgress();
        if (ps == null) return last;
        for (Progress p : ps) {
            String u = p.getUnit(); // entities (CASes) or documents, not bytes
            if (p.getTotal() >= 0 && !p.isApproximate() && !Progress.BYTES.equals(u)) {
                if (p.getTotal() != last) {
                    lines.send("{\"total\": " + p.getTotal() + "}");
                }
                return p.getTotal();
            }
        }
        return last;
    }
}
