#if Macros
import SwiftSyntax

/// What `@KeyValueObservable` does with one member of the class, decided from its declaration
/// alone (the macro sees syntax, not types).
enum ObservableMember {
    /// A stored instance `var` the macro makes observable: it writes `@Observed`, or
    /// `@ObservedArray` when the written type is `[T]` or `Array<T>`.
    case observe(name: String, wrapper: String)
    /// A stored instance `var` the user already marked `@Observed` or `@ObservedArray`.
    case observedByHand(name: String)
    /// A computed property with a valid `@DependsOn`: a dependent key.
    case dependent(name: String, sources: [KeyPathExprSyntax])
    /// A `lazy var` without `@KVOIgnored`: refused.
    case lazy(name: String, modifier: DeclModifierSyntax)
    /// A stored `var` declaring several properties or a tuple: refused.
    case unsupportedPattern(KVOMacroDiagnostic)
    /// Everything the macro leaves as written: `let`, `static`/`class` properties, computed
    /// properties without `@DependsOn`, `weak`/`unowned` properties, `@KVOIgnored`,
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

    init(_ member: some DeclSyntaxProtocol) {
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
        if variable.hasAttribute("Observed") || variable.hasAttribute("ObservedArray") {
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
        let isArray = binding.typeAnnotation.map { $0.type.isArray } ?? false
        self = .observe(name: name, wrapper: isArray ? "ObservedArray" : "Observed")
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

    /// Whether an attribute that may be a property wrapper is written: a custom attribute
    /// (capitalized, as types are) other than the macros' own and `@MainActor`. A global actor
    /// of the user's own counts too: such a property is left as written.
    var hasOtherWrapper: Bool {
        attributes.contains { element in
            guard case .attribute(let attribute) = element, let first = attribute.baseName.first else { return false }
            return first.isUppercase && !["DependsOn", "KVOIgnored", "MainActor"].contains(attribute.baseName)
        }
    }

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

extension TypeSyntax {
    /// `[T]`, `Array<T>` or `Swift.Array<T>`, as written (an optional array is not one).
    var isArray: Bool {
        if self.is(ArrayTypeSyntax.self) { return true }
        if let named = self.as(IdentifierTypeSyntax.self) {
            return named.name.text == "Array" && named.genericArgumentClause != nil
        }
        if let member = self.as(MemberTypeSyntax.self) {
            return member.baseType.trimmedDescription == "Swift" && member.name.text == "Array"
                && member.genericArgumentClause != nil
        }
        return false
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
