/// How strictly a schema applies. The defaults are TyphoonRestClient's:
/// types exact, extra keys kept, a `null` counts as a missing value.
public struct PocketSchemaOptions: Sendable, Hashable {
    /// What happens to keys the schema does not name.
    public enum UnknownKeys: Sendable, Hashable {
        /// Passed through unvalidated (the default): servers add fields over
        /// time, and a new field must not break old clients.
        case keep
        /// Removed from the result, so a model sees only what the schema names.
        case drop
    }

    /// What a JSON `null` means.
    public enum Nulls: Sendable, Hashable {
        /// `null` counts as absent (the default, as most APIs mean it): an
        /// optional key with `null` is removed from the result; a required
        /// key with `null` fails as missing; a `null` array element fails.
        case absent
        /// `null` passes wherever a value may be, kept as `null`;
        /// transformers and mappers are not called for it.
        case asIs
    }

    /// Keys the schema does not name: `.keep` by default.
    public var unknownKeys: UnknownKeys = .keep
    /// Accept a numeric string where a number is expected (`"42"` → 42) and a
    /// number where a string is expected (42 → `"42"`). Off by default: a
    /// type change is usually an API change worth hearing about.
    public var coercesNumbersAndStrings = false
    /// `null` handling: `.absent` by default.
    public var nulls: Nulls = .absent

    /// Options; each default as documented on its property.
    public init(unknownKeys: UnknownKeys = .keep, coercesNumbersAndStrings: Bool = false, nulls: Nulls = .absent) {
        self.unknownKeys = unknownKeys
        self.coercesNumbersAndStrings = coercesNumbersAndStrings
        self.nulls = nulls
    }
}
