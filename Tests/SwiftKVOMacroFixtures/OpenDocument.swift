#if Macros
import SwiftKVOMacros

/// An open macro class for SwiftKVOMacrosTests to subclass from another module: its tables must
/// be `open` for that subclass to override them.
@KeyValueObservable
open class MacroFixtureDocument: @unchecked Sendable {
    public var title = ""
    @DependsOn(\.title) public var heading: String { title.uppercased() }
    public init() {}
}
#endif
