#!/usr/bin/env python3
"""A collector for the benchmarks' traces: answers every OTLP/HTTP POST with 200 and counts the
spans it got (printed on SIGTERM). Usage: otlp_sink.py PORT"""
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

spans = 0


class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        global spans
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            for rs in json.loads(body)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    spans += len(ss["spans"])
        except (ValueError, KeyError):
            self.send_response(400)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def stop(*_):
    print(f"otlp_sink: {spans} spans", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
