package io.bkcodec.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

/**
 * The scan: only the columns a query uses are built (without {@code payload} no payload
 * is decoded), and filters on the row-filter options' columns ({@code ledger_id},
 * {@code entry_id}, {@code scope_id}, {@code log_id}, {@code journal_id}, {@code offset})
 * are applied as rows are read and prune the read before it starts: entry logs by their
 * ledgers maps, files by the ids in their names, files narrowed to the bytes an offset
 * filter allows. The files are cut into byte ranges and packed into partitions by the
 * Rust core's planner ({@code bkcodec_core::plan}).
 */
final class BookKeeperScan
    implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownFilters, Scan, Batch {
  private static final Logger LOG = Logger.getLogger(BookKeeperScan.class.getName());
  private final ReadOptions read;
  private final String kind;
  private StructType schema;
  private List<List<Split>> planned;
  private Filter[] pushed = new Filter[0];
  /** The columns whose filters become the core's row filters, as the options do. */
  static final List<String> RANGE_COLUMNS = List.of("ledger_id", "entry_id", "scope_id", "log_id", "journal_id", "offset");
  /** By column, the inclusive ranges the pushed filters admit (columns with no filter absent). */
  private final Map<String, List<long[]>> pushedRanges = new LinkedHashMap<>();

  BookKeeperScan(ReadOptions read, String kind, StructType schema) {
    this.read = read;
    this.kind = kind;
    this.schema = schema;
  }

  @Override
  public void pruneColumns(StructType required) {
    schema = required;
  }

  /** Takes the filters on {@link #RANGE_COLUMNS} it can apply exactly; Spark still
   * evaluates every filter after the scan (they are cheap on the rows left), so a row is
   * never kept or dropped on this source's word alone. */
  @Override
  public Filter[] pushFilters(Filter[] filters) {
    List<Filter> taken = new ArrayList<>();
    pushedRanges.clear();
    for (Filter f : filters) {
      for (String column : RANGE_COLUMNS) {
        List<long[]> r = ColumnRanges.ranges(f, column);
        if (r != null) {
          taken.add(f);
          pushedRanges.merge(column, r, ColumnRanges::intersect);
          break;
        }
      }
    }
    pushed = taken.toArray(new Filter[0]);
    return filters;
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed;
  }

  /** The reader's options, with the pushed ranges ({@code pushed.<column>}). */
  private String[] readerOptions() {
    List<String> out = new ArrayList<>(List.of(read.reader));
    for (Map.Entry<String, List<long[]>> e : pushedRanges.entrySet()) {
      out.add("pushed." + e.getKey());
      out.add(ColumnRanges.text(e.getValue()));
    }
    return out.toArray(new String[0]);
  }

  @Override
  public Scan build() {
    return this;
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    StringBuilder ranges = new StringBuilder();
    for (Map.Entry<String, List<long[]>> e : pushedRanges.entrySet()) {
      ranges.append(", ").append(e.getKey()).append(" in [").append(ColumnRanges.text(e.getValue())).append(']');
    }
    return "BookKeeperJvmScan[kind=" + kind + ", columns=[" + String.join(", ", schema.fieldNames()) + "]" + ranges + "]";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  /** Listed when Spark plans the read: a file named explicitly that has gone is one flagged row. */
  private synchronized List<List<Split>> plan() {
    if (planned == null) {
      List<String> files = BookKeeperJvmSource.listFiles(read, true);
      String[] lines = Native.plan(files.toArray(new String[0]), kind, read.splitSize, read.minPartitions, readerOptions());
      if (!lines[1].isEmpty()) {
        LOG.warning(lines[1]);
      }
      List<List<Split>> groups = new ArrayList<>();
      for (int i = 2; i < lines.length; i++) {
        String[] f = lines[i].split("\t", 6);
        if (f[0].equals("skip")) {
          LOG.warning("skipped " + f[1] + ": " + (f.length > 2 ? f[2] : ""));
          continue;
        }
        int group = Integer.parseInt(f[0]);
        while (groups.size() <= group) {
          groups.add(new ArrayList<>());
        }
        groups.get(group).add(new Split(f[5], f[1], Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4])));
      }
      planned = groups;
    }
    return planned;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    List<List<Split>> groups = plan();
    InputPartition[] out = new InputPartition[groups.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = new SplitPartition(groups.get(i));
    }
    return out;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new ColumnarReaderFactory(kind, readerOptions(), schema);
  }
}
