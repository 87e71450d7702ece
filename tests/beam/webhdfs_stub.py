"""A WebHDFS REST endpoint over a local folder, for tests on 127.0.0.1.

Beam's `hdfs://` file system (`apache_beam.io.hadoopfilesystem`) talks to
HDFS through the `hdfs` package's WebHDFS client, i.e. the REST protocol
of https://hadoop.apache.org/docs/stable/hadoop-project-dist/hadoop-hdfs/
WebHDFS.html. No HDFS name node can be installed from the package index,
so this serves the operations that client sends, with the replies that
page documents, over a temporary folder:

    GET    GETFILESTATUS LISTSTATUS OPEN(offset, length) GETFILECHECKSUM
           GETCONTENTSUMMARY
    PUT    MKDIRS RENAME CREATE(overwrite; two steps: a 307 to the data
           URL, then the bytes, plain or chunked)
    DELETE DELETE(recursive)

Errors are `RemoteException` JSON bodies (404 FileNotFoundException, 403
FileAlreadyExistsException), which the client turns into `HdfsError`s.
It is a protocol double for the client side, not HDFS: no blocks,
permissions or leases.
"""

import contextlib
import hashlib
import http.server
import json
import os
import shutil
import threading
import urllib.parse

PREFIX = "/webhdfs/v1"


class _Missing(Exception):
    pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: tests read replies, not logs
        pass

    # -- plumbing ---------------------------------------------------------

    def _parse(self):
        url = urllib.parse.urlsplit(self.path)
        if not url.path.startswith(PREFIX):
            raise _Missing(url.path)
        hdfs_path = urllib.parse.unquote(url.path[len(PREFIX) :]) or "/"
        params = dict(urllib.parse.parse_qsl(url.query))
        local = os.path.normpath(
            os.path.join(self.server.root, hdfs_path.lstrip("/"))
        )
        if os.path.commonpath([local, self.server.root]) != self.server.root:
            raise _Missing(hdfs_path)
        return hdfs_path, params.get("op", "").upper(), params, local

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _reply(self, status, payload=None, raw=None, headers=()):
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header(
            "Content-Type",
            "application/octet-stream"
            if raw is not None
            else "application/json",
        )
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, exception, message):
        self._reply(
            status,
            {
                "RemoteException": {
                    "exception": exception,
                    "javaClassName": "java.io." + exception,
                    "message": message,
                }
            },
        )

    def _dispatch(self, method):
        body = self._body() if method in ("PUT", "POST") else b""
        try:
            hdfs_path, op, params, local = self._parse()
            handler = getattr(self, f"_{method.lower()}_{op.lower()}", None)
            if handler is None:
                self._error(400, "IllegalArgumentException", f"{method} {op}")
                return
            handler(hdfs_path, params, local, body)
        except _Missing as missing:
            self._error(
                404, "FileNotFoundException", f"File does not exist: {missing}"
            )

    def do_GET(self):
        self._dispatch("GET")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    # -- operations -------------------------------------------------------

    @staticmethod
    def _status(local, suffix=""):
        if not os.path.exists(local):
            raise _Missing(local)
        st = os.stat(local)
        is_dir = os.path.isdir(local)
        return {
            "accessTime": int(st.st_atime * 1000),
            "blockSize": 134217728,
            "childrenNum": len(os.listdir(local)) if is_dir else 0,
            "group": "supergroup",
            "length": 0 if is_dir else st.st_size,
            "modificationTime": int(st.st_mtime * 1000),
            "owner": "beam",
            "pathSuffix": suffix,
            "permission": "755" if is_dir else "644",
            "replication": 0 if is_dir else 1,
            "type": "DIRECTORY" if is_dir else "FILE",
        }

    def _get_getfilestatus(self, hdfs_path, params, local, body):
        self._reply(200, {"FileStatus": self._status(local)})

    def _get_liststatus(self, hdfs_path, params, local, body):
        if os.path.isdir(local):
            statuses = [
                self._status(os.path.join(local, name), name)
                for name in sorted(os.listdir(local))
            ]
        else:
            statuses = [self._status(local)]
        self._reply(200, {"FileStatuses": {"FileStatus": statuses}})

    def _get_getcontentsummary(self, hdfs_path, params, local, body):
        sizes = [self._status(local)["length"]]
        if os.path.isdir(local):
            for folder, _, names in os.walk(local):
                sizes += [
                    os.path.getsize(os.path.join(folder, n)) for n in names
                ]
        self._reply(200, {"ContentSummary": {"length": sum(sizes)}})

    def _get_open(self, hdfs_path, params, local, body):
        if not os.path.isfile(local):
            raise _Missing(hdfs_path)
        with open(local, "rb") as f:
            f.seek(int(params.get("offset", 0)))
            length = params.get("length")
            data = f.read(int(length)) if length else f.read()
        self._reply(200, raw=data)

    def _get_getfilechecksum(self, hdfs_path, params, local, body):
        if not os.path.isfile(local):
            raise _Missing(hdfs_path)
        with open(local, "rb") as f:
            digest = hashlib.md5(f.read()).hexdigest()
        checksum = {"algorithm": "MD5", "bytes": digest, "length": 16}
        self._reply(200, {"FileChecksum": checksum})

    def _put_mkdirs(self, hdfs_path, params, local, body):
        os.makedirs(local, exist_ok=True)
        self._reply(200, {"boolean": True})

    def _put_create(self, hdfs_path, params, local, body):
        if os.path.exists(local) and params.get("overwrite") != "true":
            self._error(
                403, "FileAlreadyExistsException", f"{hdfs_path} exists"
            )
            return
        if params.get("data") != "true":
            # Step 1: the name node points the client at a data node.
            query = urllib.parse.urlencode(dict(params, data="true"))
            location = (
                f"http://127.0.0.1:{self.server.server_port}"
                f"{PREFIX}{urllib.parse.quote(hdfs_path)}?{query}"
            )
            self._reply(307, {}, headers=[("Location", location)])
            return
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "wb") as f:
            f.write(body)
        self._reply(201, raw=b"", headers=[("Location", "hdfs://" + hdfs_path)])

    def _put_rename(self, hdfs_path, params, local, body):
        destination = os.path.normpath(
            os.path.join(self.server.root, params["destination"].lstrip("/"))
        )
        if os.path.isdir(destination):
            destination = os.path.join(destination, os.path.basename(local))
        done = (
            os.path.exists(local)
            and not os.path.exists(destination)
            and os.path.isdir(os.path.dirname(destination))
        )
        if done:
            os.rename(local, destination)
        self._reply(200, {"boolean": done})

    def _delete_delete(self, hdfs_path, params, local, body):
        if not os.path.exists(local):
            self._reply(200, {"boolean": False})
            return
        if os.path.isdir(local):
            if os.listdir(local) and params.get("recursive") != "true":
                self._error(403, "IOException", f"{hdfs_path} is non empty")
                return
            shutil.rmtree(local)
        else:
            os.remove(local)
        self._reply(200, {"boolean": True})


@contextlib.contextmanager
def serve(root):
    """Serves `root` as WebHDFS on 127.0.0.1; yields the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.root = os.path.realpath(str(root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
