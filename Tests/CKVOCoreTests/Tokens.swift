import CKVOCore

// Tokens in sets, dictionaries and #expect comparisons: the C API compares them with
// ckvo_token_equal, and a zero-initialized token names nothing.
extension ckvo_token_t: @retroactive Equatable, @retroactive Hashable {
    public static func == (a: ckvo_token_t, b: ckvo_token_t) -> Bool { ckvo_token_equal(a, b) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(generation)
        hasher.combine(index)
    }

    /// The token that names nothing.
    static var none: ckvo_token_t { ckvo_token_t() }
}
