@_exported import SwiftKVO

#if Macros
/// Makes a class observable with one attribute.
@attached(member, names: named(kvoRegistrar), named(dependentKeyPaths), named(observableKeyPaths))
@attached(memberAttribute)
@attached(extension, conformances: KeyValueObservable)
public macro KeyValueObservable() = #externalMacro(module: "SwiftKVOMacrosPlugin", type: "KeyValueObservableMacro")

/// Leaves a property of a `@KeyValueObservable` class unobserved.
@attached(peer)
public macro KVOIgnored() = #externalMacro(module: "SwiftKVOMacrosPlugin", type: "KVOIgnoredMacro")

/// Declares the keys a computed property is computed from.
@attached(peer)
public macro DependsOn(_ keyPaths: PartialKeyPath<DependencySource>...) = #externalMacro(module: "SwiftKVOMacrosPlugin", type: "DependsOnMacro")

@attached(peer)
public macro DependsOn(_ keyPaths: AnyKeyPath...) = #externalMacro(module: "SwiftKVOMacrosPlugin", type: "DependsOnMacro")

@dynamicMemberLookup
public struct DependencySource {
    public subscript(dynamicMember name: String) -> DependencySource { self }
}
#endif
