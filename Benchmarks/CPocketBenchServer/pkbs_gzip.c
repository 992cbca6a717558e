/* gzip for the embedded server's compressed scenario (see pkbs_gzip in
 * include/CPocketBenchServer.h). Kept apart from pkbs_server.c so the
 * standalone bench-server builds without zlib. */
#include "CPocketBenchServer.h"

#include <zlib.h>

size_t pkbs_gzip(const void *in, size_t n, void *out, size_t cap) {
    z_stream z = {0};
    /* windowBits 15 + 16: a gzip header and trailer instead of zlib's. */
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t made = z.total_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? made : 0;
}
