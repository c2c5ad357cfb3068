// The public face of the `@KeyValueObservable` macro: SwiftKVO re-exported, and the macros
// declared (implemented in SwiftKVOMacrosPlugin). The declarations exist with the package trait
// "Macros", which builds swift-syntax; without it this module is SwiftKVO alone.

@_exported import SwiftKVO

#if Macros
/// Makes a class observable with one attribute.
///
/// ```swift
/// @KeyValueObservable
/// final class Account {
///     var name = ""
///     var balance = 0.0
///     var transactions: [Transaction] = []
///     @KVOIgnored var cache: [String: Int] = [:]
///     @DependsOn(\.name, \.balance) var summary: String { "\(name): \(balance)" }
/// }
/// ```
///
/// writes what you would write by hand:
///
/// ```swift
/// final class Account {
///     @Observed var name = ""
///     @Observed var balance = 0.0
///     @ObservedArray var transactions: [Transaction] = []
///     var cache: [String: Int] = [:]
///     var summary: String { "\(name): \(balance)" }
///
///     let kvoRegistrar = KVORegistrar()
///
///     static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
///         [
///             \Account.summary: [\Account.name, \Account.balance],
///         ]
///     }
///
///     static var observableKeyPaths: [String: AnyKeyPath] {
///         [
///             "name": \Account.name,
///             "balance": \Account.balance,
///             "transactions": \Account.transactions,
///             "summary": \Account.summary,
///         ]
///     }
/// }
///
/// extension Account: KeyValueObservable {
/// }
/// ```
///
/// ## What each member becomes
/// - A stored instance `var` gets `@Observed`; `@ObservedArray` when its *written* type is
///   `[T]` or `Array<T>` (insertion, removal and replacement with indexes), `@ObservedSet` when
///   it is `Set<T>` (insertion, removal and replacement of members), also through a typealias
///   declared in the class. The macro sees syntax, not types: `var ids = [1, 2]` gets
///   `@Observed`; write `var ids: [Int] = [1, 2]` for the array form. `[T]?` and `Set<T>?` get
///   `@Observed`.
/// - A property you marked `@Observed` (e.g. `@Observed(notifiesAutomatically: false)`),
///   `@ObservedArray` or `@ObservedSet` keeps your attribute and is listed in the name table.
/// - Properties under `#if` are listed in the name table under the same `#if`.
/// - A deprecated property is listed without a deprecation warning.
/// - ``KVOIgnored()`` properties, and properties with another property wrapper (any
///   custom attribute other than `@MainActor`, capitalized or not: `@clamped` too, so also a
///   global actor of your own), are left as written and not listed.
/// - A computed property with `@DependsOn` is a
///   dependent key: it goes into `dependentKeyPaths` (generated only when some property has
///   one) and into the name table.
/// - Left as written, silently, as Swift's `@Observable` does: `let` properties (they never
///   change), `static`/`class` properties (observation is per object), computed properties
///   without `@DependsOn` (nothing tells when they change), `nonisolated(unsafe)` properties
///   (a wrapper's storage could not carry the marker, and you synchronize them yourself), `weak`
///   and `unowned` properties
///   (a weak reference turns `nil` with no assignment, which nothing could announce; a
///   property wrapper cannot hold one either). Observing one of these is refused
///   at run time with ``KVOError/unsupportedKeyPath``, naming the property.
/// - `let kvoRegistrar = KVORegistrar()` is declared unless you declared it so yourself
///   (`let kvoRegistrar = KVORegistrar()` or `let kvoRegistrar: KVORegistrar`); a
///   `kvoRegistrar` of any other shape is an error with a fix-it. A `dependentKeyPaths` or
///   `observableKeyPaths` you wrote is kept (writing `dependentKeyPaths` and using
///   `@DependsOn` too is an error: declare dependencies in one place).
/// - The generated members take the class's access level (`public` for a `public` or `open`
///   class), as the protocol requires; an `open` class's tables are `open class var`.
///
/// ## Errors, at the attribute or the declaration at fault
/// - On a struct, enum, actor or protocol: the macro applies to classes only.
/// - On a subclass of an observable class: it inherits the conformance; the fix-it removes
///   the attribute.
/// - `lazy var`: its first read stores without notifying; the fix-it marks it `@KVOIgnored`.
/// - `var a = 0, b = 0` or a tuple pattern: declare one property per line (a property wrapper
///   applies to one property).
///
/// ## Classes that are not final
/// The two tables are then `class var`, so a subclass can override them
/// (`override class var observableKeyPaths { super.observableKeyPaths.merging(…) }`) and mark
/// its own properties `@Observed`. A subclass inherits the conformance and the registrar: the
/// macro applied to it again is refused, with a fix-it that removes it. In an `open` class the
/// tables are `open class var`, so a subclass in another module overrides them too.
@attached(
    member, conformances: KeyValueObservable,
    names: named(kvoRegistrar), named(dependentKeyPaths), named(observableKeyPaths), named(_KVODeprecatedMembers))
@attached(memberAttribute)
@attached(extension, conformances: KeyValueObservable)
public macro KeyValueObservable() =
    #externalMacro(module: "SwiftKVOMacrosPlugin", type: "KeyValueObservableMacro")

/// Leaves a property of a ``KeyValueObservable()`` class as written: no `@Observed`, not in
/// the name table, not observable.
///
/// ```swift
/// @KVOIgnored var cache: [String: Int] = [:]
/// @KVOIgnored lazy var formatter = makeFormatter()
/// ```
///
/// A marker read by ``KeyValueObservable()``; it expands to nothing.
/// Reads the table of a class's deprecated members through a protocol requirement, where naming
/// them does not warn: `@KeyValueObservable` lists a `@available(*, deprecated)` property this way,
/// so its table compiles without warnings.
public protocol _KVODeprecatedKeyPaths {
    static var observableKeyPaths: [String: AnyKeyPath] { get }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { get }
}

extension _KVODeprecatedKeyPaths {
    /// None: a class lists here only the tables that have deprecated entries.
    public static var observableKeyPaths: [String: AnyKeyPath] { [:] }
    /// None (see ``observableKeyPaths``).
    public static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [:] }
}

/// `Keys.observableKeyPaths`, read through the protocol (see ``_KVODeprecatedKeyPaths``).
public func _kvoKeyPathsOfDeprecatedMembers<Keys: _KVODeprecatedKeyPaths>(_: Keys.Type) -> [String: AnyKeyPath] {
    Keys.observableKeyPaths
}

/// `Keys.dependentKeyPaths`, read through the protocol (see ``_KVODeprecatedKeyPaths``).
public func _kvoDependentKeyPathsOfDeprecatedMembers<Keys: _KVODeprecatedKeyPaths>(
    _: Keys.Type
) -> [AnyKeyPath: [AnyKeyPath]] {
    Keys.dependentKeyPaths
}

@attached(peer)
public macro KVOIgnored() = #externalMacro(module: "SwiftKVOMacrosPlugin", type: "KVOIgnoredMacro")

/// Declares the keys a computed property of a ``KeyValueObservable()`` class is computed from:
/// a change of any of them notifies the property's observers, with its value read before and
/// after the change (a dependent key).
///
/// ```swift
/// @DependsOn(\.firstName, \.lastName) var fullName: String { "\(firstName) \(lastName)" }
/// @DependsOn(\.fullName) var greeting: String { "Hello, \(fullName)" }   // transitive
/// ```
///
/// - Parameter keyPaths: Properties of the class, or its other dependent keys, written
///   `\.name`; the macro roots them in the class (`\Account.name`) in the generated
///   `dependentKeyPaths`, where the compiler checks them against the class's declarations
///   (a misspelled name is reported there).
///
/// A marker read by ``KeyValueObservable()``; it expands to nothing. It is an error on a
/// stored property (observed by itself; the fix-it removes the attribute), on a `static` one,
/// without key paths, with a chain (`\.account.name`: a dependent key does not follow other
/// objects, and SwiftKVO would refuse it at registration; observe the chain itself), or with a
/// key path rooted in another type.
@attached(peer)
public macro DependsOn(_ keyPaths: PartialKeyPath<DependencySource>...) =
    #externalMacro(module: "SwiftKVOMacrosPlugin", type: "DependsOnMacro")

/// Declares the keys a computed property is computed from, with key paths that name the
/// class (`@DependsOn(\Account.name)`); as the `\.name` form otherwise.
///
/// - Parameter keyPaths: Properties of the declaring class, or its other dependent keys.
@attached(peer)
public macro DependsOn(_ keyPaths: AnyKeyPath...) =
    #externalMacro(module: "SwiftKVOMacrosPlugin", type: "DependsOnMacro")

/// The root `@DependsOn(\.name)` is written against before the macro roots it in the class.
///
/// The attribute's arguments are type-checked before any macro runs, and a key path written
/// `\.name` needs a root there: this type accepts any member name, and the macro rewrites
/// `\.name` to `\Account.name` in the generated `dependentKeyPaths`, where the compiler checks
/// it against the class's real declarations. Never used at run time.
@dynamicMemberLookup
public struct DependencySource {
    /// Any member name: checked later, in the class.
    public subscript(dynamicMember name: String) -> DependencySource { self }
}
#endif
