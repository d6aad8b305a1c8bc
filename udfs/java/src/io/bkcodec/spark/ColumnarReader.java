package io.bkcodec.spark;

import java.util.List;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One partition's splits, one after another, as batches. Each batch has its own
 * buffers, freed when Spark closes its vectors; {@link #close} closes the file only,
 * never a batch Spark (or a Python UDF) may still hold.
 */
final class ColumnarReader implements PartitionReader<ColumnarBatch> {
  private final List<Split> splits;
  private final String kind;
  private final String[] options;
  private final StructType schema;
  private final String[] columns;
  private int nextSplit;
  private long reader;
  private ColumnarBatch current;

  ColumnarReader(List<Split> splits, String kind, String[] options, StructType schema) {
    this.splits = splits;
    this.kind = kind;
    this.options = options;
    this.schema = schema;
    this.columns = schema.fieldNames();
  }

  @Override
  public boolean next() {
    while (true) {
      if (reader == 0) {
        if (nextSplit >= splits.size()) {
          return false;
        }
        Split s = splits.get(nextSplit++);
        reader = Native.open(s.path, kind, s.kind, s.start, s.end, options, columns);
      }
      long[] described = Native.next(reader);
      if (described != null) {
        current = ArrowBatches.columnar(described, schema);
        return true;
      }
      Native.close(reader);
      reader = 0;
    }
  }

  @Override
  public ColumnarBatch get() {
    return current;
  }

  @Override
  public void close() {
    if (reader != 0) {
      Native.close(reader);
      reader = 0;
    }
  }
}
