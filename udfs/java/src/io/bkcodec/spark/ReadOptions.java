package io.bkcodec.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** A read's options, checked at load: the Python source's names and meanings. */
final class ReadOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  static final long DEFAULT_SPLIT_SIZE = 512L * 1024 * 1024;
  /** The options this source reads (the Python source's, for local files). */
  static final List<String> KNOWN =
      List.of("kind", "digestType", "password", "ledgerMetadata", "verify", "payload", "columns", "splitSize", "minPartitions",
          "ledgerId", "entryId", "scopeId", "logId", "journalId", "offset");

  final String path;
  final String paths;
  final String kind;
  /** Name, value pairs for the native reader (digest settings, payload, verify). */
  final String[] reader;
  final List<String> columns;
  final long splitSize;
  final long minPartitions;

  ReadOptions(Map<String, String> given) {
    java.util.Map<String, String> lower = new java.util.HashMap<>();
    Set<String> unknown = new TreeSet<>();
    Set<String> known = new TreeSet<>();
    for (String k : KNOWN) {
      known.add(k.toLowerCase(Locale.ROOT));
    }
    for (Map.Entry<String, String> e : given.entrySet()) {
      String k = e.getKey().toLowerCase(Locale.ROOT);
      lower.put(k, e.getValue());
      if (k.equals("path") || k.equals("paths") || known.contains(k)) {
        continue;
      }
      if (k.startsWith("fs.")) {
        throw new IllegalArgumentException(
            "option " + e.getKey() + ": the bookkeeper-jvm source reads local files; remote ones are read by the "
                + "Python bookkeeper source");
      }
      unknown.add(e.getKey());
    }
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException(
          "unknown option" + (unknown.size() > 1 ? "s " : " ") + String.join(", ", unknown)
              + " for the bookkeeper-jvm format; it takes " + String.join(", ", KNOWN));
    }
    path = lower.get("path");
    paths = lower.get("paths");
    kind = lower.getOrDefault("kind", "auto").trim().toLowerCase(Locale.ROOT);
    if (!List.of("auto", "entrylog", "journal", "index").contains(kind)) {
      throw new IllegalArgumentException("kind must be auto or one of entrylog, journal, index, not '" + kind + "'");
    }
    List<String> pairs = new ArrayList<>();
    for (String name : List.of("digestType", "password", "ledgerMetadata", "verify", "payload", "ledgerId", "entryId", "scopeId",
        "logId", "journalId", "offset")) {
      String v = lower.get(name.toLowerCase(Locale.ROOT));
      if (v != null) {
        pairs.add(name);
        pairs.add(v);
      }
    }
    reader = pairs.toArray(new String[0]);
    String cols = lower.getOrDefault("columns", "").trim();
    List<String> c = null;
    if (!cols.isEmpty()) {
      c = new ArrayList<>();
      for (String one : cols.split(",")) {
        c.add(one.trim());
      }
    }
    columns = c;
    splitSize = parseSize(lower.getOrDefault("splitsize", String.valueOf(DEFAULT_SPLIT_SIZE)));
    minPartitions = positive(
        lower.getOrDefault("minpartitions", String.valueOf(Runtime.getRuntime().availableProcessors())), "minPartitions");
  }

  static long parseSize(String text) {
    String v = text.trim().toLowerCase(Locale.ROOT);
    if (v.endsWith("b")) {
      v = v.substring(0, v.length() - 1);
    }
    long scale = 1;
    if (!v.isEmpty()) {
      switch (v.charAt(v.length() - 1)) {
        case 'k': scale = 1L << 10; break;
        case 'm': scale = 1L << 20; break;
        case 'g': scale = 1L << 30; break;
        case 't': scale = 1L << 40; break;
        default: break;
      }
    }
    if (scale != 1) {
      v = v.substring(0, v.length() - 1);
    }
    long size;
    try {
      size = Math.multiplyExact(Long.parseLong(v), scale);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(
          "not a size: '" + text + "' (a number of bytes, or with a k, m or g suffix)");
    }
    if (size <= 0) {
      throw new IllegalArgumentException("splitSize must be positive, not '" + text + "'");
    }
    return size;
  }

  private static long positive(String text, String name) {
    long v;
    try {
      v = Long.parseLong(text.trim());
    } catch (NumberFormatException e) {
      v = 0;
    }
    if (v <= 0) {
      throw new IllegalArgumentException(name + " must be a positive whole number, not '" + text + "'");
    }
    return v;
  }
}
