package ducc.uima;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON ducc's Java side needs: the two job protocols' flat
 * objects, one per line, with string, number, boolean and null values in;
 * the pinger host's state line, which also holds arrays and objects
 * (ducc-pinger.jar compiles this file too); quoted strings out.
 */
public final class Json {
    private Json() {}

    /** Parses one flat JSON object; nested values are refused. */
    static Map<String, Object> parseObject(String s) {
        return parse(s, false);
    }

    /**
     * Parses one JSON object whose values may also be arrays (as Lists)
     * and objects (as Maps).
     */
    public static Map<String, Object> parseNested(String s) {
        return parse(s, true);
    }

    private static Map<String, Object> parse(String s, boolean nested) {
        Parser p = new Parser(s, nested);
        Map<String, Object> m = p.object();
        p.space();
        if (p.i != s.length()) {
            throw new IllegalArgumentException("text after the JSON object");
        }
        return m;
    }

    /** Appends s to b as a JSON string. */
    public static StringBuilder quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20 || c == 0x2028 || c == 0x2029) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"');
    }

    /** s as a JSON string. */
    static String quote(String s) {
        return quote(new StringBuilder(s.length() + 2), s).toString();
    }

    private static final class Parser {
        final String s;
        int i;

        final boolean nested; // arrays and objects as values
        Parser(String s, boolean nested) { this.s = s; this.nested = nested; }

        void space() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        void expect(char c) {
            space();
            if (i >= s.length() || s.charAt(i) != c) {
                throw new IllegalArgumentException("expected '" + c + "' at offset " + i);
            }
            i++;
        }

        Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            expect('{');
            space();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            }
            for (;;) {
                space();
                String k = string();
                expect(':');
                m.put(k, value());
                space();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                expect('}');
                return m;
            }
        }

        List<Object> array() {
            List<Object> l = new ArrayList<>();
            expect('[');
            space();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return l;
            }
            for (;;) {
                l.add(value());
                space();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                expect(']');
                return l;
            }
        }

        Object value() {
            space();
            if (i >= s.length()) throw new IllegalArgumentException("missing value");
            char c = s.charAt(i);
            if (c == '"') return string();
            if (nested && c == '{') return object();
            if (nested && c == '[') return array();
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            if (c == '-' || (c >= '0' && c <= '9')) {
                int j = i;
                while (i < s.length() && "+-.eE0123456789".indexOf(s.charAt(i)) >= 0) i++;
                String num = s.substring(j, i);
                if (num.matches("-?\\d+")) return Long.parseLong(num);
                return Double.parseDouble(num);
            }
            throw new IllegalArgumentException("unsupported JSON value at offset " + i + " (only strings, numbers, booleans and null)");
        }

        String string() {
            space();
            if (i >= s.length() || s.charAt(i) != '"') {
                throw new IllegalArgumentException("expected a string at offset " + i);
            }
            i++;
            StringBuilder b = null;
            int start = i;
            for (;;) {
                if (i >= s.length()) throw new IllegalArgumentException("unterminated string");
                char c = s.charAt(i);
                if (c == '"') {
                    String out = b == null ? s.substring(start, i) : b.append(s, start, i).toString();
                    i++;
                    return out;
                }
                if (c != '\\') {
                    i++;
                    continue;
                }
                if (b == null) b = new StringBuilder();
                b.append(s, start, i);
                if (i + 1 >= s.length()) throw new IllegalArgumentException("bad escape");
                char e = s.charAt(i + 1);
                i += 2;
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) throw new IllegalArgumentException("bad \\u escape");
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default: throw new IllegalArgumentException("bad escape \\" + e);
                }
                start = i;
            }
        }
    }
}
