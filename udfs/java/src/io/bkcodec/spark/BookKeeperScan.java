package io.bkcodec.spark;

import java.util.ArrayList;
import java.util.List;
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
 * is decoded), filters on {@code ledger_id} are applied as rows are read and prune entry
 * logs by their ledgers maps, and the files are cut into byte ranges and packed into
 * partitions by the Rust core's planner ({@code bkcodec_core::plan}).
 */
final class BookKeeperScan
    implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownFilters, Scan, Batch {
  private static final Logger LOG = Logger.getLogger(BookKeeperScan.class.getName());
  private final ReadOptions read;
  private final String kind;
  private StructType schema;
  private List<List<Split>> planned;
  private Filter[] pushed = new Filter[0];
  /** Inclusive ledger id ranges the pushed filters admit; null: no ledger filter. */
  private List<long[]> ledgerRanges;

  BookKeeperScan(ReadOptions read, String kind, StructType schema) {
    this.read = read;
    this.kind = kind;
    this.schema = schema;
  }

  @Override
  public void pruneColumns(StructType required) {
    schema = required;
  }

  /** Takes the filters on {@code ledger_id} it can apply exactly; Spark still evaluates
   * every filter after the scan (they are cheap on the rows left), so a row is never
   * kept or dropped on this source's word alone. */
  @Override
  public Filter[] pushFilters(Filter[] filters) {
    List<Filter> taken = new ArrayList<>();
    List<long[]> ranges = null;
    for (Filter f : filters) {
      List<long[]> r = LedgerFilters.ranges(f);
      if (r != null) {
        taken.add(f);
        ranges = ranges == null ? r : LedgerFilters.intersect(ranges, r);
      }
    }
    pushed = taken.toArray(new Filter[0]);
    ledgerRanges = ranges;
    return filters;
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed;
  }

  /** The reader's options, with the pushed ledger ranges. */
  private String[] readerOptions() {
    if (ledgerRanges == null) {
      return read.reader;
    }
    String[] out = java.util.Arrays.copyOf(read.reader, read.reader.length + 2);
    out[out.length - 2] = "pushedLedgerRanges";
    out[out.length - 1] = LedgerFilters.text(ledgerRanges);
    return out;
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
    return "BookKeeperJvmScan[kind=" + kind + ", columns=[" + String.join(", ", schema.fieldNames()) + "]"
        + (ledgerRanges == null ? "" : ", ledger_id in [" + LedgerFilters.text(ledgerRanges) + "]") + "]";
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
