package ducc.uima;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.UnsupportedEncodingException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The protocol's lines: JSON lines in on standard input, JSON lines out on
 * standard output. Whatever the user's components print on System.out goes
 * to standard error (the log), so it cannot break the protocol.
 */
final class Lines {
    private final BufferedReader in;
    private final Writer out;

    Lines() throws UnsupportedEncodingException {
        in = new BufferedReader(new InputStreamReader(new FileInputStream(FileDescriptor.in), StandardCharsets.UTF_8), 1 << 16);
        out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8), 1 << 16);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, "UTF-8"));
    }

    /** The next line, or null at the end of standard input. */
    String read() throws IOException {
        return in.readLine();
    }

    /** Writes one line; flush sends what was written. */
    synchronized void write(String line) throws IOException {
        out.write(line);
        out.write('\n');
    }

    synchronized void flush() throws IOException {
        out.flush();
    }

    /** Writes one line and flushes. */
    synchronized void send(String line) throws IOException {
        write(line);
        out.flush();
    }

    /** Parses a protocol line. */
    static Map<String, Object> parse(String line) {
        try {
            return Json.parseObject(line);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("bad protocol line " + Json.quote(line.length() > 200 ? line.substring(0, 200) + "…" : line) + ": " + e.getMessage());
        }
    }

    /**
     * Command-line options: "--name value" pairs, a name given several
     * times adds up.
     */
    static Map<String, List<String>> options(String[] args, String usage, String... names) {
        Map<String, List<String>> m = new java.util.HashMap<>();
        for (String n : names) m.put(n, new ArrayList<>());
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || !m.containsKey(a.substring(2)) || i + 1 >= args.length) {
                throw new IllegalArgumentException("bad argument " + a + "; usage: " + usage);
            }
            m.get(a.substring(2)).add(args[++i]);
        }
        return m;
    }

    /** Prints the reason a component could not start and exits 1. */
    static void fail(String what, Throwable e) {
        System.err.println(what + ": " + Descriptors.describe(e));
        System.err.flush();
        System.exit(1);
    }
}
