package io.bkcodec.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.TaskCompletionListener;

/**
 * One partition's splits, one after another, as batches. Each batch has its own
 * buffers, freed when Spark closes its vectors; {@link #close} closes the file only,
 * never a batch Spark (or a Python UDF) may still hold. Batches still open when the
 * task ends are closed then: Spark 4.3 hands a Python UDF's input batches over as they
 * are and never closes them (its Python runner works in the task's thread, so nothing
 * reads them once the task has ended).
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
  /** Batches handed out whose buffers are not all released yet. */
  private final List<ArrowBatches.Handed> open = new ArrayList<>();

  ColumnarReader(List<Split> splits, String kind, String[] options, StructType schema) {
    this.splits = splits;
    this.kind = kind;
    this.options = options;
    this.schema = schema;
    this.columns = schema.fieldNames();
    TaskContext task = TaskContext.get();
    if (task != null) {
      task.addTaskCompletionListener((TaskCompletionListener) ended -> closeOpenBatches());
    }
  }

  /** Closes the batches handed out that Spark left open (closing one twice is harmless). */
  private synchronized void closeOpenBatches() {
    for (ArrowBatches.Handed h : open) {
      h.batch.close();
    }
    open.clear();
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
        ArrowBatches.Handed handed = ArrowBatches.columnar(described, schema);
        synchronized (this) {
          open.removeIf(ArrowBatches.Handed::freed);
          open.add(handed);
        }
        current = handed.batch;
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
