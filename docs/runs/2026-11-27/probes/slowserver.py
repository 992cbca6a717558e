# A keep-alive HTTP/1.1 server for the twelfth session's spin measurements (docs/BENCHMARKS.md):
#   DELAY_US=300 taskset -c 0 python3 slowserver.py PORT
# A keep-alive HTTP/1.1 server answering every request after DELAY_US (for spin measurements).
import os, socket, sys, threading, time
delay = int(os.environ.get("DELAY_US", "0")) / 1e6
ans = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!"
def serve(c):
    buf = b""
    while True:
        d = c.recv(65536)
        if not d: return
        buf += d
        while b"\r\n\r\n" in buf:
            _, buf = buf.split(b"\r\n\r\n", 1)
            if delay: time.sleep(delay)
            c.sendall(ans)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(128)
while True:
    c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
