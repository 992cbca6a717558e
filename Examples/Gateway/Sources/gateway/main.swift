import Foundation
import Hummingbird

// gateway --client pocket|pocket-bare|ahc|static [--port 8081] [--downstream http://127.0.0.1:18080/]
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
case "pocket":
    let (router, client) = try pocketRouter(downstream: downstreamURL)
    try await Application(router: router, configuration: configuration).runService()
    try await client.shutdown()
case "pocket-bare":
    let (router, client) = try pocketRouter(downstream: downstreamURL, integrations: false)
    try await Application(router: router, configuration: configuration).runService()
    try await client.shutdown()
case "ahc":
    try await Application(router: ahcRouter(downstream: downstream), configuration: configuration).runService()
case "static":
    try await Application(router: staticRouter(), configuration: configuration).runService()
default:
    FileHandle.standardError.write(Data("gateway: --client is pocket, pocket-bare, ahc or static, not \(variant)\n".utf8))
    exit(2)
}
