/*
 * libFuzzer harness for a proxy's answer to CONNECT (RFC 9110 §9.3.6): the
 * engine harness (fuzz_engine.c, its input layout and checks) with every
 * request sent through a tunnel, so the server's bytes are first the
 * proxy's reply, then, after a 2xx, the origin's response inside the
 * tunnel. Byte 2 bit 0 also sends Proxy-Authorization with the CONNECT.
 * Checks, beyond fuzz_engine.c's: a request succeeds only when the reply
 * was a 2xx status line.
 */
#define PK_FUZZ_TUNNEL 1
#include "fuzz_engine.c"
