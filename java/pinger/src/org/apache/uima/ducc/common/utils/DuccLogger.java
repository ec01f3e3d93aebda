package org.apache.uima.ducc.common.utils;

import java.io.PrintStream;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

import org.apache.uima.ducc.common.utils.id.DuccId;

/**
 * The logger that {@link org.apache.uima.ducc.cli.AServicePing} hands its
 * pingers (field duccLogger, method setLogger), with DUCC's call shape:
 * {@code info(methodName, id, args...)}. In ducc every line goes to the
 * pinger host's standard error, which the agent keeps (its last line is
 * the reason shown when a pinger fails); standard output carries only the
 * pinger's answers.
 */
public class DuccLogger {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss,SSS");
  private static volatile PrintStream out = System.err;

  private final String name;
  private final String component;
  private volatile boolean debug;

  protected DuccLogger(String name, String component) {
    this.name = name;
    this.component = component == null ? "" : component;
  }

  public static DuccLogger getLogger(Class<?> cl, String component) {
    return new DuccLogger(cl.getName(), component);
  }

  public static DuccLogger getLogger(String name, String component) {
    return new DuccLogger(name, component);
  }

  /** Where every logger writes (the host sets its standard error). */
  public static void setStream(PrintStream s) { out = s; }

  public String getName() { return name; }

  public boolean isDebug() { return debug; }

  public boolean isTrace() { return false; }

  public void setDebug(boolean on) { debug = on; }

  public void fatal(String location, DuccId id, Object... args) { log("FATAL", location, id, args); }

  public void error(String location, DuccId id, Object... args) { log("ERROR", location, id, args); }

  public void warn(String location, DuccId id, Object... args) { log("WARN", location, id, args); }

  public void info(String location, DuccId id, Object... args) { log("INFO", location, id, args); }

  public void debug(String location, DuccId id, Object... args) {
    if (debug) log("DEBUG", location, id, args);
  }

  public void trace(String location, DuccId id, Object... args) {}

  private void log(String level, String location, DuccId id, Object... args) {
    StringBuilder b = new StringBuilder();
    b.append(LocalDateTime.now().format(TIME)).append(' ').append(level).append(' ');
    if (!component.isEmpty()) b.append(component).append(' ');
    b.append(shortName()).append('.').append(location);
    if (id != null) b.append(" J[").append(id).append(']');
    for (Object a : args) {
      b.append(' ');
      if (a instanceof Throwable) {
        Throwable t = (Throwable) a;
        b.append(t.getClass().getName()).append(": ").append(t.getMessage());
      } else {
        b.append(a);
      }
    }
    out.println(b);
  }

  private String shortName() {
    int dot = name.lastIndexOf('.');
    return dot < 0 ? name : name.substring(dot + 1);
  }
}
