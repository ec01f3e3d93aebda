package org.apache.uima.ducc.cli;

import org.apache.uima.ducc.common.IServiceStatistics;

/**
 * The plain implementation of {@link IServiceStatistics} that pingers
 * return from {@link AServicePing#getStatistics()}.
 */
public class ServiceStatistics implements IServiceStatistics {
  private static final long serialVersionUID = 1L;

  private boolean alive;
  private boolean healthy;
  private String info = "N/A";

  /** Not alive, not healthy, info "N/A". */
  public ServiceStatistics() {}

  public ServiceStatistics(boolean alive, boolean healthy, String info) {
    this.alive = alive;
    this.healthy = healthy;
    this.info = info;
  }

  @Override
  public boolean isAlive() { return alive; }

  @Override
  public boolean isHealthy() { return healthy; }

  @Override
  public String getInfo() { return info; }

  @Override
  public void setAlive(boolean alive) { this.alive = alive; }

  @Override
  public void setHealthy(boolean healthy) { this.healthy = healthy; }

  @Override
  public void setInfo(String info) { this.info = info; }

  @Override
  public String toString() {
    return "Alive[" + alive + "] Healthy[" + healthy + "] Info: " + info;
  }
}
