#!/usr/bin/env python3
"""A TCP proxy that answers late: scripts/bench-tail.sh puts it in front of
one nginx replica so that replica answers a share of its requests late.

    delay-proxy.py LISTEN_PORT UPSTREAM_PORT SHARE DELAY_MS

Listens on 127.0.0.1:LISTEN_PORT and connects each client to
127.0.0.1:UPSTREAM_PORT. Bytes from the client go upstream at once. Each read
from upstream (one small keep-alive response, as the 13-byte answers are) is
held DELAY_MS with probability SHARE before it is passed on; the reads behind
it on the same connection wait for it, so answers stay in order (the
embedded server's --slow-replica does the same). Stops on SIGTERM.
"""
import asyncio
import random
import signal
import sys


async def pump(reader, writer, share, delay):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if share > 0 and random.random() < share:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def serve(listen_port, upstream_port, share, delay):
    async def on_client(client_reader, client_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, up_writer, 0, 0), pump(up_reader, client_writer, share, delay))

    server = await asyncio.start_server(on_client, "127.0.0.1", listen_port, backlog=4096)
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
    async with server:
        await stop


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: delay-proxy.py LISTEN_PORT UPSTREAM_PORT SHARE DELAY_MS")
    listen_port, upstream_port = int(sys.argv[1]), int(sys.argv[2])
    share, delay = float(sys.argv[3]), float(sys.argv[4]) / 1000
    asyncio.run(serve(listen_port, upstream_port, share, delay))


if __name__ == "__main__":
    main()
