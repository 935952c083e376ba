"""The Python peer of the daemon.ping benchmark: a plain asyncio JSON-RPC 2.0 server on a Unix
socket, as anyone would write it in an afternoon. Newline framing, json.loads/json.dumps, the
ping answered inline; nothing tuned (no uvloop, no orjson). Standard library only.

    python3 bench/peer.py SOCKET_PATH

Prints "ready" on stdout once it listens; runs until SIGTERM/SIGINT. Answers `daemon.ping` with
`{"pong": true, "version": "peer"}`, anything else with -32601, and an unparsable line with
-32700, so a load generator sees the same reply shape as from stpd.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

LIMIT = 1 << 20  # the frame limit stpd has by default


def answer(line: bytes) -> dict | None:
    try:
        request = json.loads(line)
    except ValueError:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    if not isinstance(request, dict) or "id" not in request:
        return None  # a notification (or a batch, which this peer does not serve)
    if request.get("method") == "daemon.ping":
        return {"jsonrpc": "2.0", "id": request["id"], "result": {"pong": True, "version": "peer"}}
    return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "Method not found"}}


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while line := await reader.readline():
            reply = answer(line)
            if reply is not None:
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
    except (ConnectionError, asyncio.LimitOverrunError, ValueError):
        pass
    finally:
        writer.close()


async def main(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)
    server = await asyncio.start_unix_server(serve_connection, path, limit=LIMIT, backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()
    if os.path.exists(path):
        os.unlink(path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: peer.py SOCKET_PATH")
    asyncio.run(main(sys.argv[1]))
