package ducc.pinger.test;

import java.io.DataInputStream;
import java.net.InetSocketAddress;
import java.net.Socket;

import org.apache.uima.ducc.cli.AServicePing;
import org.apache.uima.ducc.cli.ServiceStatistics;

/**
 * Test fixture: DUCC's documented CustomPing sample (the services chapter
 * of the DUCC book), written from it: the same API calls and the same
 * endpoint, CUSTOM:host:port. Each ping connects to host:port, reads four
 * statistics (64-bit, little-endian) and answers alive and healthy with
 * them as info ("S1[..] S2[..] S3[..] S4[..]"); when that fails the
 * service is not alive and the info says why.
 * getStatistics() is declared with the covariant return type
 * ServiceStatistics, as the sample does.
 */
public class CustomPing extends AServicePing {
  private String host;
  private int port;

  @Override
  public void init(String arguments, String endpoint) throws Exception {
    // CUSTOM:host:port, as the chapter's registration writes it.
    String[] parts = endpoint.split(":");
    if (parts.length < 3) {
      throw new IllegalArgumentException("endpoint " + endpoint + " is not CUSTOM:host:port");
    }
    host = parts[1];
    port = Integer.parseInt(parts[2]);
    doLog("init", "pinging", host + ":" + port, "arguments", arguments);
  }

  @Override
  public void stop() {}

  @Override
  public ServiceStatistics getStatistics() {
    ServiceStatistics stats = new ServiceStatistics(false, false, "<NA>");
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), 2000);
      s.setSoTimeout(2000);
      DataInputStream in = new DataInputStream(s.getInputStream());
      long[] v = new long[4];
      for (int i = 0; i < 4; i++) {
        v[i] = Long.reverseBytes(in.readLong());
      }
      stats.setAlive(true);
      stats.setHealthy(true);
      stats.setInfo("S1[" + v[0] + "] S2[" + v[1] + "] S3[" + v[2] + "] S4[" + v[3] + "]");
    } catch (Exception e) {
      stats.setInfo(host + ":" + port + ": " + e);
    }
    return stats;
  }
}
