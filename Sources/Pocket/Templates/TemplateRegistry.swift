
/// A client's named templates, shared with its scoped clients.
final class TemplateRegistry: Sendable {
    private let templates = Lock<[String: PocketRequestTemplate]>([:])

    func register(_ template: PocketRequestTemplate, as name: String) {
        templates.withLock { $0[name] = template }
    }

    func remove(_ name: String) {
        _ = templates.withLock { $0.removeValue(forKey: name) }
    }

    func template(named name: String) -> PocketRequestTemplate? {
        templates.withLock { $0[name] }
    }

    var names: [String] { templates.withLock { $0.keys.sorted() } }
}
