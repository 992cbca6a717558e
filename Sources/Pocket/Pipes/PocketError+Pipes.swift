extension PocketError.Code {
    // Pipes (Swift layer)
    /// `remove` or `read(id:)` of a record without an id (see `PocketPipeConfiguration.recordIDKey`).
    public static let missingRecordID = PocketError.Code("missing_record_id")
    /// A page's next (or previous) link leads to a page already read in this sequence.
    public static let pagingLoop = PocketError.Code("paging_loop")
}
