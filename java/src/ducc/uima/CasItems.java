package ducc.uima;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Base64;
import java.util.zip.Deflater;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

import javax.xml.parsers.SAXParserFactory;

import org.apache.uima.cas.CAS;
import org.apache.uima.cas.FSIterator;
import org.apache.uima.cas.Feature;
import org.apache.uima.cas.FeatureStructure;
import org.apache.uima.cas.Type;
import org.apache.uima.cas.impl.XmiCasDeserializer;
import org.apache.uima.cas.impl.XmiCasSerializer;
import org.xml.sax.InputSource;
import org.xml.sax.XMLReader;

/**
 * A CAS as one work item (one line of text):
 *
 * <pre>uima-cas:xmi.gz LABEL BASE64</pre>
 *
 * LABEL is the document's source URI (SourceDocumentInformation's uri, as
 * DUCC shows it) with blanks and % escaped as %XX, or "-"; BASE64 is the
 * CAS as gzipped XMI. Anything else is a plain document text. The XMI is
 * read leniently, as DUCC's job processes do: types the pipeline does not
 * know are dropped.
 */
final class CasItems {
    private CasItems() {}

    static final String PREFIX = "uima-cas:xmi.gz ";
    static final String SOURCE_TYPE = "org.apache.uima.examples.SourceDocumentInformation";

    private static final ThreadLocal<XMLReader> READER = ThreadLocal.withInitial(() -> {
        try {
            SAXParserFactory f = SAXParserFactory.newInstance();
            f.setNamespaceAware(true);
            return f.newSAXParser().getXMLReader();
        } catch (Exception e) {
            throw new IllegalStateException("no XML parser", e);
        }
    });

    /** Whether an item is a serialized CAS. */
    static boolean isCas(String item) {
        return item.startsWith(PREFIX);
    }

    /** The item for cas. */
    static String encode(CAS cas) throws Exception {
        ByteArrayOutputStream bos = new ByteArrayOutputStream(8192);
        try (GZIPOutputStream gz = new GZIPOutputStream(bos, 8192) {
            { def.setLevel(Deflater.BEST_SPEED); }
        }) {
            XmiCasSerializer.serialize(cas, gz);
        }
        String label = label(cas);
        return PREFIX + escape(label == null ? "" : label) + " " + Base64.getEncoder().encodeToString(bos.toByteArray());
    }

    /** Fills cas (reset first) from an item: a serialized CAS or a plain text. */
    static void decode(String item, CAS cas) throws Exception {
        cas.reset();
        if (!isCas(item)) {
            cas.setDocumentText(item);
            return;
        }
        int sp = item.indexOf(' ', PREFIX.length());
        if (sp < 0) {
            throw new IllegalArgumentException("bad CAS item: no label");
        }
        byte[] gz = Base64.getDecoder().decode(item.substring(sp + 1).trim());
        try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(gz), 8192)) {
            // One parser per thread: making one per CAS costs more than
            // reading a small CAS.
            XMLReader r = READER.get();
            r.setContentHandler(new XmiCasDeserializer(cas.getTypeSystem()).getXmiCasHandler(cas, true));
            r.parse(new InputSource(in));
        } catch (IOException e) {
            throw new IllegalArgumentException("bad CAS item: " + e.getMessage(), e);
        }
    }

    /** The label of an item as written (escaped), "-" if none. */
    static String itemLabel(String item) {
        if (!isCas(item)) return "-";
        int sp = item.indexOf(' ', PREFIX.length());
        return sp < 0 ? "-" : item.substring(PREFIX.length(), sp);
    }

    /** The document's source URI, or null. */
    static String label(CAS cas) {
        Type t = cas.getTypeSystem().getType(SOURCE_TYPE);
        if (t == null) return null;
        Feature uri = t.getFeatureByBaseName("uri");
        if (uri == null) return null;
        FSIterator<FeatureStructure> it = cas.getIndexRepository().getAllIndexedFS(t);
        return it.hasNext() ? it.next().getStringValue(uri) : null;
    }

    static String escape(String s) {
        if (s.isEmpty()) return "-";
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c <= ' ' || c == '%' || c == 0x7f || c == 0x2028 || c == 0x2029 || Character.isWhitespace(c)) {
                b.append(String.format("%%%02X", (int) c & 0xff));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
