//
// EngineObservation.swift — what the engine holds for one Swift
// observation, and the lifetime protocol of that box (see Engine.swift's
// header: the engine owns one reference from registration until its release
// callback, and the dispatch trampoline borrows the box at +0).
//

import Synchronization

/// What the engine holds for one Swift observation: the delivery closure
/// (specialized where the observation was created) and its engine token.
///
/// The token: `ckvo_observe` writes it through a slot on the registering
/// thread's stack (a plain store, after the observation may already be
/// visible to dispatches on other threads, and before an initial callback on
/// the registering thread). So the slot is read only by the registering thread
/// while `ckvo_observe` runs (`registeringThread`); every other reader sees
/// the atomic `published` copy, stored when `ckvo_observe` returned (0 until
/// then).
///
/// Subclasses carry what their delivery function reads (``TypedObservation``),
/// so that function captures nothing: calling it is one direct call, with no
/// closure context to unpack.
@usableFromInline
class EngineObservation: @unchecked Sendable {
    /// `deliver(change, self)`: called on the announcing thread, at +0.
    @usableFromInline
    let deliver: (EngineChange, EngineObservation) -> Void

    /// Where `ckvo_observe` writes the token, while it runs (registering thread only).
    private var registrationTokenSlot: UnsafeMutablePointer<EngineToken>?
    /// The token once `ckvo_observe` returned successfully.
    private let published = Atomic<UInt64>(0)
    /// The thread inside `ckvo_observe` for this box, or 0.
    private let registeringThread = Atomic<UInt>(0)

    /// Called once when the engine releases the box (after a grace period),
    /// e.g. to finish an async stream. Set before registration.
    var onRelease: (@Sendable () -> Void)?

    @usableFromInline
    init(deliver: @escaping (EngineChange, EngineObservation) -> Void) {
        self.deliver = deliver
    }

    deinit {
        onRelease?()
    }

    func beginRegistration(tokenSlot: UnsafeMutablePointer<EngineToken>) {
        registrationTokenSlot = tokenSlot
        registeringThread.store(currentThreadID(), ordering: .relaxed)
    }

    func endRegistration(succeeded: Bool) {
        if succeeded, let slot = registrationTokenSlot {
            published.store(slot.pointee, ordering: .releasing)
        }
        registeringThread.store(0, ordering: .relaxed)
        registrationTokenSlot = nil
    }

    /// The engine token: 0 while another thread is still registering the box
    /// (or after a failed registration).
    @usableFromInline
    var token: EngineToken {
        let token = published.load(ordering: .acquiring)
        if token != 0 { return token }
        if registeringThread.load(ordering: .relaxed) == currentThreadID(),
            let slot = registrationTokenSlot
        {
            return slot.pointee  // inside ckvo_observe on this thread (initial callback)
        }
        return 0
    }
}
