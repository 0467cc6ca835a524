"""A stand-in for llama-server: parses the flags lathe passes and serves /health,
/v1/models and a canned chat completion on the port it was given.

Behaviour is chosen by FAKE_LLAMA_MODE: "ok" (default), "slow" (health answers 503
"Loading model" for FAKE_LLAMA_DELAY seconds first), "crash" (exits at once with an
error in its log), "never" (answers 503 forever), "amx"
(dies by SIGILL unless given --no-repack). POST /die makes it exit with code 3.
It records its argv in FAKE_LLAMA_ARGV if set, and its pid in FAKE_LLAMA_PID (written
whole, by a rename, so a test waiting for the file never reads half of it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    if "--version" in sys.argv:
        print("version: 0 (fake)")
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", default="fake")
    parser.add_argument("--chat-template-file")
    args, _ = parser.parse_known_args()
    if os.environ.get("FAKE_LLAMA_ARGV"):
        with open(os.environ["FAKE_LLAMA_ARGV"], "w") as f:
            json.dump(sys.argv[1:], f)
    if os.environ.get("FAKE_LLAMA_PID"):
        pid_file = os.environ["FAKE_LLAMA_PID"]
        with open(pid_file + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(pid_file + ".tmp", pid_file)
    mode = os.environ.get("FAKE_LLAMA_MODE", "ok")
    print(f"fake llama-server loading {args.model}", flush=True)
    if mode == "amx" and "--no-repack" not in sys.argv:
        # As llama.cpp's AMX kernels do under a hypervisor that reports but faults AMX.
        print("llama threadpool init, n_threads = 1", flush=True)
        os.kill(os.getpid(), signal.SIGILL)
    if mode == "crash":
        print("error: failed to load model: unsupported file format", flush=True)
        sys.exit(1)
    ready_at = time.monotonic() + float(os.environ.get("FAKE_LLAMA_DELAY", "0"))

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                if mode == "never" or time.monotonic() < ready_at:
                    self._send(503, {"error": {"code": 503, "message": "Loading model"}})
                else:
                    self._send(200, {"status": "ok"})
            elif self.path == "/v1/models":
                self._send(200, {"data": [{"id": args.alias}]})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            if self.path == "/die":
                self._send(200, {"dying": True})
                print("fatal: simulated crash mid-run", flush=True)
                threading.Timer(0.05, lambda: os._exit(3)).start()
                return
            self._send(
                200,
                {
                    "object": "chat.completion",
                    "model": args.alias,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "hello"},
                        }
                    ],
                },
            )

        def log_message(self, format: str, *a: object) -> None:
            print("request", self.path, flush=True)

    try:
        server = ThreadingHTTPServer((args.host, args.port), Handler)
    except OSError as exc:
        print(f"couldn't bind HTTP server socket, port: {args.port}: {exc}", flush=True)
        sys.exit(1)
    print(f"server is listening on http://{args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
