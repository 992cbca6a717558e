extension ServerCore {
    /// The reply of the resource at `path` to `request` (see
    /// `TestServer.routeResource`); consumes one interruption if it cuts.
    func answerResource(at path: String, _ request: TestServer.Request) -> TestServer.Reply {
        locked {
            guard var resource = resources[path] else { return .text("Not Found\n", status: 404) }
            var headers: [(String, String)] = [("Content-Type", resource.contentType)]
            if let etag = resource.etag { headers.append(("ETag", etag)) }
            if let lastModified = resource.lastModified { headers.append(("Last-Modified", lastModified)) }
            if resource.honorsRange { headers.append(("Accept-Ranges", "bytes")) }

            let status: Int
            let range: Range<Int>
            switch request.method == "GET" || request.method == "HEAD" ? resource.range(for: request) : nil {
            case nil:
                return .text("Method Not Allowed\n", status: 405, headers: [("Allow", "GET, HEAD")])
            case .unsatisfiable?:
                headers.append(("Content-Range", "bytes */\(resource.size)"))
                return .response(status: 416, headers: headers)
            case let .satisfiable(partial)?:
                status = 206
                range = partial
                headers.append(("Content-Range", "bytes \(partial.lowerBound)-\(partial.upperBound - 1)/\(resource.size)"))
            case .ignored?:
                status = 200
                range = 0..<resource.size
            }

            var cutAfter: Int?
            if request.method == "GET", !range.isEmpty, let stopAfter = resource.stopAfter, resource.interruptions > 0 {
                cutAfter = stopAfter
                resource.interruptions -= 1
                if resource.interruptions == 0 { resource.stopAfter = nil }
                resources[path] = resource
            }
            let body = TestServer.Reply.GeneratedBody(
                seed: resource.seed, range: range, chunked: false, pieceSize: resource.pieceSize,
                delayMillisecondsPerPiece: resource.delayMillisecondsPerPiece, cutAfter: cutAfter)
            return TestServer.Reply(.generated(status: status, headers: headers, body: body))
        }
    }
}

extension TestServer.Resource {
    /// How a GET or HEAD `request` is answered: its `Range` resolved, or
    /// `.ignored` for the whole body (RFC 9110 §14.2, §13.1.5).
    func range(for request: TestServer.Request) -> ByteRangeRequest {
        guard honorsRange, request.method == "GET", let value = request.header("Range") else { return .ignored }
        if let validator = request.header("If-Range") {
            let strongTagMatches = etag.map { $0 == validator && !$0.hasPrefix("W/") } ?? false
            guard strongTagMatches || lastModified == validator else { return .ignored }
        }
        return ByteRangeRequest(value, size: size)
    }
}
