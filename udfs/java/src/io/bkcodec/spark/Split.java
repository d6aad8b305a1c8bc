package io.bkcodec.spark;

import java.io.Serializable;

/** A file, or the byte range {@code [start, end)} of one (-1, -1: the whole file). */
final class Split implements Serializable {
  private static final long serialVersionUID = 1L;
  final String path;
  final String kind;
  final long start;
  final long end;
  final long size;

  Split(String path, String kind, long start, long end, long size) {
    this.path = path;
    this.kind = kind;
    this.start = start;
    this.end = end;
    this.size = size;
  }

  @Override
  public String toString() {
    return start < 0 ? path : path + " (bytes " + start + ".." + end + ")";
  }
}
