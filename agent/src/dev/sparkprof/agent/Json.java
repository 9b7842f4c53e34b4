package dev.sparkprof.agent;

/** The agent's one JSON helper: its parts are JSON lines it writes by hand (no JSON library in the JDK). */
final class Json {
  private Json() {}

  /** s as a JSON string literal. */
  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }
}
