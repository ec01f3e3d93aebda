package org.apache.uima.aae;

import org.apache.uima.impl.UimaVersion;

/**
 * ducc's stand-in for UIMA-AS 2.3.1's version class, first on a ducc
 * UIMA-AS service's class path (ducc-uima.jar comes before Debian's
 * uimaj-as-core.jar).
 *
 * Debian builds UIMA-AS 2.3.1 from source against its own UIMA core
 * (2.10.2), but the version strings compiled into UIMA-AS still say 2.3.1,
 * and a top-level controller refuses to start unless the core's full
 * version string equals getUimajFullVersionString() ("UIMA-AS Version is
 * Incompatible with UIMA Core"). The check is stale, not a real
 * incompatibility (java/spike/FINDINGS.md): this class answers the running
 * core's version as the one UIMA-AS depends on; everything else says
 * 2.3.1, as Debian's class does.
 */
public class UimaAsVersion {
    public static short getMajorVersion() { return 2; }

    public static short getMinorVersion() { return 3; }

    public static short getBuildRevision() { return 1; }

    public static String getVersionString() {
        return getMajorVersion() + "." + getMinorVersion() + "." + getBuildRevision();
    }

    public static String getFullVersionString() { return "2.3.1"; }

    public static String getUimajFullVersionString() { return UimaVersion.getFullVersionString(); }
}
