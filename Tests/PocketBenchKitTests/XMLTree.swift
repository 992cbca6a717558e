import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

/// A parsed XML element: what the chart tests read back from the SVG and
/// XHTML the kit writes, through Foundation's XMLParser (libxml2), so a
/// document that is not well-formed fails the test.
final class XMLTree {
    let name: String
    let attributes: [String: String]
    private(set) var children: [XMLTree] = []
    fileprivate(set) var text = ""

    init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    subscript(attribute: String) -> String? { attributes[attribute] }

    /// Every descendant (and self) named `name`, in document order.
    func all(_ name: String) -> [XMLTree] {
        (self.name == name ? [self] : []) + children.flatMap { $0.all(name) }
    }

    /// Every descendant (and self) whose `class` attribute holds `cls`.
    func all(class cls: String) -> [XMLTree] {
        let mine = (attributes["class"]?.split(separator: " ").contains { $0 == cls } ?? false) ? [self] : []
        return mine + children.flatMap { $0.all(class: cls) }
    }

    /// The text of this element and its descendants.
    var allText: String { text + children.map(\.allText).joined() }

    /// Parses `text`; fails the test and throws when it is not well-formed XML.
    static func parse(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> XMLTree {
        let builder = Builder()
        let parser = XMLParser(data: Data(text.utf8))
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else {
            let where_ = "line \(parser.lineNumber), column \(parser.columnNumber)"
            XCTFail("not well-formed XML (\(where_)): \(parser.parserError.map { "\($0)" } ?? "?")", file: file, line: line)
            throw CocoaError(.coderReadCorrupt)
        }
        return root
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [XMLTree] = []
        var root: XMLTree?

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            let node = XMLTree(name: name, attributes: attributes)
            stack.last?.children.append(node)
            if root == nil { root = node }
            stack.append(node)
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            stack.removeLast()
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            stack.last?.text += string
        }
    }
}
