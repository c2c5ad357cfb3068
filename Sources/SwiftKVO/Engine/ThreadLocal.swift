#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small thread-local slot (pthread key) holding one object per thread.
final class ThreadLocal<Value: AnyObject>: @unchecked Sendable {
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        self.key = key
    }

    /// This thread's value, created on first use.
    func value(_ make: () -> Value) -> Value {
        unmanagedValue(make).takeUnretainedValue()
    }

    /// This thread's value at +0, created on first use: the thread keeps it
    /// alive until it exits, so a borrow (`_withUnsafeGuaranteedRef`) costs
    /// no reference counting.
    func unmanagedValue(_ make: () -> Value) -> Unmanaged<Value> {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<Value>.fromOpaque(pointer)
        }
        let value = make()
        let unmanaged = Unmanaged<AnyObject>.passRetained(value as AnyObject)
        pthread_setspecific(key, unmanaged.toOpaque())
        return Unmanaged<Value>.fromOpaque(unmanaged.toOpaque())
    }

    /// This thread's value if it has one.
    var currentValue: Value? {
        pthread_getspecific(key).map {
            unsafeDowncast(Unmanaged<AnyObject>.fromOpaque($0).takeUnretainedValue(), to: Value.self)
        }
    }
}

/// An identifier of the calling thread.
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}
