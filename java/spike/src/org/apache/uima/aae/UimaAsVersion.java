package org.apache.uima.aae;

import org.apache.uima.impl.UimaVersion;

/**
 * Spike shim, put on the classpath before Debian's uimaj-as-core.jar.
 *
 * Debian builds UIMA-AS 2.3.1 from source against its own UIMA core
 * (2.10.2), but the version strings compiled into UIMA-AS still say 2.3.1,
 * and a top-level controller refuses to start unless the core's full version
 * string equals getUimajFullVersionString() ("UIMA-AS Version is
 * Incompatible with UIMA Core"). This shim reports the running core's
 * version as the one UIMA-AS "depends on"; everything else says 2.3.1.
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
