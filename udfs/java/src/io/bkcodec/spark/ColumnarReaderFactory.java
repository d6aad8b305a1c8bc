package io.bkcodec.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Columnar readers only: every batch Spark gets is Arrow vectors over the core's buffers. */
final class ColumnarReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;
  private final String kind;
  private final String[] options;
  private final StructType schema;

  ColumnarReaderFactory(String kind, String[] options, StructType schema) {
    this.kind = kind;
    this.options = options;
    this.schema = schema;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new ColumnarReader(((SplitPartition) partition).splits, kind, options, schema);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    throw new UnsupportedOperationException("the bookkeeper-jvm source reads columnar batches only");
  }
}
