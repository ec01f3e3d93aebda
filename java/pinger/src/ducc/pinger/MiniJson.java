package ducc.pinger;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON the pinger host reads (one ping state: an object of numbers,
 * strings, booleans, nulls and arrays of them) and writes (strings).
 * Numbers are Long when integral, else Double; arrays are Lists.
 */
final class MiniJson {
  private MiniJson() {}

  static Map<String, Object> parseObject(String s) {
    MiniJson.Parser p = new Parser(s);
    p.space();
    Map<String, Object> m = p.object();
    p.space();
    if (p.i != s.length()) {
      throw new IllegalArgumentException("text after the object at " + p.i);
    }
    return m;
  }

  static StringBuilder quote(StringBuilder b, String s) {
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

  private static final class Parser {
    final String s;
    int i;

    Parser(String s) { this.s = s; }

    IllegalArgumentException bad(String what) {
      return new IllegalArgumentException(what + " at " + i);
    }

    void space() {
      while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++;
    }

    void expect(char c) {
      space();
      if (i >= s.length() || s.charAt(i) != c) throw bad("'" + c + "' expected");
      i++;
    }

    Map<String, Object> object() {
      expect('{');
      Map<String, Object> m = new LinkedHashMap<>();
      space();
      if (i < s.length() && s.charAt(i) == '}') {
        i++;
        return m;
      }
      while (true) {
        space();
        String k = string();
        expect(':');
        m.put(k, value());
        space();
        if (i < s.length() && s.charAt(i) == ',') { i++; continue; }
        expect('}');
        return m;
      }
    }

    List<Object> array() {
      expect('[');
      List<Object> l = new ArrayList<>();
      space();
      if (i < s.length() && s.charAt(i) == ']') {
        i++;
        return l;
      }
      while (true) {
        l.add(value());
        space();
        if (i < s.length() && s.charAt(i) == ',') { i++; continue; }
        expect(']');
        return l;
      }
    }

    Object value() {
      space();
      if (i >= s.length()) throw bad("value expected");
      char c = s.charAt(i);
      if (c == '"') return string();
      if (c == '{') return object();
      if (c == '[') return array();
      if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
      if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
      if (s.startsWith("null", i)) { i += 4; return null; }
      int start = i;
      while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
      String n = s.substring(start, i);
      if (n.isEmpty()) throw bad("value expected");
      try {
        if (n.indexOf('.') < 0 && n.indexOf('e') < 0 && n.indexOf('E') < 0) return Long.parseLong(n);
        return Double.parseDouble(n);
      } catch (NumberFormatException e) {
        throw bad("bad number " + n);
      }
    }

    String string() {
      if (i >= s.length() || s.charAt(i) != '"') throw bad("string expected");
      i++;
      StringBuilder b = new StringBuilder();
      while (i < s.length()) {
        char c = s.charAt(i++);
        if (c == '"') return b.toString();
        if (c != '\\') { b.append(c); continue; }
        if (i >= s.length()) break;
        char e = s.charAt(i++);
        switch (e) {
          case 'n': b.append('\n'); break;
          case 't': b.append('\t'); break;
          case 'r': b.append('\r'); break;
          case 'b': b.append('\b'); break;
          case 'f': b.append('\f'); break;
          case 'u':
            if (i + 4 > s.length()) throw bad("bad \\u escape");
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
            break;
          default: b.append(e);
        }
      }
      throw bad("unterminated string");
    }
  }
}
