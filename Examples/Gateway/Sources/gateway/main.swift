import Foundation
import Hummingbird

// gateway --client pocket|pocket-bare|ahc|floor|nio-floor|static [--port 8081] [--downstream http://127.0.0.1:18080/]
//         [--executor pool|loop]   (the Pocket variants: where the service's tasks run, Swift's global pool by default)
//         [--loop-scheduling batch|standard]   (the Pocket variants: the client's loop thread, batch by default)
let arguments = CommandLine.arguments.dropFirst()
func option(_ name: String, _ fallback: String) -> String {
    guard let i = arguments.firstIndex(of: name), arguments.index(after: i) < arguments.endIndex else { return fallback }
    return arguments[arguments.index(after: i)]
}
let variant = option("--client", "pocket")
let port = Int(option("--port", "8081")) ?? 8081
let downstream = option("--downstream", "http://127.0.0.1:18080/")
guard let downstreamURL = URL(string: downstream) else {
    FileHandle.standardError.write(Data("gateway: bad --downstream \(downstream)\n".utf8))
    exit(2)
}

let configuration = ApplicationConfiguration(address: .hostname("127.0.0.1", port: port), serverName: "gateway-\(variant)")
switch variant {
case "pocket", "pocket-bare":
    let (router, client) = try pocketRouter(downstream: downstreamURL, integrations: variant == "pocket")
    let app = Application(router: router, configuration: configuration)
    switch option("--loop-scheduling", "batch") {
    case "batch":
        // The handlers run on the same core as the client's loop: with the
        // standard policy each submission can switch to the loop at once,
        // which then sends one request per pass (PocketLoopScheduling.batch).
        await client.setLoopScheduling(.batch)
    case "standard":
        break
    case let other:
        FileHandle.standardError.write(Data("gateway: --loop-scheduling is batch or standard, not \(other)\n".utf8))
        exit(2)
    }
    switch option("--executor", "pool") {
    case "pool":
        // Swift's global executor, as Hummingbird runs by default.
        try await app.runService()
    case "loop":
        // The whole service on the client's event loop: Hummingbird's
        // connection tasks are children of this one and inherit the
        // preference, so a handler's downstream call is submitted and
        // resumed on the loop thread (no hop to Swift's global pool and
        // back; Hummingbird's NIO threads still read and write the
        // sockets). Handlers must not block: they hold up the client's
        // connections.
        try await withTaskExecutorPreference(client.executor) { try await app.runService() }
    case let other:
        FileHandle.standardError.write(Data("gateway: --executor is pool or loop, not \(other)\n".utf8))
        exit(2)
    }
    try await client.shutdown()
case "ahc":
    #if !GATEWAY_WITHOUT_AHC
    try await Application(router: ahcRouter(downstream: downstream), configuration: configuration).runService()
    #else
    FileHandle.standardError.write(Data("gateway: this build has no AsyncHTTPClient: build the package in Examples/Gateway\n".utf8))
    exit(2)
    #endif
case "floor":
    try await Application(router: floorRouter(downstream: downstreamURL), configuration: configuration).runService()
case "nio-floor":
    try await Application(router: nioFloorRouter(downstream: downstreamURL), configuration: configuration).runService()
case "static":
    try await Application(router: staticRouter(), configuration: configuration).runService()
default:
    FileHandle.standardError.write(Data("gateway: --client is pocket, pocket-bare, ahc, floor, nio-floor or static, not \(variant)\n".utf8))
    exit(2)
}
