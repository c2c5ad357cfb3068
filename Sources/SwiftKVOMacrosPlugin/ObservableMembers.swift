#if Macros
import SwiftSyntax

/// What `@KeyValueObservable` does with one member of the class, decided from its declaration
/// alone (the macro sees syntax, not types).
enum ObservableMember {
    /// A stored instance `var` the macro makes observable: it writes `@Observed`,
    /// `@ObservedArray` when the written type is `[T]` or `Array<T>`, `@ObservedSet` when it is
    /// `Set<T>` (also through a typealias declared in the class).
    case observe(name: String, wrapper: String)
    /// A stored instance `var` the user already marked `@Observed`, `@ObservedArray` or
    /// `@ObservedSet`.
    case observedByHand(name: String)
    /// A computed property with a valid `@DependsOn`: a dependent key.
    case dependent(name: String, sources: [KeyPathExprSyntax])
    /// A `lazy var` without `@KVOIgnored`: refused.
    case lazy(name: String, modifier: DeclModifierSyntax)
    /// A stored `var` declaring several properties or a tuple: refused.
    case unsupportedPattern(KVOMacroDiagnostic)
    /// Everything the macro leaves as written: `let`, `static`/`class` properties, computed
    /// properties without `@DependsOn`, `weak`/`unowned` and `nonisolated(unsafe)` properties, `@KVOIgnored`,
    /// properties with another property wrapper, `kvoRegistrar`, and members that are not
    /// properties.
    case leftAlone

    /// The property's name in the name table, for what the table lists.
    var tableName: String? {
        switch self {
        case .observe(let name, _), .observedByHand(let name), .dependent(let name, _): name
        case .lazy, .unsupportedPattern, .leftAlone: nil
        }
    }

    /// The wrappers SwiftKVO declares, which the table lists when written by hand.
    static let swiftKVOWrappers = ["Observed", "ObservedArray", "ObservedSet"]

    /// - Parameter aliases: the typealiases declared in the class, by name, followed to tell a
    ///   collection from a plain value.
    init(_ member: some DeclSyntaxProtocol, aliases: [String: TypeSyntax] = [:]) {
        guard let variable = member.as(VariableDeclSyntax.self) else {
            self = .leftAlone
            return
        }
        if variable.isStatic || variable.hasAttribute("KVOIgnored") {
            self = .leftAlone
            return
        }
        if let dependsOn = variable.attribute("DependsOn") {
            let sources = dependsOn.dependencyArguments.compactMap { $0.expression.as(KeyPathExprSyntax.self) }
            if variable.bindings.count == 1, let binding = variable.bindings.first, binding.isComputed,
                let name = binding.identifier, !sources.isEmpty,
                sources.count == dependsOn.dependencyArguments.count, sources.allSatisfy(\.isOneProperty)
            {
                self = .dependent(name: name, sources: sources)
            } else {
                self = .leftAlone  // reported by @DependsOn itself
            }
            return
        }
        guard variable.bindingSpecifier.tokenKind == .keyword(.var) else {
            self = .leftAlone  // `let`: never changes, nothing to observe
            return
        }
        if variable.bindings.contains(where: \.isComputed) {
            self = .leftAlone
            return
        }
        if let lazy = variable.modifiers.first(where: { $0.name.tokenKind == .keyword(.lazy) }) {
            self = .lazy(name: variable.bindings.first?.identifier ?? "", modifier: lazy)
            return
        }
        if variable.modifiers.contains(where: {
            $0.name.tokenKind == .keyword(.weak) || $0.name.tokenKind == .keyword(.unowned)
        }) {
            self = .leftAlone  // a weak reference turns nil with no assignment to announce
            return
        }
        if variable.modifiers.contains(where: {
            $0.name.tokenKind == .keyword(.nonisolated) && $0.detail?.detail.text == "unsafe"
        }) {
            // `nonisolated(unsafe)`: a wrapper's storage (`_hits`) would not carry the marker, and a
            // `Sendable` class refuses that mutable storage; the user synchronizes it by hand.
            self = .leftAlone
            return
        }
        if Self.swiftKVOWrappers.contains(where: variable.hasAttribute) {
            self = variable.bindings.first?.identifier.map { .observedByHand(name: $0) } ?? .leftAlone
            return
        }
        if variable.hasOtherWrapper {
            self = .leftAlone
            return
        }
        guard variable.bindings.count == 1, let binding = variable.bindings.first else {
            self = .unsupportedPattern(.multipleBindings)
            return
        }
        guard let name = binding.identifier else {
            self = .unsupportedPattern(.notAnIdentifier)
            return
        }
        if name == "kvoRegistrar" {
            self = .leftAlone
            return
        }
        let wrapper =
            switch binding.typeAnnotation?.type.collectionKind(aliases: aliases) {
            case .array: "ObservedArray"
            case .set: "ObservedSet"
            case nil: "Observed"
            }
        self = .observe(name: name, wrapper: wrapper)
    }
}

/// A table entry, or entries declared under `#if`, one list per clause (`#if X`, `#elseif Y`,
/// `#else`), in the order written.
enum TableItem<Entry> {
    case entry(Entry)
    case conditional([(condition: String, items: [TableItem])])

    /// Whether there is an entry here, in any clause.
    var hasEntries: Bool {
        switch self {
        case .entry: true
        case .conditional(let clauses): clauses.contains { $0.items.contains { $0.hasEntries } }
        }
    }

    func compactMap<Other>(_ transform: (Entry) -> Other?) -> TableItem<Other>? {
        switch self {
        case .entry(let entry): return transform(entry).map { .entry($0) }
        case .conditional(let clauses):
            return .conditional(clauses.map { ($0.condition, $0.items.compactMap { $0.compactMap(transform) }) })
        }
    }
}

extension MemberBlockItemListSyntax {
    /// The members' decisions, and whether each is deprecated or isolated to the main actor, those
    /// under `#if` in their clauses.
    func tableItems(
        aliases: [String: TypeSyntax]
    ) -> [TableItem<(ObservableMember, isDeprecated: Bool, isMainActor: Bool)>] {
        map { item in
            guard let ifConfig = item.decl.as(IfConfigDeclSyntax.self) else {
                let variable = item.decl.as(VariableDeclSyntax.self)
                return .entry(
                    (
                        ObservableMember(item.decl, aliases: aliases), variable?.isDeprecated ?? false,
                        variable?.attribute("MainActor") != nil
                    ))
            }
            return .conditional(
                ifConfig.clauses.map { clause in
                    let condition = [clause.poundKeyword.text, clause.condition?.trimmedDescription]
                        .compactMap { $0 }.joined(separator: " ")
                    guard case .decls(let nested) = clause.elements else { return (condition, []) }
                    return (condition, nested.tableItems(aliases: aliases))
                })
        }
    }
}

extension DeclSyntax {
    /// This declaration, or those under it when it is an `#if` (all clauses).
    var declarations: [DeclSyntax] {
        guard let ifConfig = self.as(IfConfigDeclSyntax.self) else { return [self] }
        return ifConfig.clauses.flatMap { clause -> [DeclSyntax] in
            guard case .decls(let nested) = clause.elements else { return [] }
            return nested.flatMap { $0.decl.declarations }
        }
    }
}

extension MemberBlockSyntax {
    /// The typealiases declared in the class (also under `#if`), by name.
    var typealiases: [String: TypeSyntax] {
        var found: [String: TypeSyntax] = [:]
        func visit(_ members: MemberBlockItemListSyntax) {
            for member in members {
                if let alias = member.decl.as(TypeAliasDeclSyntax.self), alias.genericParameterClause == nil {
                    found[alias.name.text] = alias.initializer.value
                } else if let ifConfig = member.decl.as(IfConfigDeclSyntax.self) {
                    for clause in ifConfig.clauses {
                        if case .decls(let nested) = clause.elements { visit(nested) }
                    }
                }
            }
        }
        visit(members)
        return found
    }
}

extension VariableDeclSyntax {
    var isStatic: Bool {
        modifiers.contains { $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class) }
    }

    /// The attribute named `name`, written bare or qualified (`SwiftKVOMacros.DependsOn`).
    func attribute(_ name: String) -> AttributeSyntax? {
        for element in attributes {
            if case .attribute(let attribute) = element, attribute.baseName == name { return attribute }
        }
        return nil
    }

    func hasAttribute(_ name: String) -> Bool { attribute(name) != nil }

    /// Whether an `@available` attribute deprecates it (on any platform or language version).
    var isDeprecated: Bool {
        attributes.contains { element in
            guard case .attribute(let attribute) = element, attribute.baseName == "available",
                case .availability(let arguments) = attribute.arguments
            else { return false }
            return arguments.tokens(viewMode: .sourceAccurate).contains {
                $0.tokenKind == .keyword(.deprecated) || $0.tokenKind == .identifier("deprecated")
            }
        }
    }

    /// Whether an attribute that may be a property wrapper is written: a custom attribute other
    /// than the macros' own and `@MainActor`, capitalized as types are or lowercase (`@clamped`)
    /// when it is none of the language's own attributes. A global actor of the user's own counts
    /// too: such a property is left as written.
    var hasOtherWrapper: Bool {
        attributes.contains { element in
            guard case .attribute(let attribute) = element, let first = attribute.baseName.first else { return false }
            if first.isUppercase {
                return !["DependsOn", "KVOIgnored", "MainActor", "NSCopying", "NSManaged", "IBOutlet", "IBInspectable"]
                    .contains(attribute.baseName)
            }
            return attribute.attributeName.is(IdentifierTypeSyntax.self)
                && !Self.languageAttributes.contains(attribute.baseName) && !attribute.baseName.hasPrefix("_")
        }
    }

    /// The attributes of the language that a stored property may carry: none is a wrapper.
    static let languageAttributes: Set<String> = [
        "available", "backDeployed", "exclusivity", "inlinable", "inline", "nonobjc", "objc", "preconcurrency",
        "storageRestrictions", "transparent", "usableFromInline", "warn_unqualified_access", "discardableResult",
        "export", "frozen", "dynamicMemberLookup", "objcMembers", "unknown", "testable", "retroactive",
        "unchecked", "unsafe", "safe", "abi", "specialize", "derivative", "differentiable", "noDerivative",
        "dynamicCallable", "globalActor", "propertyWrapper", "resultBuilder", "requires_stored_property_inits",
        "main", "convention", "escaping", "autoclosure", "isolated", "concurrent",
    ]

    /// The declaration without the attributes named `name` (for a fix-it), keeping its
    /// leading trivia.
    func removing(attribute name: String) -> VariableDeclSyntax {
        let kept = attributes.filter { element in
            if case .attribute(let other) = element { return other.baseName != name }
            return true
        }
        return with(\.attributes, AttributeListSyntax(Array(kept))).with(\.leadingTrivia, leadingTrivia)
    }

    /// The declaration with `@name` in front, on the same line (for a fix-it).
    func adding(attribute name: String) -> VariableDeclSyntax {
        let added = AttributeSyntax(
            atSign: .atSignToken(leadingTrivia: leadingTrivia),
            attributeName: IdentifierTypeSyntax(name: .identifier(name)),
            trailingTrivia: .space)
        let bare = with(\.leadingTrivia, [])
        return bare.with(\.attributes, AttributeListSyntax([.attribute(added)] + Array(bare.attributes)))
    }
}

extension PatternBindingSyntax {
    /// The property's name, for a simple `var name…` pattern.
    var identifier: String? { pattern.as(IdentifierPatternSyntax.self)?.identifier.trimmedDescription }

    /// Whether the property is computed: a getter (`{ … }`, `get`, `_read`…), not only
    /// `willSet`/`didSet` observers.
    var isComputed: Bool {
        guard let accessorBlock else { return false }
        switch accessorBlock.accessors {
        case .getter: return true
        case .accessors(let accessors):
            return accessors.contains { accessor in
                let kind = accessor.accessorSpecifier.tokenKind
                return kind != .keyword(.willSet) && kind != .keyword(.didSet)
            }
        }
    }
}

/// The collections SwiftKVO has a wrapper of its own for.
enum CollectionKind {
    case array
    case set
}

extension TypeSyntax {
    /// `.array` for `[T]`, `Array<T>` or `Swift.Array<T>`, `.set` for `Set<T>` or `Swift.Set<T>`,
    /// as written or through one of `aliases` (an optional collection is not one).
    func collectionKind(aliases: [String: TypeSyntax], depth: Int = 0) -> CollectionKind? {
        if self.is(ArrayTypeSyntax.self) { return .array }
        let name: String
        if let named = self.as(IdentifierTypeSyntax.self) {
            if named.genericArgumentClause == nil {
                // A typealias of the class's own (at most a few deep: a cycle does not compile anyway).
                guard depth < 8, let aliased = aliases[named.name.text] else { return nil }
                return aliased.collectionKind(aliases: aliases, depth: depth + 1)
            }
            name = named.name.text
        } else if let member = self.as(MemberTypeSyntax.self), member.baseType.trimmedDescription == "Swift",
            member.genericArgumentClause != nil
        {
            name = member.name.text
        } else {
            return nil
        }
        switch name {
        case "Array": return .array
        case "Set": return .set
        default: return nil
        }
    }
}

extension KeyPathExprSyntax {
    /// `\.name` or `\Root.name`: one property, no chain, optional link or subscript.
    var isOneProperty: Bool {
        guard components.count == 1, let component = components.first?.component else { return false }
        if case .property(let property) = component { return property.genericArgumentClause == nil }
        return false
    }
}

extension AttributeSyntax {
    /// The attribute's name without its module (`Observed` for `@SwiftKVO.Observed`).
    var baseName: String {
        if let member = attributeName.as(MemberTypeSyntax.self) { return member.name.text }
        return attributeName.trimmedDescription
    }

    /// The arguments of `@DependsOn(…)` (none when written without parentheses).
    var dependencyArguments: [LabeledExprSyntax] {
        guard case .argumentList(let list) = arguments else { return [] }
        return Array(list)
    }
}
#endif
