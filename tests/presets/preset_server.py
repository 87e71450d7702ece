"""A local HTTP server for download tests (http.server in a thread).

Serves `files` (`{"/path": bytes}`), answers 404 for anything else, counts
requests per path, can drop the connection part-way (`cut = {"/path":
bytes}` after announcing the full Content-Length), and can send slowly
(`slow = {"/path": seconds per 1 KiB chunk}`) so a test can kill a
download half-way.
"""

import http.server
import threading
import time


class Server:
    def __init__(self):
        self.files = {}
        self.slow = {}
        self.cut = {}  # path -> bytes sent before the connection drops
        self.requests = {}
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                with server.lock:
                    server.requests[self.path] = (
                        server.requests.get(self.path, 0) + 1
                    )
                data = server.files.get(self.path)
                if data is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                delay = server.slow.get(self.path)
                try:
                    if self.path in server.cut:
                        self.wfile.write(data[: server.cut[self.path]])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    if delay is None:
                        self.wfile.write(data)
                        return
                    for start in range(0, len(data), 1024):
                        self.wfile.write(data[start : start + 1024])
                        self.wfile.flush()
                        time.sleep(delay)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, daemon=True
        )
        self.thread.start()

    def count(self, path):
        with self.lock:
            return self.requests.get(path, 0)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
