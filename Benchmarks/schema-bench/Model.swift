import Pocket
import Foundation

/// The model both sides produce: Redmine's issue, as TyphoonRestClient's quick-start maps it.
struct Ref: Codable, Sendable, Equatable {
    let id: Int
    let name: String
}

struct CustomField: Codable, Sendable, Equatable {
    let id: Int
    let name: String
    let value: String
}

struct BenchIssue: Codable, Sendable, Equatable {
    let id: Int
    let project: Ref
    let tracker: Ref
    let status: Ref
    let priority: Ref
    let author: Ref?
    let category: Ref?
    let subject: String
    let description: String
    let done_ratio: Int
    let custom_fields: [CustomField]?
    let created_on: Date
    let updated_on: Date
}

struct BenchPage: Codable, Sendable, Equatable {
    let issues: [BenchIssue]
    let total_count: Int
    let offset: Int
    let limit: Int
}

/// A hand-written mapper, TyphoonRestClient style: reads the validated
/// tree without checks (the schema guarantees keys and types).
struct BenchIssueMapper: PocketObjectMapper {
    let schema: PocketSchema

    static func ref(_ v: PocketJSONValue) -> Ref { Ref(id: v["id"].int!, name: v["name"].string!) }

    func model(from json: PocketJSONValue) throws -> BenchIssue? {
        guard case let .object(o) = json else { return nil }
        return BenchIssue(
            id: o["id"]!.int!,
            project: Self.ref(o["project"]!),
            tracker: Self.ref(o["tracker"]!),
            status: Self.ref(o["status"]!),
            priority: Self.ref(o["priority"]!),
            author: o["author"].map(Self.ref),
            category: o["category"].map(Self.ref),
            subject: o["subject"]!.string!,
            description: o["description"]!.string!,
            done_ratio: o["done_ratio"]!.int!,
            custom_fields: o["custom_fields"]?.array!.map {
                CustomField(id: $0["id"].int!, name: $0["name"].string!, value: $0["value"].string!)
            },
            created_on: o["created_on"]!.mapped(as: Date.self)!,
            updated_on: o["updated_on"]!.mapped(as: Date.self)!)
    }
}

enum Payload {
    static let issueSchema = #"""
    {
        "id": 19448,
        "project": { "id": 1, "name": "Redmine" },
        "tracker": { "id": 2, "name": "Feature" },
        "status": { "id": 1, "name": "New" },
        "priority": { "id": 4, "name": "Normal" },
        "author{?}": { "id": 124165, "name": "Reginaldo" },
        "category{?}": { "id": 24, "name": "Documentation" },
        "subject": "Mapa do SIte",
        "description": "Cria\u00e7\u00e3o do mapa",
        "done_ratio": 0,
        "custom_fields{?}": [ { "id": 2, "name": "Resolution", "value": "" } ],
        "created_on": "{date_iso8601}",
        "updated_on": "{date_iso8601}"
    }
    """#

    static let pageSchema = #"{"issues": ["{issue}"], "total_count": 4479, "offset": 0, "limit": 1}"#

    /// A Redmine issues.json of about `bytes` bytes: realistic text, some
    /// optional keys absent, escapes in descriptions.
    static func make(bytes target: Int) -> Data {
        var issues: [String] = []
        var size = 0
        var i = 0
        while size < target - 200 {
            var members = [
                #""id": \#(100000 + i)"#,
                #""project": {"id": \#(1 + i % 7), "name": "Project \#(i % 7)"}"#,
                #""tracker": {"id": \#(1 + i % 3), "name": "\#(["Bug", "Feature", "Support"][i % 3])"}"#,
                #""status": {"id": \#(1 + i % 5), "name": "\#(["New", "Assigned", "Resolved", "Closed", "Rejected"][i % 5])"}"#,
                #""priority": {"id": 4, "name": "Normal"}"#,
            ]
            if i % 4 != 3 { members.append(#""author": {"id": \#(5000 + i % 97), "name": "Author Number \#(i % 97)"}"#) }
            if i % 3 == 0 { members.append(#""category": {"id": 24, "name": "Documentation"}"#) }
            members.append(#""subject": "Issue \#(i): the parser drops a header when the line is folded""#)
            members.append(#""description": "Steps:\n1. send a request\n2. read the \"reply\"\nCria\u00e7\u00e3o do mapa do site, item \#(i)""#)
            members.append(#""done_ratio": \#(i % 10 * 10)"#)
            if i % 2 == 0 { members.append(#""custom_fields": [{"id": 2, "name": "Resolution", "value": "fixed"}, {"id": 3, "name": "Affected version", "value": "5.\#(i % 4).0"}]"#) }
            members.append(#""created_on": "20\#(10 + i % 10)-0\#(1 + i % 9)-1\#(i % 10)T1\#(i % 10):2\#(i % 10):3\#(i % 10)Z""#)
            members.append(#""updated_on": "2016-0\#(1 + i % 9)-2\#(i % 9)T0\#(i % 10):1\#(i % 10):5\#(i % 10)Z""#)
            let issue = "{" + members.joined(separator: ", ") + "}"
            size += issue.utf8.count + 2
            issues.append(issue)
            i += 1
        }
        let text = #"{"issues": [\#(issues.joined(separator: ",\n"))], "total_count": \#(i), "offset": 0, "limit": \#(i)}"#
        return Data(text.utf8)
    }
}

/// The same page with dates left as strings: what JSONDecoder costs
/// without its ISO 8601 date parsing (a reference row, not the target).
struct BenchPageStringDates: Decodable {
    struct Issue: Decodable {
        let id: Int
        let project: Ref
        let tracker: Ref
        let status: Ref
        let priority: Ref
        let author: Ref?
        let category: Ref?
        let subject: String
        let description: String
        let done_ratio: Int
        let custom_fields: [CustomField]?
        let created_on: String
        let updated_on: String
    }
    let issues: [Issue]
    let total_count: Int
    let offset: Int
    let limit: Int
}
