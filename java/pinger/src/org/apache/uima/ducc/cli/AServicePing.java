package org.apache.uima.ducc.cli;

import java.util.Map;

import org.apache.uima.ducc.common.IServiceStatistics;
import org.apache.uima.ducc.common.utils.DuccLogger;

/**
 * The base class of a custom service pinger, with DUCC's API (ducc's own
 * implementation of Apache DUCC's class of this name).
 *
 * <p>A pinger implements {@link #init(String, String)}, {@link #stop()} and
 * {@link #getStatistics()}, and may override {@link #getAdditions()},
 * {@link #getDeletions()}, {@link #isAutostart()}, {@link #getLastUse()}
 * and {@link #isExcessiveFailures()}. The host (in ducc:
 * {@code ducc.pinger.PingerHost}) calls
 * {@link #init(String, String, Map)} once, then for every ping
 * {@link #setSmState(Map)}, getStatistics() and the other hooks, and
 * {@link #stop()} at the end.
 *
 * <p>Static state, set before init(arguments, endpoint) from the
 * initialization map (keys in brackets):
 * <ul>
 * <li>{@link #monitor_rate} [monitor-rate, Integer]: the time between
 *     pings, in milliseconds;
 * <li>{@link #service_id} [service-id, Long]: the service's id;
 * <li>{@link #log_enabled} [do-log, Boolean]: whether {@link #doLog} writes;
 * <li>{@link #failure_max} [failure-max, Integer] and
 *     {@link #failure_window_period} [failure-window, Integer, minutes]:
 *     the service's instance_failures_limit and instance_failures_window;
 * <li>{@link #autostart_enabled} [autostart-enabled, Boolean];
 * <li>{@link #last_use} [last-use, Long]: the last use known when the
 *     pinger started, in ms since the epoch, 0 when unknown.
 * </ul>
 *
 * <p>Dynamic state, passed before every ping ({@link #getSmState()}):
 * all-instances (Long[], the ids of all instances), active-instances
 * (Long[], those that run), autostart-enabled (Boolean), references
 * (Long[], ids of the work that uses the service), run-failures (Integer,
 * runtime failures counted in the failure window). ducc adds
 * max-instances (Integer) and started-at (Long[], per active instance, ms
 * since the epoch).
 */
public abstract class AServicePing {
  /** Failures added at each of the last pings, a ring of failure_window_size. */
  protected int[] failure_window = null;
  /** Next slot of failure_window. */
  protected int failure_cursor = 0;
  /** run-failures as of the last ping. */
  protected int total_failures = 0;
  /** The failures allowed within the window (instance_failures_limit). */
  protected int failure_max = 3;
  /** The window, in minutes (instance_failures_window). */
  protected int failure_window_period = 30;
  /** The window, in pings. */
  protected int failure_window_size = failure_window_period;
  /** The time between pings, in milliseconds. */
  protected int monitor_rate = 1;
  /** Whether the service is registered with autostart. */
  protected boolean autostart_enabled;
  /** The last known use of the service, ms since the epoch; 0: unknown. */
  protected long last_use = 0;
  /** Whether doLog writes. */
  protected boolean log_enabled = false;
  /** The service's id. */
  protected long service_id = 0;
  /** The state passed before the current ping (see the class comment). */
  protected Map<String, Object> smState;
  /** The state passed at initialization. */
  protected Map<String, Object> initializationState;
  /** Where doLog writes; null: standard output. */
  protected DuccLogger duccLogger;

  /**
   * Called once, before the first ping.
   *
   * @param arguments the service's service_ping_arguments (may be null)
   * @param endpoint the service's endpoint, as registered
   */
  public abstract void init(String arguments, String endpoint) throws Exception;

  /**
   * Called by the host: sets the static state from initState (see the
   * class comment), then calls {@link #init(String, String)}.
   */
  public void init(String arguments, String endpoint, Map<String, Object> initState) throws Exception {
    initializationState = initState;
    monitor_rate = intOf(initState.get("monitor-rate"), monitor_rate);
    service_id = longOf(initState.get("service-id"), service_id);
    log_enabled = boolOf(initState.get("do-log"), log_enabled);
    failure_max = intOf(initState.get("failure-max"), failure_max);
    failure_window_period = intOf(initState.get("failure-window"), failure_window_period);
    autostart_enabled = boolOf(initState.get("autostart-enabled"), autostart_enabled);
    last_use = longOf(initState.get("last-use"), last_use);
    long pings = (long) failure_window_period * 60_000L / Math.max(1, monitor_rate);
    failure_window_size = (int) Math.max(1, Math.min(pings, 1_000_000));
    failure_window = new int[failure_window_size];
    failure_cursor = 0;
    total_failures = 0;
    init(arguments, endpoint);
  }

  /** Called once when the pinger is stopped: release connections here. */
  public abstract void stop();

  /** The verdict of one ping: alive, healthy and info. */
  public abstract IServiceStatistics getStatistics();

  /** Called by the host before every ping. */
  public void setSmState(Map<String, Object> state) {
    smState = state;
  }

  /** The state passed before the current ping (see the class comment). */
  public Map<String, Object> getSmState() {
    return smState;
  }

  /** How many instances to start now; 0 by default. */
  public int getAdditions() {
    return 0;
  }

  /** The ids of the instances to stop now (among all-instances); none by default. */
  public Long[] getDeletions() {
    return null;
  }

  /**
   * Whether the service should be autostarted; by default unchanged: the
   * value of the last ping's state, or the initial one before any ping.
   */
  public boolean isAutostart() {
    if (smState != null && smState.get("autostart-enabled") != null) {
      return boolOf(smState.get("autostart-enabled"), autostart_enabled);
    }
    if (initializationState != null) {
      return boolOf(initializationState.get("autostart-enabled"), autostart_enabled);
    }
    return autostart_enabled;
  }

  /** When the service was last used, ms since the epoch; 0 (the default): unknown. */
  public long getLastUse() {
    return 0;
  }

  /** Sets where {@link #doLog} writes (null: standard output). */
  public void setLogger(DuccLogger logger) {
    duccLogger = logger;
  }

  /**
   * Logs methodName, the service id and msg joined by spaces, when logging
   * is enabled (do-log); to duccLogger, or standard output without one.
   */
  public void doLog(String methodName, Object... msg) {
    if (!log_enabled) {
      return;
    }
    StringBuilder b = new StringBuilder().append(methodName).append(' ').append(service_id);
    if (msg != null) {
      for (Object o : msg) {
        b.append(' ').append(o == null ? "<null>" : o.toString());
      }
    }
    if (duccLogger != null) {
      duccLogger.info(methodName, null, b);
    } else {
      System.out.println(b);
    }
  }

  /**
   * Whether the instances failed too often: at least failure_max new
   * run-failures within the last failure_window_period minutes, counted
   * ping by ping from the run-failures of the state. A drop of
   * run-failures (the service was restarted) clears the window.
   */
  public boolean isExcessiveFailures() {
    if (failure_window == null) {
      failure_window = new int[Math.max(1, failure_window_size)];
    }
    int now = smState == null ? 0 : intOf(smState.get("run-failures"), 0);
    if (now < total_failures) {
      java.util.Arrays.fill(failure_window, 0);
      failure_cursor = 0;
      total_failures = 0;
    }
    int added = now - total_failures;
    total_failures = now;
    failure_window[failure_cursor] = added;
    failure_cursor = (failure_cursor + 1) % failure_window.length;
    int sum = 0;
    for (int f : failure_window) {
      sum += f;
    }
    doLog("isExcessiveFailures", "run-failures", now, "in-window", sum, "limit", failure_max);
    return sum >= failure_max && sum > 0;
  }

  private static int intOf(Object o, int dflt) {
    return o instanceof Number ? ((Number) o).intValue() : o instanceof String ? Integer.parseInt((String) o) : dflt;
  }

  private static long longOf(Object o, long dflt) {
    return o instanceof Number ? ((Number) o).longValue() : o instanceof String ? Long.parseLong((String) o) : dflt;
  }

  private static boolean boolOf(Object o, boolean dflt) {
    return o instanceof Boolean ? (Boolean) o : o instanceof String ? Boolean.parseBoolean((String) o) : dflt;
  }
}
