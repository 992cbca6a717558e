internal import CHTTPEngine

extension PocketTimings {
    /// The engine's timings of a finished request.
    init(_ t: pk_timings) {
        self.init()
        setNanos(dns: Int64(t.dns_ns), connect: Int64(t.connect_ns), tls: Int64(t.tls_ns),
                 firstByte: Int64(t.first_byte_ns), total: Int64(t.total_ns))
        bytesSent = Int(t.bytes_sent)
        bytesReceived = Int(t.bytes_received)
        wireBytesSent = Int(t.wire_bytes_sent)
        wireBytesReceived = Int(t.wire_bytes_received)
        reusedConnection = t.reused != 0
        retried = t.retried != 0
        tlsResumed = t.tls_resumed != 0
        if t.tunnel_ns != 0 { tunnel = .nanoseconds(Int64(t.tunnel_ns)) }
        connectAttempts = Int(t.connect_attempts)
        if t.remote_family != 0 {
            withUnsafeBytes(of: t.remote_addr) { address in
                setConnection(family: t.remote_family, address: address, remotePort: t.remote_port, localPort: t.local_port)
            }
        }
    }
}
