// Graveyard.swift — drops objects on its own thread.
//
// Workers hand over subjects and observers they are done with; the graveyard
// thread drops them a moment later, so they die on another thread than the one
// that created and used them (or on a thread still delivering to them, if that
// holds the last reference by then).

#if canImport(Glibc)
import Glibc
#endif
import Synchronization

final class Graveyard: Sendable {
    /// Objects waiting at most; a worker handing over more waits. Bounds how many retired
    /// observers are still alive (and still called) at once.
    static let capacity = 64

    private let queue = Locked<[any AnyObject & Sendable]>([])
    private let closed = Atomic<Bool>(false)

    func bury(_ object: any AnyObject & Sendable) {
        while queue.withLock({ $0.count >= Self.capacity }) { usleep(100) }
        queue.withLock { $0.append(object) }
    }

    /// Drops what was handed over, every half millisecond, until closed (after the workers
    /// that hand objects over have stopped).
    func run() {
        while !closed.load(ordering: .relaxed) {
            usleep(500)
            dropAll()
        }
    }

    func close() {
        closed.store(true, ordering: .relaxed)
    }

    /// Drops everything handed over so far, on the calling thread (not holding the lock:
    /// a deinit may hand over more).
    func dropAll() {
        var objects = queue.withLock { queue in
            defer { queue = [] }
            return queue
        }
        for case let observer as SoakObserver in objects { observer.dropping() }
        objects.removeAll()
    }
}
