package io.bkcodec.spark;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * The native library (rust/jni): bkcodec's Rust core behind JNI. It ships inside this
 * jar under {@code native/<os>-<arch>/} and is extracted to a temporary file and loaded
 * once per JVM, so executors need nothing installed; {@code -Dbkcodec.jni.library=PATH}
 * loads another build instead.
 *
 * <p>Readers and batches are handles (ids the library checks, never pointers). A batch's
 * buffers stay valid until {@link #freeBatch}; closing a reader never frees its batches.
 */
final class Native {
  private Native() {}

  static final String RESOURCE_DIR = "native/" + platform() + "/";
  static final String LIBRARY = "libbkcodec_jni.so";

  static {
    load();
  }

  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String o = os.contains("linux") ? "linux" : os.contains("mac") ? "darwin" : os.replace(' ', '_');
    String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64" : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
    return o + "-" + a;
  }

  private static void load() {
    String given = System.getProperty("bkcodec.jni.library");
    if (given != null && !given.isEmpty()) {
      System.load(Path.of(given).toAbsolutePath().toString());
      return;
    }
    String resource = RESOURCE_DIR + LIBRARY;
    try (InputStream in = Native.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(
            "this bkcodec jar has no native library for " + platform() + " (no " + resource
                + " inside it); read with the Python bookkeeper source, or build the jar on this platform");
      }
      Path file = Files.createTempFile("libbkcodec_jni", ".so");
      file.toFile().deleteOnExit();
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      System.load(file.toAbsolutePath().toString());
    } catch (IOException e) {
      throw new UnsatisfiedLinkError("could not extract " + resource + ": " + e);
    }
  }

  /** {@code name<TAB>type<TAB>nullable} lines: every column of a read of {@code kind}. */
  static native String schema(String kind, String[] options);

  /** The read's kind, a note ("" or why it is empty), then one line per split:
   * {@code partition<TAB>kind<TAB>start<TAB>end<TAB>size<TAB>path} (-1: none), then
   * {@code skip<TAB>path<TAB>why} for files named like bookie files that are not; entry logs
   * whose ledgers map rules out the pushed ledger filter ({@code options}) are left out. */
  static native String[] plan(String[] paths, String kind, long splitSize, long minPartitions, String[] options);

  /** A reader of one split (start and end -1: the whole file) giving {@code columns}. */
  static native long open(String path, String readKind, String fileKind, long start, long end, String[] options, String[] columns);

  /** {@code [batch, rows, then per column: null count, validity address, length, offsets
   * address, length, data address, length]}, or null at the end of the split. */
  static native long[] next(long reader);

  static native void freeBatch(long batch);

  static native void close(long reader);

  static native long liveBatches();
}
