package ducc.pinger.test;

import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * Test fixture: the service CustomPing pings. Listens on 127.0.0.1 (port
 * 0: any free one, printed as "port N" on standard output) and writes four
 * little-endian longs to every connection: the connection count, 2, 3, 4.
 * Stops after --max connections (default 100) or when killed.
 */
public final class StatsServer {
  private StatsServer() {}

  public static void main(String[] args) throws Exception {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
    int max = args.length > 1 ? Integer.parseInt(args[1]) : 100;
    try (ServerSocket ss = new ServerSocket(port, 50, InetAddress.getLoopbackAddress())) {
      System.out.println("port " + ss.getLocalPort());
      System.out.flush();
      for (long n = 1; n <= max; n++) {
        try (Socket s = ss.accept()) {
          DataOutputStream out = new DataOutputStream(s.getOutputStream());
          for (long v : new long[] {n, 2, 3, 4}) {
            out.writeLong(Long.reverseBytes(v));
          }
          out.flush();
        }
      }
    }
  }
}
