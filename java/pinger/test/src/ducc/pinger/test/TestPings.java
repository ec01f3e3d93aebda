package ducc.pinger.test;

import java.util.Map;

import org.apache.uima.ducc.cli.AServicePing;
import org.apache.uima.ducc.cli.ServiceStatistics;
import org.apache.uima.ducc.common.IServiceStatistics;

/** Test fixtures: pingers for the host's hooks and failures. */
public final class TestPings {
  private TestPings() {}

  /**
   * Uses the hooks: asks for one more instance while fewer than two are
   * active, stops the highest instance id beyond two, turns autostart on,
   * reports a last use, and says in its info what the host passed it.
   */
  public static class Scaling extends AServicePing {
    private String args;
    private String ep;

    @Override
    public void init(String arguments, String endpoint) {
      args = arguments;
      ep = endpoint;
    }

    @Override
    public void stop() {
      System.out.println("Scaling.stop called"); // goes to the host's standard error
    }

    @Override
    public IServiceStatistics getStatistics() {
      Map<String, Object> sm = getSmState();
      Long[] all = (Long[]) sm.get("all-instances");
      Long[] active = (Long[]) sm.get("active-instances");
      Long[] refs = (Long[]) sm.get("references");
      return new ServiceStatistics(true, active.length > 0,
          "args=" + args + " endpoint=" + ep + " service=" + service_id + " rate=" + monitor_rate
              + " window=" + failure_window_period + "/" + failure_max + " all=" + all.length + " active="
              + active.length + " refs=" + refs.length + " failures=" + sm.get("run-failures")
              + " excessive=" + isExcessiveFailures());
    }

    @Override
    public int getAdditions() {
      return ((Long[]) getSmState().get("active-instances")).length < 2 ? 1 : 0;
    }

    @Override
    public Long[] getDeletions() {
      Long[] all = (Long[]) getSmState().get("all-instances");
      return all.length > 2 ? new Long[] {all[all.length - 1]} : null;
    }

    @Override
    public boolean isAutostart() {
      return true;
    }

    @Override
    public long getLastUse() {
      return 1795307490000L;
    }
  }

  /** getStatistics() throws. */
  public static class Throws extends AServicePing {
    @Override
    public void init(String arguments, String endpoint) {}

    @Override
    public void stop() {}

    @Override
    public IServiceStatistics getStatistics() {
      throw new IllegalStateException("broker unreachable");
    }
  }

  /** getStatistics() never returns. */
  public static class Hangs extends AServicePing {
    @Override
    public void init(String arguments, String endpoint) {}

    @Override
    public void stop() {}

    @Override
    public IServiceStatistics getStatistics() {
      while (true) {
        try {
          Thread.sleep(60_000);
        } catch (InterruptedException e) {
          // a pinger that ignores interrupts: the host must still give up
        }
      }
    }
  }

  /** init() throws. */
  public static class InitFails extends AServicePing {
    @Override
    public void init(String arguments, String endpoint) throws Exception {
      throw new java.io.IOException("no such queue: " + endpoint);
    }

    @Override
    public void stop() {}

    @Override
    public IServiceStatistics getStatistics() {
      return null;
    }
  }

  /**
   * Alive when the thread's context class loader finds this class (which
   * only the pinger's classpath has), as JNDI and ServiceLoader need.
   */
  public static class ContextLoader extends AServicePing {
    @Override
    public void init(String arguments, String endpoint) throws Exception {
      Class.forName(ContextLoader.class.getName(), false, Thread.currentThread().getContextClassLoader());
    }

    @Override
    public void stop() {}

    @Override
    public IServiceStatistics getStatistics() {
      ClassLoader cl = Thread.currentThread().getContextClassLoader();
      try {
        Class.forName(ContextLoader.class.getName(), false, cl);
        return new ServiceStatistics(true, true, "context class loader ok");
      } catch (ClassNotFoundException e) {
        return new ServiceStatistics(false, false, "context class loader " + cl + " lacks the pinger's classpath");
      }
    }
  }

  /** Not a pinger. */
  public static class NotAPinger {}
}
