package ducc.uima;

import java.io.File;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;

import javax.xml.parsers.DocumentBuilderFactory;

import org.apache.uima.UIMAFramework;
import org.apache.uima.resource.ResourceCreationSpecifier;
import org.apache.uima.resource.ResourceManager;
import org.apache.uima.resource.ResourceSpecifier;
import org.apache.uima.resource.metadata.ConfigurationParameter;
import org.apache.uima.resource.metadata.ConfigurationParameterDeclarations;
import org.apache.uima.resource.metadata.ConfigurationParameterSettings;
import org.apache.uima.resource.metadata.impl.Import_impl;
import org.apache.uima.util.XMLInputSource;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Finding, reading and configuring descriptors as DUCC does: a descriptor
 * is a file (a name ending in .xml, or with a slash; relative to the working
 * directory) or a name looked up on the class path as UIMA's
 * {@code <import name="...">} does (a.b.C is a/b/C.xml).
 */
final class Descriptors {
    private Descriptors() {}

    /** The resource manager every component shares: the JVM's class path. */
    static ResourceManager resourceManager() {
        return UIMAFramework.newDefaultResourceManager();
    }

    /** Finds a descriptor by path or by name. */
    static URL locate(String d, ResourceManager rm) throws Exception {
        boolean isFile = d.toLowerCase().endsWith(".xml") || d.contains("/");
        File f = new File(d);
        if (isFile || f.isFile()) {
            if (!f.isFile()) {
                throw new IllegalArgumentException("descriptor file " + d + " not found (a relative path is relative to the working directory "
                        + new File("").getAbsolutePath() + ")");
            }
            return f.getAbsoluteFile().toURI().toURL();
        }
        Import_impl imp = new Import_impl();
        imp.setName(d);
        try {
            return imp.findAbsoluteUrl(rm);
        } catch (Exception e) {
            throw new IllegalArgumentException("descriptor " + d + " is neither a file nor found by name on the class path (as "
                    + d.replace('.', '/') + ".xml); give a path ending in .xml or add its jar or folder to classpath", e);
        }
    }

    /** Reads the descriptor at url. */
    static ResourceSpecifier parse(URL url) throws Exception {
        return UIMAFramework.getXMLParser().parseResourceSpecifier(new XMLInputSource(url));
    }

    /** Finds and reads a descriptor, then applies its overrides. */
    static ResourceSpecifier load(String d, List<String> overrides, ResourceManager rm) throws Exception {
        ResourceSpecifier spec = parse(locate(d, rm));
        override(spec, d, overrides);
        return spec;
    }

    /**
     * Applies name=value overrides to a descriptor's configuration
     * parameters; the value is converted to the parameter's type (a
     * multi-valued parameter takes a comma-separated list).
     */
    static void override(ResourceSpecifier spec, String what, List<String> overrides) {
        if (overrides.isEmpty()) {
            return;
        }
        if (!(spec instanceof ResourceCreationSpecifier)) {
            throw new IllegalArgumentException(what + " has no configuration parameters to override");
        }
        ResourceCreationSpecifier rcs = (ResourceCreationSpecifier) spec;
        ConfigurationParameterDeclarations decls = rcs.getMetaData().getConfigurationParameterDeclarations();
        ConfigurationParameterSettings settings = rcs.getMetaData().getConfigurationParameterSettings();
        for (String o : overrides) {
            int eq = o.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("override \"" + o + "\" of " + what + " is not name=value");
            }
            String name = o.substring(0, eq), value = o.substring(eq + 1);
            ConfigurationParameter p = find(decls, name);
            if (p == null) {
                throw new IllegalArgumentException("override " + name + ": " + what + " declares no such configuration parameter; it declares " + declared(decls));
            }
            settings.setParameterValue(name, convert(p, value, what));
        }
    }

    private static ConfigurationParameter find(ConfigurationParameterDeclarations decls, String name) {
        ConfigurationParameter p = decls.getConfigurationParameter(null, name);
        if (p == null && decls.getCommonParameters() != null) {
            for (ConfigurationParameter c : decls.getCommonParameters()) {
                if (c.getName().equals(name)) {
                    return c;
                }
            }
        }
        return p;
    }

    private static String declared(ConfigurationParameterDeclarations decls) {
        List<String> names = new ArrayList<>();
        for (ConfigurationParameter c : decls.getConfigurationParameters()) {
            names.add(c.getName());
        }
        return names.isEmpty() ? "none" : String.join(", ", names);
    }

    private static Object convert(ConfigurationParameter p, String value, String what) {
        if (!p.isMultiValued()) {
            return scalar(p, value.trim(), what);
        }
        String[] parts = value.isEmpty() ? new String[0] : value.split(",");
        switch (p.getType()) {
            case ConfigurationParameter.TYPE_INTEGER: {
                Integer[] a = new Integer[parts.length];
                for (int i = 0; i < parts.length; i++) a[i] = (Integer) scalar(p, parts[i].trim(), what);
                return a;
            }
            case ConfigurationParameter.TYPE_FLOAT: {
                Float[] a = new Float[parts.length];
                for (int i = 0; i < parts.length; i++) a[i] = (Float) scalar(p, parts[i].trim(), what);
                return a;
            }
            case ConfigurationParameter.TYPE_BOOLEAN: {
                Boolean[] a = new Boolean[parts.length];
                for (int i = 0; i < parts.length; i++) a[i] = (Boolean) scalar(p, parts[i].trim(), what);
                return a;
            }
            default:
                for (int i = 0; i < parts.length; i++) parts[i] = parts[i].trim();
                return parts;
        }
    }

    private static Object scalar(ConfigurationParameter p, String v, String what) {
        try {
            switch (p.getType()) {
                case ConfigurationParameter.TYPE_INTEGER: return Integer.valueOf(v);
                case ConfigurationParameter.TYPE_FLOAT: return Float.valueOf(v);
                case ConfigurationParameter.TYPE_BOOLEAN:
                    if (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false")) return Boolean.valueOf(v);
                    throw new NumberFormatException("not true or false");
                default: return v;
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("override " + p.getName() + " of " + what + ": \"" + v + "\" is not a " + p.getType());
        }
    }

    /**
     * Reads a UIMA-AS deployment descriptor that names a plain aggregate
     * and returns the URL of its top descriptor. Remote delegates are
     * refused: the job process runs the whole aggregate itself.
     */
    static URL deploymentTop(String dd, ResourceManager rm) throws Exception {
        URL url = locate(dd, rm);
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        Document doc = f.newDocumentBuilder().parse(url.toString());
        NodeList remote = doc.getElementsByTagNameNS("*", "remoteAnalysisEngine");
        if (remote.getLength() > 0) {
            String key = ((Element) remote.item(0)).getAttribute("key");
            throw new IllegalArgumentException("deployment descriptor " + dd + " has a UIMA-AS remote delegate (" + key
                    + "): ducc runs the whole aggregate inside the job process and has no UIMA-AS broker; make the delegate local"
                    + " (or give the aggregate with process_descriptor_AE), or run the remote part as a ducc service");
        }
        NodeList tops = doc.getElementsByTagNameNS("*", "topDescriptor");
        if (tops.getLength() == 0) {
            throw new IllegalArgumentException("deployment descriptor " + dd + " has no <topDescriptor>: is it a UIMA-AS deployment descriptor?");
        }
        NodeList imps = ((Element) tops.item(0)).getElementsByTagNameNS("*", "import");
        if (imps.getLength() == 0) {
            throw new IllegalArgumentException("deployment descriptor " + dd + ": <topDescriptor> has no <import>");
        }
        Element imp = (Element) imps.item(0);
        String loc = imp.getAttribute("location"), name = imp.getAttribute("name");
        if (!loc.isEmpty()) {
            return new URL(url, loc.replace('\\', '/'));
        }
        if (!name.isEmpty()) {
            Import_impl i = new Import_impl();
            i.setName(name);
            return i.findAbsoluteUrl(rm);
        }
        throw new IllegalArgumentException("deployment descriptor " + dd + ": the <import> of <topDescriptor> has neither location nor name");
    }

    /** The text of an exception for a user: its chain and where it was thrown. */
    static String describe(Throwable e) {
        StringBuilder b = new StringBuilder();
        Throwable root = e;
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t != e) b.append("\ncaused by: ");
            b.append(t);
            root = t;
            if (t.getCause() == t) break;
        }
        StackTraceElement[] st = root.getStackTrace();
        if (root instanceof IllegalArgumentException && st.length > 0 && st[0].getClassName().startsWith(Descriptors.class.getPackageName() + ".")
                && st[0].getClassName().indexOf('.', Descriptors.class.getPackageName().length() + 1) < 0) {
            return b.toString(); // ducc's own message says it all
        }
        for (int i = 0; i < Math.min(4, st.length); i++) {
            b.append("\n  at ").append(st[i]);
        }
        String s = b.toString();
        return s.length() > 8000 ? s.substring(0, 8000) + "…" : s;
    }
}
