#!/usr/bin/env python3
"""Slow-clients driver for bench/slow_clients.sh: opens STREAMS streaming requests that never read
their response, then watches the gateway until every stalled stream has been cut.

It samples the gateway's RSS (/proc/PID/status VmRSS, the process alone) and kernel TCP memory
(/proc/net/sockstat) every 100 ms, polls the gateway's /metrics every 250 ms, sends a normal
streaming request every 2 s while the stalled ones are held and one after they were cut, and
prints one JSON object with everything it measured. Standard library only; loopback only.

The never-reading clients set a small receive buffer and a 1460-byte MSS before connecting: the
MSS of an Ethernet path instead of loopback's 64 KiB, which would let each of the gateway's send
buffers grow ~45 times larger than it would towards a real client.
"""
import argparse
import asyncio
import errno
import json
import os
import socket
import sys
import time
import urllib.request


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tcp_kernel_bytes():
    """TCP socket buffer memory of the whole machine (sockstat 'mem', in pages) and orphans."""
    try:
        with open("/proc/net/sockstat") as f:
            for line in f:
                if line.startswith("TCP:"):
                    parts = line.split()
                    fields = dict(zip(parts[1::2], parts[2::2]))
                    return int(fields.get("mem", 0)) * 4096, int(fields.get("orphan", 0))
    except OSError:
        pass
    return 0, 0


def scrape(port):
    """The gateway's metrics we care about (unlabelled series and a few labelled ones)."""
    out = {}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError as e:
        return {"error": str(e)}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name, _, value = line.rpartition(" ")
        if name in ("sluice_streams_active", "sluice_stream_active_buffers", "sluice_stream_buffered_bytes",
                    "sluice_connections_active", "sluice_write_stalls_total", "sluice_queue_depth",
                    "process_open_fds", "process_resident_memory_bytes"):
            out[name] = float(value)
        elif name.startswith("sluice_rejections_total{") and float(value) > 0:
            out[name] = float(value)
        elif name.startswith("sluice_requests_total{") and float(value) > 0:
            out[name] = float(value)
    return out


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except (OSError, ValueError, IndexError):
        return 0.0


def normal_request(port, body, timeout=30):
    """One streaming request read to the end; (http status or error text, saw [DONE], seconds)."""
    t = time.monotonic()
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json", "x-sim-tokens": "16"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            data = r.read()
            return r.status, b"data: [DONE]" in data, time.monotonic() - t
    except Exception as e:  # noqa: BLE001 - any failure is a result here
        return f"error: {e}", False, time.monotonic() - t


async def open_stalled(port, n, request, rcvbuf, mss, concurrency):
    loop = asyncio.get_running_loop()
    socks, errors = [], {}
    sem = asyncio.Semaphore(concurrency)

    async def one():
        async with sem:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
                if mss:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
                s.setblocking(False)
                await asyncio.wait_for(loop.sock_connect(s, ("127.0.0.1", port)), 30)
                await loop.sock_sendall(s, request)
                socks.append(s)
            except (OSError, asyncio.TimeoutError) as e:
                key = errno.errorcode.get(getattr(e, "errno", None) or 0, type(e).__name__)
                errors[key] = errors.get(key, 0) + 1
                s.close()

    await asyncio.gather(*(one() for _ in range(n)))
    return socks, errors


def classify(socks):
    """After the run: what each never-reading socket holds, peeked without consuming it."""
    counts = {"response_bytes_waiting": 0, "closed_without_response": 0, "nothing": 0}
    for s in socks:
        try:
            d = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            counts["response_bytes_waiting" if d else "closed_without_response"] += 1
        except BlockingIOError:
            counts["nothing"] += 1
        except OSError:  # reset: refused at the connection cap with our request unread
            counts["closed_without_response"] += 1
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--sim-pid", type=int, default=0)
    ap.add_argument("--streams", type=int, default=10000)
    ap.add_argument("--stall-timeout", type=float, required=True, help="the gateway's write-stall-timeout, s")
    ap.add_argument("--tokens", type=int, default=100000)
    ap.add_argument("--token-size", type=int, default=1000)
    ap.add_argument("--rcvbuf", type=int, default=4096)
    ap.add_argument("--mss", type=int, default=1460)
    ap.add_argument("--connect-concurrency", type=int, default=256)
    ap.add_argument("--wait-limit", type=float, default=120, help="give up waiting for the cut-off after this, s")
    a = ap.parse_args()

    body = b'{"model":"sim-1","messages":[{"role":"user","content":"hello"}],"stream":true}'
    stalled_req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                   b"x-sim-tokens: %d\r\nx-sim-token-size: %d\r\nx-sim-token-delay: 0ms\r\n"
                   b"Content-Length: %d\r\n\r\n" % (a.tokens, a.token_size, len(body))) + body

    res = {"streams": a.streams, "stall_timeout_s": a.stall_timeout, "rcvbuf": a.rcvbuf, "mss": a.mss}
    samples = []  # (t, rss, tcp_mem, orphans)
    metric_samples = []

    t0 = time.monotonic()

    def sample():
        mem, orphans = tcp_kernel_bytes()
        samples.append((time.monotonic() - t0, rss_bytes(a.pid), mem, orphans))

    sample()
    cpu0 = {"gateway": cpu_seconds(a.pid), "sim": cpu_seconds(a.sim_pid) if a.sim_pid else 0.0}
    res["baseline_rss_bytes"] = samples[-1][1]
    res["baseline_tcp_mem_bytes"] = samples[-1][2]
    res["metrics_before"] = scrape(a.port)

    async def run():
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        async def sampler():
            while not stop.is_set():
                sample()
                await asyncio.sleep(0.1)

        async def metrics_poller():
            while not stop.is_set():
                m = await loop.run_in_executor(None, scrape, a.port)
                metric_samples.append((time.monotonic() - t0, m))
                await asyncio.sleep(0.25)

        tasks = [asyncio.create_task(sampler()), asyncio.create_task(metrics_poller())]
        socks, errors = await open_stalled(a.port, a.streams, stalled_req, a.rcvbuf, a.mss, a.connect_concurrency)
        res["opened_s"] = time.monotonic() - t0
        res["opened"] = len(socks)
        res["open_errors"] = errors
        # Normal requests while the stalled ones are held: one every 2 s (10 s timeout each) until
        # the last stalled stream is cut.
        probes = res["during"] = []

        async def prober():
            while not stop.is_set():
                at = time.monotonic() - t0
                st, done, took = await loop.run_in_executor(None, normal_request, a.port, body, 10)
                m = metric_samples[-1][1] if metric_samples else {}
                probes.append({"at_s": round(at, 3), "status": st, "done": done, "seconds": round(took, 3),
                               "streams_active": m.get("sluice_streams_active")})
                await asyncio.sleep(2.0)

        tasks.append(asyncio.create_task(prober()))
        # Wait for the cut-off: no stream left.
        deadline = time.monotonic() + a.wait_limit
        while time.monotonic() < deadline:
            await asyncio.sleep(0.25)
            if metric_samples and metric_samples[-1][1].get("sluice_streams_active", 1) == 0 \
                    and metric_samples[-1][0] > res["opened_s"]:
                break
        stop.set()
        await asyncio.gather(*tasks)
        return socks

    socks = asyncio.run(run())
    sample()

    peak = max(samples, key=lambda s: s[1])
    res["peak_rss_bytes"] = peak[1]
    res["peak_rss_at_s"] = round(peak[0], 3)
    res["peak_tcp_mem_bytes"] = max(s[2] for s in samples)
    res["peak_orphans"] = max(s[3] for s in samples)
    streams_series = [(t, m.get("sluice_streams_active", 0)) for t, m in metric_samples if "error" not in m]
    res["peak_streams_active"] = max((v for _, v in streams_series), default=0)
    stall_series = [(t, m.get("sluice_write_stalls_total", 0)) for t, m in metric_samples if "error" not in m]
    first_cut = next((t for t, v in stall_series if v > res["metrics_before"].get("sluice_write_stalls_total", 0)), None)
    all_cut = next((t for t, v in streams_series if t > res["opened_s"] and v == 0), None)
    res["first_cut_s"] = None if first_cut is None else round(first_cut, 3)
    res["all_cut_s"] = None if all_cut is None else round(all_cut, 3)
    res["metrics_scrape_errors"] = sum(1 for _, m in metric_samples if "error" in m)

    res["cpu_seconds_until_cut"] = {"gateway": round(cpu_seconds(a.pid) - cpu0["gateway"], 2),
                                    "sim": round(cpu_seconds(a.sim_pid) - cpu0["sim"], 2) if a.sim_pid else None}
    res["rss_after_cut_bytes"] = rss_bytes(a.pid)
    res["tcp_mem_after_cut_bytes"], res["orphans_after_cut"] = tcp_kernel_bytes()
    st, done, took = normal_request(a.port, body)
    res["after"] = {"status": st, "done": done, "seconds": round(took, 3)}
    res["stalled_sockets"] = classify(socks)
    time.sleep(1.2)  # one memory sample interval of the gateway, so that connections_active is fresh
    res["metrics_after"] = scrape(a.port)
    for s in socks:
        s.close()
    time.sleep(1.0)
    res["tcp_mem_after_close_bytes"], res["orphans_after_close"] = tcp_kernel_bytes()
    res["rss_after_close_bytes"] = rss_bytes(a.pid)
    res["metrics_after_close"] = scrape(a.port)
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
