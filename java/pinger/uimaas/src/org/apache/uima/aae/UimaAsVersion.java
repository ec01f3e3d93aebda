package org.apache.uima.aae;

import org.apache.uima.impl.UimaVersion;

/**
 * The version shim of ducc's UIMA-AS pinger (java/spike/FINDINGS.md,
 * "Version check"), in ducc-pinger-uimaas.jar, which comes before Debian's
 * uimaj-as-core.jar on the pinger's class path.
 *
 * <p>Debian builds UIMA-AS 2.3.1 against its own UIMA core (2.10.2), but the
 * version compiled into UIMA-AS still says 2.3.1, and the client's getMeta
 * refuses to run unless the core's full version equals
 * getUimajFullVersionString() ("Version of UIMA-AS is Incompatible with a
 * Version of UIMA Core"). This class answers the running core's version
 * there; everything else says 2.3.1. The UIMA-AS services carry the same
 * shim in ducc-uima.jar; the pinger's jar has its own so that it needs
 * nothing but the JDK, the pinger API and Debian's UIMA-AS.
 */
public class UimaAsVersion { // the same members as UIMA-AS's own class
  public static short getMajorVersion() {
    return 2;
  }

  public static short getMinorVersion() {
    return 3;
  }

  public static short getBuildRevision() {
    return 1;
  }

  public static String getVersionString() {
    return getMajorVersion() + "." + getMinorVersion() + "." + getBuildRevision();
  }

  public static String getFullVersionString() {
    return "2.3.1";
  }

  public static String getUimajFullVersionString() {
    return UimaVersion.getFullVersionString();
  }
}
