package io.bkcodec.spark;

/** Malformed or damaged BookKeeper data the native reader could not turn into rows;
 * the message names the file and the byte offset. */
public class BookKeeperFormatException extends RuntimeException {
  public BookKeeperFormatException(String message) {
    super(message);
  }
}
