package org.apache.uima.ducc.common.utils.id;

import java.io.Serializable;

/**
 * A DUCC id (job, reservation, service, process), only as far as the
 * pinger API needs it: the id argument of {@link
 * org.apache.uima.ducc.common.utils.DuccLogger}'s methods, which pingers
 * usually pass as null.
 */
public class DuccId implements Serializable, Comparable<DuccId> {
  private static final long serialVersionUID = 1L;

  private final long value;

  public DuccId(long value) { this.value = value; }

  public long getFriendly() { return value; }

  public void setFriendly(long ignored) {}

  @Override
  public int compareTo(DuccId o) { return Long.compare(value, o.value); }

  @Override
  public boolean equals(Object o) { return o instanceof DuccId && ((DuccId) o).value == value; }

  @Override
  public int hashCode() { return Long.hashCode(value); }

  @Override
  public String toString() { return Long.toString(value); }
}
