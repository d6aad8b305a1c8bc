package io.bkcodec.spark;

import java.io.FileNotFoundException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("bookkeeper-jvm").load(path)}: entry logs, journals (and a
 * bookie directory's both, merged) and index files as rows, decoded by bkcodec's Rust
 * core and handed to Spark as Arrow columnar batches without a copy. The same schema,
 * options and rows (error rows included) as the Python {@code bookkeeper} source, for
 * local files; it has its own name so both can be used in one session (a jar
 * registering {@code bookkeeper} takes the name from the Python source wherever the jar
 * is loaded, and with it remote paths).
 */
public final class BookKeeperJvmSource implements TableProvider, DataSourceRegister {
  public static final String NAME = "bookkeeper-jvm";

  /** The kind {@code auto} resolved to when the schema was inferred, kept for the table. */
  private String resolvedKind;

  @Override
  public String shortName() {
    return NAME;
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    ReadOptions read = new ReadOptions(options.asCaseSensitiveMap());
    resolvedKind = resolveKind(read, false);
    StructType full = fullSchema(resolvedKind, read);
    return read.columns == null ? full : select(full, read.columns, resolvedKind);
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    ReadOptions read = new ReadOptions(properties);
    String kind = resolvedKind != null ? resolvedKind : resolveKind(read, false);
    StructType full = fullSchema(kind, read);
    check(full, schema, kind);
    if (read.columns != null && !List.of(schema.fieldNames()).equals(read.columns)) {
      throw new IllegalArgumentException(
          "the schema given (" + String.join(", ", schema.fieldNames()) + ") and the columns option disagree");
    }
    return new BookKeeperTable(read, kind, schema);
  }

  /** Whether this source reads the option {@code name} (case-insensitive, as Spark's
   * options are), so a caller can pick it or the Python source for a read. */
  public static boolean readsOption(String name) {
    for (String known : ReadOptions.KNOWN) {
      if (known.equalsIgnoreCase(name)) {
        return true;
      }
    }
    return false;
  }

  /** The core planner's lines for {@code files} (see {@code Native.plan}): the read's kind,
   * a note, then {@code partition<TAB>kind<TAB>start<TAB>end<TAB>size<TAB>path} per split. For
   * tools and tests that compare it with the Python source's planning. {@code options}:
   * name, value, name, value... as the reader takes them (the pushed filters'
   * {@code pushed.<column>} ranges included). */
  public static String[] plan(List<String> files, String kind, long splitSize, long minPartitions, List<String> options) {
    return Native.plan(files.toArray(new String[0]), kind, splitSize, minPartitions, options.toArray(new String[0]));
  }

  static String resolveKind(ReadOptions read, boolean missingOk) {
    List<String> files = listFiles(read, missingOk);
    return Native.plan(files.toArray(new String[0]), read.kind, read.splitSize, read.minPartitions, read.reader)[0];
  }

  static List<String> listFiles(ReadOptions read, boolean missingOk) {
    try {
      return Paths.expand(Paths.given(read.path, read.paths), missingOk);
    } catch (FileNotFoundException e) {
      throw new UncheckedIOException(e);
    }
  }

  static StructType fullSchema(String kind, ReadOptions read) {
    StructType out = new StructType();
    for (String line : Native.schema(kind, read.reader).split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\t");
      out = out.add(new StructField(f[0], type(f[1]), Boolean.parseBoolean(f[2]), Metadata.empty()));
    }
    return out;
  }

  private static DataType type(String name) {
    switch (name) {
      case "byte": return DataTypes.ByteType;
      case "short": return DataTypes.ShortType;
      case "integer": return DataTypes.IntegerType;
      case "long": return DataTypes.LongType;
      case "boolean": return DataTypes.BooleanType;
      case "string": return DataTypes.StringType;
      case "binary": return DataTypes.BinaryType;
      case "double": return DataTypes.DoubleType;
      default: throw new IllegalStateException("no Spark type for " + name);
    }
  }

  static StructType select(StructType full, List<String> columns, String kind) {
    StructType out = new StructType();
    for (String c : columns) {
      if (!List.of(full.fieldNames()).contains(c)) {
        throw new IllegalArgumentException(
            "no column '" + c + "' in " + kind + " rows; they have " + String.join(", ", full.fieldNames()));
      }
      out = out.add(full.apply(c));
    }
    return out;
  }

  /** A schema given with {@code .schema(...)}: any subset of the columns, their types. */
  static void check(StructType full, StructType requested, String kind) {
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (StructField f : requested.fields()) {
      if (!seen.add(f.name())) {
        throw new IllegalArgumentException("columns named twice: " + String.join(", ", requested.fieldNames()));
      }
      if (!List.of(full.fieldNames()).contains(f.name())) {
        throw new IllegalArgumentException(
            "no column '" + f.name() + "' in " + kind + " rows; they have " + String.join(", ", full.fieldNames()));
      }
      StructField ours = full.apply(f.name());
      if (!ours.dataType().equals(f.dataType())) {
        throw new IllegalArgumentException(
            "column '" + f.name() + "' is " + ours.dataType().simpleString() + ", not " + f.dataType().simpleString());
      }
      if (ours.nullable() && !f.nullable()) {
        throw new IllegalArgumentException(
            "column '" + f.name() + "' can be null (in flagged rows); declare it nullable");
      }
    }
  }
}
