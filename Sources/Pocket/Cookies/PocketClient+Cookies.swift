#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketClient {
    /// One hop of the request path with the client's cookie store
    /// (`Configuration.cookies`): the store's cookies for the hop's URL go
    /// into its `Cookie` field, and the `Set-Cookie` fields of its response
    /// head (also of a head that came with an error) are stored before the
    /// redirect follower looks at it, so the next hop carries them. Without
    /// a store it is the hop itself. Inlined into the redirect follower: an
    /// async call of its own would add a task-allocated frame, and a
    /// suspension's resume, to every request.
    ///
    /// The request the redirect follower keeps is the one without the
    /// store's cookies: they are chosen again for each hop's URL, and a
    /// cross-origin hop still drops the caller's own `Cookie` field.
    @inline(__always)
    nonisolated(nonsending) func hopWithCookies<D: ResponseDelivery>(
        _ request: PocketRequest, _ progress: PocketProgressHandler?, _ delivery: D
    ) async throws -> D.Response {
        guard let jar = configuration.cookies else { return try await hop(request, progress: progress, delivery) }
        let response: D.Response
        do {
            response = try await hop(jar.attach(to: request), progress: progress, delivery)
        } catch let error as PocketError {
            if let head = error.response { jar.store(head.headers, from: request.url) }
            throw error
        }
        jar.store(response.redirectHead.headers, from: request.url)
        return response
    }
}
