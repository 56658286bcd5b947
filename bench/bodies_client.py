#!/usr/bin/env python3
"""Load client of bench/bodies.sh (issue 30): N concurrent large uploads or downloads against one
HTTP/1.1 endpoint (sluice, nginx or the simulator itself), python3 stdlib only.

    python3 bench/bodies_client.py --port P --direction upload   --transfers 100 --size 52428800
    python3 bench/bodies_client.py --port P --direction download --transfers 100 --size 52428800

upload:   POST /v1/audio/transcriptions (or --route files: POST /v1/files), a multipart body whose
          `file` part is exactly SIZE bytes, sent from one reused 1 MiB buffer (SIZE is never held
          in memory), with Content-Length (or --chunked: Transfer-Encoding: chunked, 1 MiB chunks).
          Verified: status 200 and the answer's JSON accounts for SIZE bytes (the simulator's
          transcription usage.input_tokens == max(1, SIZE // 1024); a file object's bytes == SIZE).
download: POST /v1/audio/speech with `x-sim-speech-bytes: SIZE`; the answer (Content-Length or
          chunked) is read into one 256 KiB buffer per connection and discarded. Verified: status
          200 and exactly SIZE body bytes.

All N connections are opened first (concurrently), then every transfer starts at once. Prints one
JSON object: ok, failed, errors (by kind, and the first few messages), total_bytes (payload bytes
of the transfers that were verified), wall_seconds (first byte sent to last transfer done),
mib_per_second, per-transfer seconds (p50, p99, min, max), and the client's own CPU seconds.
"""
import argparse
import asyncio
import json
import random
import resource
import socket
import sys
import time

PIECE = 1 << 20          # the reused upload buffer
RECV = 256 * 1024        # per-connection receive buffer


class Failed(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class Reader:
    """Buffered reads from a non-blocking socket through the loop, without copying body bytes."""

    def __init__(self, loop, sock):
        self.loop, self.sock = loop, sock
        self.buf = bytearray(RECV)
        self.view = memoryview(self.buf)
        self.start = self.end = 0

    async def fill(self):
        if self.start == self.end:
            self.start = self.end = 0
        elif self.end == len(self.buf):
            n = self.end - self.start
            self.buf[:n] = self.buf[self.start:self.end]
            self.start, self.end = 0, n
        n = await self.loop.sock_recv_into(self.sock, self.view[self.end:])
        if n == 0:
            raise Failed("eof", "connection closed by the server mid-response")
        self.end += n

    async def line(self, limit=64 * 1024):
        while True:
            i = self.buf.find(b"\r\n", self.start, self.end)
            if i >= 0:
                out = bytes(self.buf[self.start:i])
                self.start = i + 2
                return out
            if self.end - self.start > limit:
                raise Failed("protocol", "header line too long")
            await self.fill()

    async def skip(self, n):
        """Consumes n bytes, discarding them."""
        while n > 0:
            if self.start == self.end:
                await self.fill()
            take = min(n, self.end - self.start)
            self.start += take
            n -= take

    async def take(self, n):
        out = bytearray()
        while n > 0:
            if self.start == self.end:
                await self.fill()
            take = min(n, self.end - self.start)
            out += self.view[self.start:self.start + take]
            self.start += take
            n -= take
        return bytes(out)

    async def until_eof(self, keep):
        out, count = bytearray(), 0
        while True:
            if self.start < self.end:
                count += self.end - self.start
                if keep:
                    out += self.view[self.start:self.end]
                self.start = self.end
            try:
                await self.fill()
            except Failed:
                return bytes(out), count


async def read_response(reader, keep_body):
    """Reads one response; returns (status, headers, body bytes counted, body if keep_body)."""
    status_line = await reader.line()
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise Failed("protocol", f"bad status line {status_line[:80]!r}")
    status = int(parts[1])
    headers = {}
    while True:
        h = await reader.line()
        if not h:
            break
        k, _, v = h.partition(b":")
        headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    if status == 100:
        return await read_response(reader, keep_body)
    body, count = b"", 0
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size_line = await reader.line()
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise Failed("protocol", f"bad chunk size line {size_line[:40]!r} after {count} bytes")
            if size == 0:
                while await reader.line():  # trailer fields, then the empty line
                    pass
                break
            if keep_body:
                chunks.append(await reader.take(size))
            else:
                await reader.skip(size)
            count += size
            if await reader.line() != b"":
                raise Failed("protocol", f"chunk of {size} bytes not followed by CRLF")
        body = b"".join(chunks)
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if keep_body:
            body = await reader.take(n)
        else:
            await reader.skip(n)
        count = n
    else:
        body, count = await reader.until_eof(keep_body)
    return status, headers, count, body


def pattern_buffer(boundary):
    """1 MiB of seeded bytes that (even repeated back to back) never contain the boundary."""
    seed = 1
    while True:
        piece = random.Random(seed).randbytes(PIECE)
        probe = piece[-len(boundary):] + piece[:len(boundary)]
        if boundary not in piece and boundary not in probe:
            return memoryview(piece)
        seed += 1


def form_parts(route, size, boundary):
    b = boundary.decode()
    if route == "files":
        fields = [("purpose", "user_data")]
        filename, ctype = "bench.bin", "application/octet-stream"
    else:
        fields = [("model", "whisper-1")]
        filename, ctype = "bench.mp3", "audio/mpeg"
    head = "".join(f"--{b}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n" for k, v in fields)
    head += (f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
             f"Content-Type: {ctype}\r\n\r\n")
    tail = f"\r\n--{b}--\r\n"
    return head.encode(), tail.encode()


def check_upload_answer(route, size, body):
    try:
        j = json.loads(body)
    except ValueError:
        raise Failed("bad_answer", f"answer is not JSON: {body[:120]!r}")
    if route == "files":
        if j.get("bytes") != size:
            raise Failed("bad_answer", f"file object says bytes={j.get('bytes')}, sent {size}")
    else:
        want = max(1, size // 1024)
        got = (j.get("usage") or {}).get("input_tokens")
        if got != want or "text" not in j:
            raise Failed("bad_answer", f"transcription usage.input_tokens={got}, want {want} for {size} bytes")


async def upload(loop, sock, args, buf, head_parts):
    pre, post = head_parts
    path = "/v1/files" if args.route == "files" else "/v1/audio/transcriptions"
    boundary = args.boundary.decode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{args.port}\r\n"
            f"Authorization: Bearer sk-bench-client\r\nConnection: close\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n")
    if args.chunked:
        head += "Transfer-Encoding: chunked\r\n\r\n"
    else:
        head += f"Content-Length: {len(pre) + args.size + len(post)}\r\n\r\n"
    reader = Reader(loop, sock)
    answer = asyncio.ensure_future(read_response(reader, keep_body=True))
    try:
        frame = (lambda b: b"%x\r\n" % len(b) + bytes(b) + b"\r\n") if args.chunked else (lambda b: b)
        await loop.sock_sendall(sock, head.encode() + frame(pre))
        left = args.size
        while left > 0:
            n = min(left, PIECE)
            piece = buf[:n]
            if args.chunked:
                await loop.sock_sendall(sock, b"%x\r\n" % n)
                await loop.sock_sendall(sock, piece)
                await loop.sock_sendall(sock, b"\r\n")
            else:
                await loop.sock_sendall(sock, piece)
            left -= n
            if answer.done():  # answered before the body ended: a refusal
                break
        if left == 0:
            await loop.sock_sendall(sock, frame(post) + (b"0\r\n\r\n" if args.chunked else b""))
    except OSError as e:
        if not answer.done():
            await asyncio.sleep(0.5)
        if not answer.done():
            answer.cancel()
            raise Failed("send", f"{type(e).__name__} after {args.size - left} of {args.size} bytes: {e}")
    status, _, _, body = await answer
    if status != 200:
        raise Failed(f"status_{status}", f"status {status}: {body[:200]!r}")
    if left:
        raise Failed("early_answer", f"answered 200 with {left} bytes unsent")
    check_upload_answer(args.route, args.size, body)
    return args.size


async def download(loop, sock, args):
    body = json.dumps({"model": "tts-1", "input": "hi", "voice": "alloy"}).encode()
    head = (f"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1:{args.port}\r\n"
            f"Authorization: Bearer sk-bench-client\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"x-sim-speech-bytes: {args.size}\r\n")
    if args.rate:
        head += f"x-sim-speech-rate: {args.rate}\r\n"
    await loop.sock_sendall(sock, head.encode() + b"\r\n" + body)
    reader = Reader(loop, sock)
    status, _, count, rbody = await read_response(reader, keep_body=False)
    if status != 200:
        raise Failed(f"status_{status}", f"status {status} ({count} body bytes)")
    if count != args.size:
        raise Failed("short_body", f"{count} body bytes, want {args.size}")
    return count


async def connect(loop, args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await loop.sock_connect(sock, (args.host, args.port))
    return sock


async def main(args):
    loop = asyncio.get_running_loop()
    args.boundary = b"----sluice-bench-bodies-7f3a9c2e41d6"
    buf = pattern_buffer(args.boundary) if args.direction == "upload" else None
    parts = form_parts(args.route, args.size, args.boundary)

    opened = await asyncio.gather(*(connect(loop, args) for _ in range(args.transfers)), return_exceptions=True)
    socks = [s for s in opened if isinstance(s, socket.socket)]
    errors, messages, seconds, total = {}, [], [], 0
    for e in opened:
        if not isinstance(e, socket.socket):
            errors["connect"] = errors.get("connect", 0) + 1
            messages.append(f"connect: {e!r}")

    async def one(sock):
        nonlocal total
        t0 = time.monotonic()
        try:
            coro = upload(loop, sock, args, buf, parts) if args.direction == "upload" else download(loop, sock, args)
            n = await asyncio.wait_for(coro, args.timeout)
            total += n
            seconds.append(time.monotonic() - t0)
        except Failed as e:
            errors[e.kind] = errors.get(e.kind, 0) + 1
            messages.append(str(e))
        except asyncio.TimeoutError:
            errors["timeout"] = errors.get("timeout", 0) + 1
            messages.append(f"no complete answer within {args.timeout} s")
        except (OSError, ValueError) as e:
            errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
            messages.append(repr(e))
        finally:
            sock.close()

    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    await asyncio.gather(*(one(s) for s in socks))
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    seconds.sort()
    q = lambda p: round(seconds[min(len(seconds) - 1, int(p * len(seconds)))], 3) if seconds else None
    print(json.dumps({
        "direction": args.direction, "route": args.route if args.direction == "upload" else "speech",
        "chunked": bool(args.chunked), "transfers": args.transfers, "size_bytes": args.size,
        "ok": len(seconds), "failed": args.transfers - len(seconds),
        "errors": errors, "error_messages": messages[:5],
        "total_bytes": total, "wall_seconds": round(wall, 3),
        "mib_per_second": round(total / 1048576 / wall, 1) if wall > 0 else None,
        "transfer_seconds": {"p50": q(0.5), "p99": q(0.99),
                             "min": round(seconds[0], 3) if seconds else None,
                             "max": round(seconds[-1], 3) if seconds else None},
        "client_cpu_seconds": round((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime), 2),
    }))
    return 0 if len(seconds) == args.transfers else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--direction", choices=["upload", "download"], required=True)
    ap.add_argument("--transfers", type=int, default=100)
    ap.add_argument("--size", type=int, default=50 * 1048576, help="bytes per transfer (the file part / the answer)")
    ap.add_argument("--route", choices=["transcriptions", "files"], default="transcriptions")
    ap.add_argument("--chunked", action="store_true", help="uploads: Transfer-Encoding: chunked instead of a length")
    ap.add_argument("--rate", type=int, default=0, help="downloads: x-sim-speech-rate, bytes/s (0: unlimited)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per transfer")
    sys.exit(asyncio.run(main(ap.parse_args())))
