"""Small file operations on the driver, on any file system Spark writes.

Local paths (no scheme, or `file:`) use the package's atomic writes;
other URIs (`hdfs://`, `s3a://`, `gs://`, `abfss://`) go through the
Hadoop `FileSystem` of the session (classic Spark sessions: the JVM
gateway), as the Parquet writer does.
"""

import os

from keras_elmo.utils.atomic import atomic_write


def is_local(path):
    return "://" not in path or path.startswith("file:")


def local_path(path):
    """`file:/a/b` or `file:///a/b` -> `/a/b`; a plain path unchanged."""
    if path.startswith("file://"):
        return path[len("file://") :]
    if path.startswith("file:"):
        return path[len("file:") :]
    return path


def _hadoop(spark, path):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(conf), hpath, jvm


def exists(spark, path):
    if is_local(path):
        return os.path.exists(local_path(path))
    fs, hpath, _ = _hadoop(spark, path)
    return bool(fs.exists(hpath))


def list_files(spark, path):
    """`(uri, size, mtime in ms)` of the files a remote path, folder or
    glob names (a folder's files not starting with `_` or `.`)."""
    fs, hpath, _ = _hadoop(spark, path)
    found = []
    for status in fs.globStatus(hpath) or []:
        items = [status]
        if status.isDirectory():
            items = fs.listStatus(status.getPath())
        for item in items:
            if item.isFile() and item.getPath().getName()[0] not in "_.":
                found.append(
                    (
                        item.getPath().toString(),
                        int(item.getLen()),
                        int(item.getModificationTime()),
                    )
                )
    return sorted(found)


def delete(spark, path):
    """Deletes a file if it is there."""
    if is_local(path):
        if os.path.exists(local_path(path)):
            os.remove(local_path(path))
        return
    fs, hpath, _ = _hadoop(spark, path)
    fs.delete(hpath, False)


def join(folder, name):
    return folder.rstrip("/") + "/" + name


def write_text(spark, path, text):
    """Writes `text` (UTF-8) to `path`: a reader sees all of it or none
    (a local rename; elsewhere a temporary file renamed, atomic on HDFS,
    a copy on object stores, which write whole objects anyway)."""
    if is_local(path):
        with atomic_write(local_path(path)) as f:
            f.write(text)
        return
    fs, hpath, jvm = _hadoop(spark, path)
    tmp = jvm.org.apache.hadoop.fs.Path(path + ".tmp")
    stream = fs.create(tmp, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    fs.delete(hpath, False)
    if not fs.rename(tmp, hpath):
        raise OSError(f"Could not rename {path}.tmp to {path}.")
