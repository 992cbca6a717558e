import HTTPTypes
import Hummingbird
import Pocket

/// Reads the time left for an incoming request from a header (whole
/// milliseconds, as Pocket's `deadlineHeader` sends it) and makes it the
/// deadline of the task that handles the request (`PocketDeadline`): every
/// downstream call the handler makes through Pocket shares it. A request
/// without the header, or with a value that is not a whole number, runs
/// with no deadline of its own.
struct PocketDeadlineMiddleware<Context: RequestContext>: RouterMiddleware {
    let header: HTTPField.Name

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let value = request.headers[header], let milliseconds = Int64(value), milliseconds >= 0 else {
            return try await next(request, context)
        }
        return try await PocketDeadline.withDeadline(in: .milliseconds(milliseconds)) {
            try await next(request, context)
        }
    }
}
