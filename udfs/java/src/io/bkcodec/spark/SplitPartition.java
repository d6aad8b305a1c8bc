package io.bkcodec.spark;

import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/** Files or byte ranges one task reads, one after another. */
final class SplitPartition implements InputPartition {
  private static final long serialVersionUID = 1L;
  final List<Split> splits;

  SplitPartition(List<Split> splits) {
    this.splits = List.copyOf(splits);
  }

  @Override
  public String toString() {
    return "SplitPartition" + splits;
  }
}
