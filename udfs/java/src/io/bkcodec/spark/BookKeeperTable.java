package io.bkcodec.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The files a {@code load()} names, read in batches. */
final class BookKeeperTable implements SupportsRead {
  private final ReadOptions read;
  private final String kind;
  private final StructType schema;

  BookKeeperTable(ReadOptions read, String kind, StructType schema) {
    this.read = read;
    this.kind = kind;
    this.schema = schema;
  }

  @Override
  public String name() {
    return "bookkeeper-jvm " + kind + " " + (read.paths != null ? read.paths : read.path);
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new BookKeeperScan(read, kind, schema);
  }
}
