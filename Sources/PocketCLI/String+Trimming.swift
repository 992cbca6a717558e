extension StringProtocol {
    /// Without leading and trailing spaces and tabs (and other Unicode space
    /// separators): what Foundation's `trimmingCharacters(in: .whitespaces)`
    /// does, without loading full Foundation (the CLI imports
    /// FoundationEssentials only, which has no CharacterSet trimming).
    func trimmingWhitespace() -> String {
        func isSpace(_ c: Character) -> Bool {
            c == " " || c == "\t" || c.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator }
        }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return String(self[first...last])
    }
}
