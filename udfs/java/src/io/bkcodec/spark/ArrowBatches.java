package io.bkcodec.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The native library's buffers as Arrow vectors, without a copy: each buffer is wrapped
 * with {@link BufferAllocator#wrapForeignAllocation}, and when the last of a batch's
 * buffers is released (Spark closes the batch's vectors) the batch is freed in Rust.
 */
public final class ArrowBatches {
  private ArrowBatches() {}

  private static final int PER_COLUMN = 7;
  private static final BufferAllocator ALLOCATOR = new RootAllocator(Long.MAX_VALUE);

  /** Bytes of Arrow memory this source's vectors hold now (0 once every batch is closed). */
  public static long allocatedBytes() {
    return ALLOCATOR.getAllocatedMemory();
  }

  /** Batches the native library has handed out and not had back (0 once every batch is closed). */
  public static long liveNativeBatches() {
    return Native.liveBatches();
  }

  /** A batch handed to Spark, and the references to its native buffers still held. */
  static final class Handed {
    final ColumnarBatch batch;
    private final AtomicInteger refs;

    Handed(ColumnarBatch batch, AtomicInteger refs) {
      this.batch = batch;
      this.refs = refs;
    }

    /** Whether every vector over its buffers is closed (and the native batch freed). */
    boolean freed() {
      return refs.get() == 0;
    }
  }

  static Handed columnar(long[] d, StructType schema) {
    long batch = d[0];
    int rows = Math.toIntExact(d[1]);
    StructField[] fields = schema.fields();
    if (d.length != 2 + PER_COLUMN * fields.length) {
      Native.freeBatch(batch);
      throw new IllegalStateException("the native batch has " + (d.length - 2) / PER_COLUMN + " columns, not " + fields.length);
    }
    // One reference for the set-up, one per wrapped buffer: the batch is freed when all are gone.
    AtomicInteger refs = new AtomicInteger(1);
    ColumnVector[] vectors = new ColumnVector[fields.length];
    List<ArrowBuf> ours = new ArrayList<>();
    try {
      for (int i = 0; i < fields.length; i++) {
        int at = 2 + PER_COLUMN * i;
        long nulls = d[at];
        FieldVector v = vector(fields[i]);
        List<ArrowBuf> buffers = new ArrayList<>(3);
        buffers.add(nulls > 0 ? wrap(batch, refs, d[at + 1], d[at + 2], ours) : ALLOCATOR.getEmpty());
        if (v instanceof VarCharVector || v instanceof VarBinaryVector) {
          buffers.add(wrap(batch, refs, d[at + 3], d[at + 4], ours));
        }
        buffers.add(wrap(batch, refs, d[at + 5], d[at + 6], ours));
        v.loadFieldBuffers(new ArrowFieldNode(rows, nulls), buffers);
        // 64-bit integers are read in place (see NativeLongVector).
        vectors[i] = v instanceof BigIntVector
            ? NativeLongVector.over((BigIntVector) v, d[at + 1], d[at + 2], d[at + 5], d[at + 6])
            : new ArrowColumnVector(v);
      }
    } catch (RuntimeException e) {
      for (ColumnVector v : vectors) {
        if (v != null) {
          v.close();
        }
      }
      throw e;
    } finally {
      // The vectors hold their own references now.
      for (ArrowBuf b : ours) {
        b.close();
      }
      release(batch, refs);
    }
    ColumnarBatch out = new ColumnarBatch(vectors);
    out.setNumRows(rows);
    return new Handed(out, refs);
  }

  private static void release(long batch, AtomicInteger refs) {
    if (refs.decrementAndGet() == 0) {
      Native.freeBatch(batch);
    }
  }

  private static ArrowBuf wrap(long batch, AtomicInteger refs, long address, long length, List<ArrowBuf> ours) {
    if (length <= 0 || address == 0) {
      return ALLOCATOR.getEmpty();
    }
    refs.incrementAndGet();
    ArrowBuf buf;
    try {
      buf = ALLOCATOR.wrapForeignAllocation(new ForeignAllocation(length, address) {
        @Override
        protected void release0() {
          release(batch, refs);
        }
      });
    } catch (RuntimeException e) {
      refs.decrementAndGet();
      throw e;
    }
    ours.add(buf);
    return buf;
  }

  private static FieldVector vector(StructField f) {
    DataType t = f.dataType();
    String n = f.name();
    if (t.equals(DataTypes.LongType)) {
      return new BigIntVector(n, ALLOCATOR);
    } else if (t.equals(DataTypes.IntegerType)) {
      return new IntVector(n, ALLOCATOR);
    } else if (t.equals(DataTypes.ShortType)) {
      return new SmallIntVector(n, ALLOCATOR);
    } else if (t.equals(DataTypes.ByteType)) {
      return new TinyIntVector(n, ALLOCATOR);
    } else if (t.equals(DataTypes.BooleanType)) {
      return new BitVector(n, ALLOCATOR);
    } else if (t.equals(DataTypes.DoubleType)) {
      return new Float8Vector(n, ALLOCATOR);
    } else if (t.equals(DataTypes.StringType)) {
      return new VarCharVector(n, ALLOCATOR);
    } else if (t.equals(DataTypes.BinaryType)) {
      return new VarBinaryVector(n, ALLOCATOR);
    }
    throw new IllegalStateException("no Arrow vector for " + t.simpleString());
  }
}
