package io.bkcodec.spark;

import org.apache.arrow.vector.BigIntVector;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.unsafe.Platform;

/**
 * A 64-bit integer column over a native batch's buffers (Arrow layout: little-endian
 * values, a validity bitmap when some are null). Spark's generated code calls
 * {@link #getLong} and {@link #isNullAt} once per row; here each is one load, where an
 * {@code ArrowColumnVector} goes through an accessor and a checked Arrow buffer. It is
 * still an {@code ArrowColumnVector} over the same buffers, so what hands Arrow vectors
 * on as they are (Spark's Python UDF input, 4.2 and later) still does.
 */
final class NativeLongVector extends ArrowColumnVector {
  /** The validity bitmap's address, 0 when no value is null. */
  private final long validity;
  private final long values;

  private NativeLongVector(BigIntVector vector, long validity, long values) {
    super(vector);
    this.validity = vector.getNullCount() > 0 ? validity : 0;
    this.values = values;
  }

  /**
   * The vector over {@code vector}, loaded with the native buffers at these addresses
   * and lengths. The lengths come from the native library; ones too short for the rows
   * would make a load read past them, so they are checked here (the vector is closed
   * when they fail).
   */
  static NativeLongVector over(BigIntVector vector, long validity, long validityLength, long values, long valuesLength) {
    int rows = vector.getValueCount();
    int nulls = vector.getNullCount();
    if (valuesLength < 8L * rows || (nulls > 0 && (validity == 0 || validityLength < (rows + 7L) / 8))) {
      vector.close();
      throw new IllegalStateException("a native column of " + rows + " rows has buffers of " + valuesLength + " and " + validityLength + " bytes");
    }
    return new NativeLongVector(vector, validity, values);
  }

  @Override
  public boolean isNullAt(int rowId) {
    return validity != 0 && (Platform.getByte(null, validity + (rowId >>> 3)) & (1 << (rowId & 7))) == 0;
  }

  @Override
  public long getLong(int rowId) {
    return Platform.getLong(null, values + 8L * rowId);
  }
}
