package io.bkcodec.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The files a read's paths name, as the Python source lists them
 * ({@code bkcodec_spark.files.expand_paths}): files, directories (walked), and globs
 * ({@code *}, {@code ?}, {@code [...]} within a name, {@code **} across directories; names
 * starting with a dot only when the pattern's name does), absolute, sorted, no repeats.
 * A {@code file:} prefix is dropped; remote URIs are for the Python source.
 */
final class Paths {
  private Paths() {}

  private static final Pattern SCHEME = Pattern.compile("^([A-Za-z][A-Za-z0-9+.-]*)://.*");

  /** The paths Spark hands over: {@code path}, or {@code paths} as a JSON list. */
  static List<String> given(String path, String paths) {
    if (paths != null && !paths.isEmpty()) {
      if (paths.startsWith("[")) {
        try {
          return Arrays.asList(new ObjectMapper().readValue(paths, String[].class));
        } catch (IOException e) {
          throw new IllegalArgumentException("paths is not a JSON list of strings: " + paths, e);
        }
      }
      return List.of(paths);
    }
    if (path != null && !path.isEmpty()) {
      return List.of(path);
    }
    throw new IllegalArgumentException(
        "give the files to read: spark.read.format(\"bookkeeper-jvm\").load(path_or_glob)");
  }

  static List<String> expand(List<String> given, boolean missingOk) throws FileNotFoundException {
    TreeSet<String> found = new TreeSet<>();
    for (String one : given) {
      String local = local(one);
      Path abs = Path.of(expandUser(local)).toAbsolutePath().normalize();
      String text = abs.toString();
      if (hasMagic(text)) {
        List<Path> matches = glob(abs);
        if (matches.isEmpty() && !missingOk) {
          throw new FileNotFoundException("no file matches " + text);
        }
        for (Path m : matches) {
          add(found, m, missingOk);
        }
      } else {
        add(found, abs, missingOk);
      }
    }
    return new ArrayList<>(found);
  }

  private static void add(TreeSet<String> found, Path p, boolean missingOk) throws FileNotFoundException {
    if (Files.isDirectory(p)) {
      try (Stream<Path> walk = Files.walk(p)) {
        walk.filter(q -> !Files.isDirectory(q)).forEach(q -> found.add(q.toString()));
      } catch (IOException | UncheckedIOException e) {
        throw new IllegalArgumentException("cannot list " + p + ": " + e.getMessage(), e);
      }
    } else if (Files.exists(p) || missingOk) {
      found.add(p.toString());
    } else {
      throw new FileNotFoundException("no such file or directory: " + p);
    }
  }

  private static String local(String path) {
    if (path.startsWith("file://")) {
      return path.substring("file://".length());
    }
    if (path.startsWith("file:")) {
      return path.substring("file:".length());
    }
    if (SCHEME.matcher(path).matches()) {
      throw new IllegalArgumentException(
          "the bookkeeper-jvm source reads local files; " + path + " is read by the Python bookkeeper source");
    }
    return path;
  }

  private static String expandUser(String path) {
    if (path.equals("~") || path.startsWith("~/")) {
      return System.getProperty("user.home") + path.substring(1);
    }
    return path;
  }

  static boolean hasMagic(String s) {
    return s.indexOf('*') >= 0 || s.indexOf('?') >= 0 || s.indexOf('[') >= 0;
  }

  /** Files and directories matching an absolute glob, sorted. */
  static List<Path> glob(Path pattern) {
    List<Path> current = new ArrayList<>();
    current.add(pattern.getRoot());
    for (Path part : pattern) {
      String name = part.toString();
      List<Path> next = new ArrayList<>();
      for (Path dir : current) {
        if (name.equals("**")) {
          next.addAll(recursiveDirs(dir));
        } else if (hasMagic(name)) {
          Pattern re = Pattern.compile(regex(name));
          File[] children = dir.toFile().listFiles();
          if (children == null) {
            continue;
          }
          Arrays.sort(children);
          for (File c : children) {
            String n = c.getName();
            if (n.startsWith(".") && !name.startsWith(".")) {
              continue;
            }
            if (re.matcher(n).matches()) {
              next.add(c.toPath());
            }
          }
        } else {
          Path p = dir.resolve(name);
          if (Files.exists(p)) {
            next.add(p);
          }
        }
      }
      current = next;
    }
    if (pattern.getFileName() != null && pattern.getFileName().toString().equals("**")) {
      // A trailing ** matches files too, at any depth.
      List<Path> all = new ArrayList<>();
      for (Path d : current) {
        all.add(d);
        File[] children = d.toFile().listFiles(File::isFile);
        if (children != null) {
          for (File c : children) {
            if (!c.getName().startsWith(".")) {
              all.add(c.toPath());
            }
          }
        }
      }
      current = all;
    }
    current.sort(null);
    return current;
  }

  /** A directory and every directory under it (hidden ones left out), as ** matches them. */
  private static List<Path> recursiveDirs(Path dir) {
    List<Path> out = new ArrayList<>();
    out.add(dir);
    File[] children = dir.toFile().listFiles(File::isDirectory);
    if (children != null) {
      Arrays.sort(children);
      for (File c : children) {
        if (!c.getName().startsWith(".")) {
          out.addAll(recursiveDirs(c.toPath()));
        }
      }
    }
    return out;
  }

  /** fnmatch's translation of one name's pattern. */
  static String regex(String name) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == '*') {
        out.append(".*");
      } else if (c == '?') {
        out.append('.');
      } else if (c == '[' && name.indexOf(']', i + 2) > 0) {
        int end = name.indexOf(']', i + 2);
        String body = name.substring(i + 1, end);
        if (body.startsWith("!")) {
          body = "^" + body.substring(1);
        }
        out.append('[').append(body.replace("\\", "\\\\")).append(']');
        i = end;
      } else {
        out.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return out.toString();
  }
}
