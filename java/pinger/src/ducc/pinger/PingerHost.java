package ducc.pinger;

import ducc.uima.Json;
import java.io.BufferedReader;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.uima.ducc.cli.AServicePing;
import org.apache.uima.ducc.common.IServiceStatistics;
import org.apache.uima.ducc.common.utils.DuccLogger;

/**
 * Runs a DUCC Java pinger (a subclass of
 * {@link org.apache.uima.ducc.cli.AServicePing}) as a ducc custom pinger
 * (docs/services.md, "Pingers").
 *
 * <pre>
 * java -cp ducc-pinger.jar ducc.pinger.PingerHost [options] CLASS
 *   --classpath CP        where CLASS and its libraries are (':'-separated; dir/* = its jars)
 *   --arguments ARGS      passed to init(arguments, endpoint) (service_ping_arguments)
 *   --endpoint EP         the endpoint for init; default: the state's, else $DUCC_SERVICE_ENDPOINT
 *   --timeout MS          the most any one call into the pinger may take (default 5000)
 *   --monitor-rate MS     monitor-rate for init (default 10000, the default ping interval)
 *   --failure-max N       failure-max for init (default 5)
 *   --failure-window MIN  failure-window for init, minutes (default 30)
 *   --last-use MS         last-use for init (default 0)
 *   --do-log              do-log for init: doLog writes (to standard error)
 * </pre>
 *
 * <p>Each line on standard input is one ping: the ping state as one JSON
 * object, as ducc's agent writes it ({"service": 23, "endpoint": ...,
 * "instances": [...], "active": [...], "started_at": [...],
 * "references": [...], "autostart": false, "run_failures": 0,
 * "max_instances": 10}). Before the first ping the host calls
 * init(arguments, endpoint, initState); at each ping setSmState(state),
 * getStatistics(), getAdditions(), getDeletions(), isAutostart() and
 * getLastUse(), and prints one answer line on standard output:
 * {"alive": true, "healthy": true, "info": "...", "additions": 1,
 * "deletions": [1], "autostart": false, "last_use": 1795307490000}
 * (zero additions, no deletions, an unchanged autostart and a zero
 * last_use are left out). At the end of input it calls stop() and exits
 * 0. Input that ends before any line is one ping with an empty state. ducc's
 * agent starts a pinger once per ping with one line, so the pinger lives
 * for one ping; a long-lived host gets one line per ping.
 *
 * <p>The pinger's own standard output goes to standard error, so that
 * standard output carries only answers. Failures, on standard error as
 * one line that starts "ducc-pinger:":
 * <ul>
 * <li>the class cannot be found or made, or init() throws: exit 2;
 * <li>any call takes longer than --timeout: exit 3;
 * <li>a bad state line or bad options: exit 2;
 * <li>getStatistics() or another per-ping call throws, or getStatistics()
 *     returns null: that ping's answer is not alive and not healthy, with
 *     the reason as its info, and the host goes on.
 * </ul>
 */
public final class PingerHost {
  static final int EXIT_SETUP = 2;
  static final int EXIT_TIMEOUT = 3;

  private final PrintStream answers;
  private final PrintStream log;
  private final ExecutorService calls = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "ducc-pinger-call");
    t.setDaemon(true);
    return t;
  });

  private String className;
  private String classpath = "";
  private String arguments;
  private String endpoint;
  private long timeoutMs = 5000;
  private int monitorRate = 10000;
  private int failureMax = 5;
  private int failureWindow = 30;
  private long lastUse = 0;
  private boolean doLog = false;

  private AServicePing pinger;
  private ClassLoader pingerLoader;
  private boolean initialized;

  private PingerHost(PrintStream answers, PrintStream log) {
    this.answers = answers;
    this.log = log;
  }

  /** A failure that ends the host with its exit code. */
  static final class Fatal extends Exception {
    private static final long serialVersionUID = 1L;
    final int code;

    Fatal(int code, String msg) {
      super(msg);
      this.code = code;
    }
  }

  /** An Error thrown by the pinger, carried as an Exception. */
  static final class ErrorThrown extends Exception {
    private static final long serialVersionUID = 1L;

    ErrorThrown(Throwable t) {
      super(t);
    }
  }

  public static void main(String[] args) {
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
    // The pinger's own prints (and doLog without a logger) go to standard
    // error: standard output is for answers only.
    System.setOut(err);
    DuccLogger.setStream(err);
    PingerHost h = new PingerHost(out, err);
    int code;
    try {
      h.parse(args);
      h.run(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
      code = 0;
    } catch (Fatal f) {
      err.println("ducc-pinger: " + f.getMessage());
      code = f.code;
    } catch (Exception e) {
      err.println("ducc-pinger: " + e);
      code = EXIT_SETUP;
    }
    out.flush();
    err.flush();
    // Runtime.halt: a pinger thread that hangs (a timed-out call) must not
    // keep the JVM alive, nor its shutdown hooks hold up the exit.
    Runtime.getRuntime().halt(code);
  }

  private void parse(String[] args) throws Fatal {
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        if (className != null) {
          throw new Fatal(EXIT_SETUP, "one pinger class expected, got " + className + " and " + a);
        }
        className = a;
        continue;
      }
      if (a.equals("--do-log")) {
        doLog = true;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new Fatal(EXIT_SETUP, a + " needs a value");
      }
      String v = args[++i];
      try {
        switch (a) {
          case "--classpath": classpath = v; break;
          case "--arguments": arguments = v; break;
          case "--endpoint": endpoint = v; break;
          case "--timeout": timeoutMs = Long.parseLong(v); break;
          case "--monitor-rate": monitorRate = Integer.parseInt(v); break;
          case "--failure-max": failureMax = Integer.parseInt(v); break;
          case "--failure-window": failureWindow = Integer.parseInt(v); break;
          case "--last-use": lastUse = Long.parseLong(v); break;
          default: throw new Fatal(EXIT_SETUP, "unknown option " + a);
        }
      } catch (NumberFormatException e) {
        throw new Fatal(EXIT_SETUP, a + " needs a number, not " + v);
      }
    }
    if (className == null) {
      throw new Fatal(EXIT_SETUP, "usage: PingerHost [--classpath CP] [--arguments ARGS] [--endpoint EP] "
          + "[--timeout MS] [--monitor-rate MS] [--failure-max N] [--failure-window MIN] [--last-use MS] [--do-log] CLASS");
    }
    if (timeoutMs <= 0) {
      throw new Fatal(EXIT_SETUP, "--timeout must be positive");
    }
  }

  private void run(BufferedReader in) throws Exception {
    pinger = load();
    boolean any = false;
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) {
        continue;
      }
      any = true;
      ping(line);
    }
    if (!any) {
      ping("{}");
    }
    if (initialized) {
      try {
        call("stop()", () -> {
          pinger.stop();
          return null;
        });
      } catch (Fatal f) {
        throw f;
      } catch (Exception e) {
        log.println("ducc-pinger: " + className + ".stop() threw " + e);
      }
    }
  }

  /** Loads and makes the pinger; every failure is a Fatal with a clear message. */
  private AServicePing load() throws Fatal {
    ClassLoader cl = loader();
    pingerLoader = cl;
    Class<?> c;
    try {
      c = Class.forName(className, true, cl);
    } catch (ClassNotFoundException e) {
      throw new Fatal(EXIT_SETUP, "pinger class " + className + " not found in classpath \"" + classpath + "\"");
    } catch (LinkageError e) {
      throw new Fatal(EXIT_SETUP, "pinger class " + className + " cannot be loaded: " + e);
    }
    if (!AServicePing.class.isAssignableFrom(c)) {
      throw new Fatal(EXIT_SETUP, "pinger class " + className + " does not extend " + AServicePing.class.getName());
    }
    try {
      Constructor<?> k = c.getConstructor();
      return (AServicePing) call("the constructor", k::newInstance);
    } catch (NoSuchMethodException e) {
      throw new Fatal(EXIT_SETUP, "pinger class " + className + " has no public constructor without arguments");
    } catch (Fatal f) {
      throw f;
    } catch (Exception e) {
      throw new Fatal(EXIT_SETUP, "pinger class " + className + " cannot be made: " + describe(cause(e)));
    }
  }

  private ClassLoader loader() throws Fatal {
    List<URL> urls = new ArrayList<>();
    for (String p : classpath.split(":")) {
      if (p.isEmpty()) {
        continue;
      }
      try {
        if (p.endsWith("/*") || p.equals("*")) {
          File dir = new File(p.substring(0, p.length() - 1));
          File[] jars = dir.listFiles((d, n) -> n.endsWith(".jar") || n.endsWith(".JAR"));
          if (jars != null) {
            java.util.Arrays.sort(jars);
            for (File j : jars) {
              urls.add(j.toURI().toURL());
            }
          }
        } else {
          urls.add(new File(p).toURI().toURL());
        }
      } catch (java.net.MalformedURLException e) {
        throw new Fatal(EXIT_SETUP, "bad classpath entry " + p + ": " + e.getMessage());
      }
    }
    return new URLClassLoader(urls.toArray(new URL[0]), PingerHost.class.getClassLoader());
  }

  /** One ping: the state line in, one answer line out. */
  private void ping(String line) throws Exception {
    Map<String, Object> state;
    try {
      state = Json.parseNested(line);
    } catch (IllegalArgumentException e) {
      throw new Fatal(EXIT_SETUP, "the ping state is not a JSON object (" + e.getMessage() + "): " + clip(line));
    }
    Map<String, Object> sm = smState(state);
    if (!initialized) {
      Map<String, Object> init = new HashMap<>();
      init.put("monitor-rate", monitorRate);
      init.put("service-id", longOr(state.get("service"), envLong("DUCC_SERVICE_ID")));
      init.put("do-log", doLog);
      init.put("failure-max", failureMax);
      init.put("failure-window", failureWindow);
      init.put("autostart-enabled", Boolean.TRUE.equals(state.get("autostart")));
      init.put("last-use", lastUse);
      String ep = endpoint;
      if (ep == null && state.get("endpoint") instanceof String) {
        ep = (String) state.get("endpoint");
      }
      if (ep == null) {
        ep = System.getenv().getOrDefault("DUCC_SERVICE_ENDPOINT", "");
      }
      String epFinal = ep;
      try {
        call("init()", () -> {
          pinger.init(arguments, epFinal, init);
          return null;
        });
      } catch (Fatal f) {
        throw f;
      } catch (Exception e) {
        throw new Fatal(EXIT_SETUP, className + ".init() failed: " + describe(cause(e)));
      }
      initialized = true;
    }
    answers.println(answer(state, sm));
    answers.flush();
  }

  private String answer(Map<String, Object> state, Map<String, Object> sm) throws Fatal {
    String step = "setSmState()";
    try {
      call(step, () -> {
        pinger.setSmState(sm);
        return null;
      });
      step = "getStatistics()";
      IServiceStatistics st = call(step, pinger::getStatistics);
      if (st == null) {
        return failed(className + ".getStatistics() returned null");
      }
      step = "getAdditions()";
      int additions = call(step, pinger::getAdditions);
      step = "getDeletions()";
      Long[] deletions = call(step, pinger::getDeletions);
      step = "isAutostart()";
      boolean autostart = call(step, pinger::isAutostart);
      step = "getLastUse()";
      long used = call(step, pinger::getLastUse);

      StringBuilder b = new StringBuilder("{\"alive\": ").append(st.isAlive());
      b.append(", \"healthy\": ").append(st.isHealthy());
      if (st.getInfo() != null) {
        Json.quote(b.append(", \"info\": "), st.getInfo());
      }
      if (additions > 0) {
        b.append(", \"additions\": ").append(additions);
      }
      if (deletions != null) {
        StringBuilder d = new StringBuilder();
        for (Long id : deletions) {
          if (id != null) {
            d.append(d.length() == 0 ? "" : ", ").append(id);
          }
        }
        if (d.length() > 0) {
          b.append(", \"deletions\": [").append(d).append(']');
        }
      }
      if (state.get("autostart") instanceof Boolean && autostart != (Boolean) state.get("autostart")) {
        b.append(", \"autostart\": ").append(autostart);
      }
      if (used > 0) {
        b.append(", \"last_use\": ").append(used);
      }
      return b.append('}').toString();
    } catch (Fatal f) {
      throw f;
    } catch (Exception e) {
      Throwable c = cause(e);
      log.println("ducc-pinger: " + className + "." + step + " threw:");
      c.printStackTrace(log);
      return failed(className + "." + step + " threw " + describe(c));
    }
  }

  private String failed(String why) {
    log.println("ducc-pinger: " + why);
    return Json.quote(new StringBuilder("{\"alive\": false, \"healthy\": false, \"info\": "), why).append('}').toString();
  }

  /**
   * Runs one call into the pinger, on the call thread, within the timeout.
   * The thread's context class loader is the pinger's: libraries that load
   * classes through it (JNDI, as the UIMA-AS client does for ActiveMQ's
   * InitialContextFactory; ServiceLoader) find the pinger's classpath.
   */
  private <T> T call(String what, Callable<T> c) throws Exception {
    ClassLoader cl = pingerLoader;
    Future<T> f = calls.submit(() -> {
      Thread.currentThread().setContextClassLoader(cl);
      return c.call();
    });
    try {
      return f.get(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      throw new Fatal(EXIT_TIMEOUT, className + "." + what + " did not return within " + timeoutMs + " ms");
    } catch (ExecutionException e) {
      Throwable t = e.getCause();
      if (t instanceof Exception) {
        throw (Exception) t;
      }
      throw new ErrorThrown(t); // an Error (say NoClassDefFoundError) from the pinger
    }
  }

  /** The DUCC state map of one ping (AServicePing.getSmState()). */
  static Map<String, Object> smState(Map<String, Object> s) {
    Map<String, Object> m = new HashMap<>();
    m.put("all-instances", longs(s.get("instances")));
    m.put("active-instances", longs(s.get("active")));
    m.put("references", longs(s.get("references")));
    m.put("autostart-enabled", Boolean.TRUE.equals(s.get("autostart")));
    m.put("run-failures", (int) longOr(s.get("run_failures"), 0));
    m.put("max-instances", (int) longOr(s.get("max_instances"), 0));
    m.put("started-at", longs(s.get("started_at")));
    return m;
  }

  private static Long[] longs(Object o) {
    if (!(o instanceof List)) {
      return new Long[0];
    }
    List<?> l = (List<?>) o;
    Long[] r = new Long[l.size()];
    for (int i = 0; i < r.length; i++) {
      r[i] = longOr(l.get(i), 0);
    }
    return r;
  }

  private static long longOr(Object o, long dflt) {
    return o instanceof Number ? ((Number) o).longValue() : dflt;
  }

  private static long envLong(String name) {
    try {
      return Long.parseLong(System.getenv().getOrDefault(name, "0"));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static Throwable cause(Throwable t) {
    while ((t instanceof java.lang.reflect.InvocationTargetException || t instanceof ExecutionException
        || t instanceof ErrorThrown) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private static String describe(Throwable t) {
    return t.getMessage() == null ? t.getClass().getName() : t.getClass().getName() + ": " + t.getMessage();
  }

  private static String clip(String s) {
    return s.length() <= 200 ? s : s.substring(0, 200) + "…";
  }
}
