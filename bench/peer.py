"""A plain Python asyncio JSON-RPC 2.0 server on a Unix socket, the peer stpd is measured
against: newline framing, json.loads / json.dumps, `daemon.ping` answered inline.

    python3 bench/peer.py /tmp/peer.sock
"""

import asyncio
import json
import os
import sys

PONG = {"pong": True, "version": "0.1.0"}


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while line := await reader.readline():
            try:
                request = json.loads(line)
            except ValueError:
                reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            else:
                if request.get("method") == "daemon.ping":
                    reply = {"jsonrpc": "2.0", "id": request.get("id"), "result": PONG}
                else:
                    reply = {"jsonrpc": "2.0", "id": request.get("id"),
                             "error": {"code": -32601, "message": "Method not found"}}
            writer.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)
    server = await asyncio.start_unix_server(serve, path, limit=1 << 20)
    print(f"listening on {path}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
