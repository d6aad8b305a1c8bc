package io.bkcodec.spark;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A 64-bit integer column read in place from a native batch's buffers (Arrow layout:
 * little-endian values, a validity bitmap when some are null). Spark's generated code
 * calls {@link #getLong} and {@link #isNullAt} once per row; here each is one load, where
 * an {@code ArrowColumnVector} goes through an accessor and a checked Arrow buffer.
 */
final class NativeLongVector extends ColumnVector {
  private final int rows;
  private final int nulls;
  /** The validity bitmap's address, 0 when no value is null. */
  private final long validity;
  private final long values;
  private Runnable release;

  NativeLongVector(DataType type, int rows, int nulls, long validity, long validityLength, long values, long valuesLength, Runnable release) {
    super(type);
    // The addresses come from the native library; lengths it reports too short would
    // make a load read past them, so they are checked once here.
    if (valuesLength < 8L * rows || (nulls > 0 && (validity == 0 || validityLength < (rows + 7L) / 8))) {
      throw new IllegalStateException("a native column of " + rows + " rows has buffers of " + valuesLength + " and " + validityLength + " bytes");
    }
    this.rows = rows;
    this.nulls = nulls;
    this.validity = nulls > 0 ? validity : 0;
    this.values = values;
    this.release = release;
  }

  @Override
  public void close() {
    Runnable r = release;
    release = null;
    if (r != null) {
      r.run();
    }
  }

  @Override
  public boolean hasNull() {
    return nulls > 0;
  }

  @Override
  public int numNulls() {
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return validity != 0 && (Platform.getByte(null, validity + (rowId >>> 3)) & (1 << (rowId & 7))) == 0;
  }

  @Override
  public long getLong(int rowId) {
    return Platform.getLong(null, values + 8L * rowId);
  }

  private UnsupportedOperationException notLong() {
    return new UnsupportedOperationException("a " + dataType().simpleString() + " column read as another type");
  }

  @Override
  public boolean getBoolean(int rowId) {
    throw notLong();
  }

  @Override
  public byte getByte(int rowId) {
    throw notLong();
  }

  @Override
  public short getShort(int rowId) {
    throw notLong();
  }

  @Override
  public int getInt(int rowId) {
    throw notLong();
  }

  @Override
  public float getFloat(int rowId) {
    throw notLong();
  }

  @Override
  public double getDouble(int rowId) {
    throw notLong();
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw notLong();
  }

  @Override
  public ColumnarMap getMap(int ordinal) {
    throw notLong();
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    throw notLong();
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    throw notLong();
  }

  @Override
  public byte[] getBinary(int rowId) {
    throw notLong();
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw notLong();
  }
}
