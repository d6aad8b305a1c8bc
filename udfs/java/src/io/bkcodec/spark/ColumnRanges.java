package io.bkcodec.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;

/**
 * Filters on a 64-bit integer column (an id or an offset) as inclusive ranges of its
 * values; a null value passes none, as in SQL.
 */
final class ColumnRanges {
  private ColumnRanges() {}

  /** The values {@code f} admits, or null when it is not a filter on {@code column} this takes. */
  static List<long[]> ranges(Filter f, String column) {
    if (f instanceof IsNotNull && ((IsNotNull) f).attribute().equals(column)) {
      return List.of(new long[] {Long.MIN_VALUE, Long.MAX_VALUE});
    }
    if (f instanceof EqualTo && ((EqualTo) f).attribute().equals(column)) {
      return one(((EqualTo) f).value());
    }
    if (f instanceof EqualNullSafe && ((EqualNullSafe) f).attribute().equals(column)) {
      return one(((EqualNullSafe) f).value());
    }
    if (f instanceof In && ((In) f).attribute().equals(column)) {
      List<long[]> out = new ArrayList<>();
      for (Object v : ((In) f).values()) {
        if (v == null) {
          continue; // x IN (null, ...) is never true through the null
        }
        Long id = id(v);
        if (id == null) {
          return null;
        }
        out.add(new long[] {id, id});
      }
      return normalise(out);
    }
    if (f instanceof GreaterThan && ((GreaterThan) f).attribute().equals(column)) {
      Long v = id(((GreaterThan) f).value());
      return v == null ? null : v == Long.MAX_VALUE ? List.of() : List.of(new long[] {v + 1, Long.MAX_VALUE});
    }
    if (f instanceof GreaterThanOrEqual && ((GreaterThanOrEqual) f).attribute().equals(column)) {
      Long v = id(((GreaterThanOrEqual) f).value());
      return v == null ? null : List.of(new long[] {v, Long.MAX_VALUE});
    }
    if (f instanceof LessThan && ((LessThan) f).attribute().equals(column)) {
      Long v = id(((LessThan) f).value());
      return v == null ? null : v == Long.MIN_VALUE ? List.of() : List.of(new long[] {Long.MIN_VALUE, v - 1});
    }
    if (f instanceof LessThanOrEqual && ((LessThanOrEqual) f).attribute().equals(column)) {
      Long v = id(((LessThanOrEqual) f).value());
      return v == null ? null : List.of(new long[] {Long.MIN_VALUE, v});
    }
    return null;
  }

  private static List<long[]> one(Object value) {
    Long id = id(value);
    return id == null ? null : List.of(new long[] {id, id});
  }

  private static Long id(Object v) {
    if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return ((Number) v).longValue();
    }
    return null;
  }

  /** Sorted, merged ranges. */
  static List<long[]> normalise(List<long[]> ranges) {
    List<long[]> sorted = new ArrayList<>(ranges);
    sorted.sort((a, b) -> Long.compare(a[0], b[0]));
    List<long[]> out = new ArrayList<>();
    for (long[] r : sorted) {
      if (!out.isEmpty() && out.get(out.size() - 1)[1] >= r[0] - 1 && r[0] != Long.MIN_VALUE) {
        long[] last = out.get(out.size() - 1);
        last[1] = Math.max(last[1], r[1]);
      } else {
        out.add(new long[] {r[0], r[1]});
      }
    }
    return out;
  }

  static List<long[]> intersect(List<long[]> a, List<long[]> b) {
    List<long[]> out = new ArrayList<>();
    for (long[] x : a) {
      for (long[] y : b) {
        long lo = Math.max(x[0], y[0]);
        long hi = Math.min(x[1], y[1]);
        if (lo <= hi) {
          out.add(new long[] {lo, hi});
        }
      }
    }
    return normalise(out);
  }

  static String text(List<long[]> ranges) {
    StringBuilder out = new StringBuilder();
    for (long[] r : ranges) {
      if (out.length() > 0) {
        out.append(',');
      }
      out.append(r[0]).append(':').append(r[1]);
    }
    return out.toString();
  }
}
