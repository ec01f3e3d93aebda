package org.apache.uima.ducc.common;

import java.io.Serializable;

/**
 * A pinger's verdict on a service, as DUCC's pinger API defines it
 * (ducc's own implementation of the Apache DUCC interface of this name).
 *
 * <p>alive: the service answers; work that depends on it may start.
 * healthy: the pinger's own judgement of how well it answers (ducc shows
 * it, and an alive service that is not healthy is in state Alert).
 * info: free text that ducc shows as the service's ping info.
 */
public interface IServiceStatistics extends Serializable {
  boolean isAlive();

  boolean isHealthy();

  String getInfo();

  void setAlive(boolean alive);

  void setHealthy(boolean healthy);

  void setInfo(String info);
}
