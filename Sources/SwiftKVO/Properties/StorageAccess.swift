// Raw access to a wrapper's storage in its object, for the collection mutators, which change a
// value in place (through the key path, a change would announce a whole `setting`). The wrapper
// sits at the offset that identifies the property, so the access is made once per property.

/// Reads and modifies one wrapper's value in objects of its declaring class.
@usableFromInline
class StorageAccessBase<Value>: @unchecked Sendable {  // immutable after init
    func modify(_ object: AnyObject, _ body: (inout Value) -> Void) { fatalError("abstract") }
    func read(_ object: AnyObject) -> Value { fatalError("abstract") }
    func state(_ object: AnyObject) -> UInt64 { fatalError("abstract") }
}

/// The access to a `Storage` wrapper stored at `offset` in `Object`.
@usableFromInline
final class StorageAccess<Object: KeyValueObservable, Storage: NotifyingStorage>:
    StorageAccessBase<Storage.Value>, @unchecked Sendable
{
    let offset: Int

    @usableFromInline
    init(offset: Int) {
        self.offset = offset
    }

    /// The wrapper inside `object` (kept alive by the caller for the access).
    private func wrapper(_ object: AnyObject) -> UnsafeMutablePointer<Storage> {
        UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
            .advanced(by: offset)
            .assumingMemoryBound(to: Storage.self)
    }

    override func modify(_ object: AnyObject, _ body: (inout Storage.Value) -> Void) {
        withExtendedLifetime(object) { body(&wrapper(object).pointee.storage) }
    }

    override func read(_ object: AnyObject) -> Storage.Value {
        withExtendedLifetime(object) { wrapper(object).pointee.storage }
    }

    /// The wrapper's setter state, resolved on first use as its setter would.
    override func state(_ object: AnyObject) -> UInt64 {
        withExtendedLifetime(object) {
            var state = wrapper(object).pointee.state
            if state & (SetterState.resolved | SetterState.manual) == 0 {
                state = SetterState.resolve(
                    unsafeDowncast(object, to: Object.self), storage: Storage.self, offset: offset)
                wrapper(object).pointee.state = state
            }
            return state
        }
    }
}
