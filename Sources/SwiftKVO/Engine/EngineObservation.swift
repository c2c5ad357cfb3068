// What the engine holds for one Swift observation, and that box's lifetime (Engine.swift: the
// engine owns one reference from registration until its release callback; the dispatch
// trampoline borrows the box at +0).

import Synchronization

/// What the engine holds for one Swift observation: the delivery function
/// and, in a subclass, what it reads.
///
/// Subclasses carry what their delivery function reads (``HandlerObservation``),
/// so that function captures nothing: created where the observation is made
/// (inlined, specialized for its types), calling it is one direct call with
/// no closure context to unpack. (An overridden method would not do: a
/// generic class's vtable holds its unspecialized implementation.)
///
/// A box whose delivery or owner may remove its observation by token derives
/// from ``SelfRemovingObservation``, which keeps the engine token; the others
/// (token observations, removed only through their ``ObservationToken``)
/// keep none.
@usableFromInline
class EngineObservation: @unchecked Sendable {
    /// `deliver(change, self)`: called on the announcing thread, at +0.
    @usableFromInline
    let deliver: (EngineChange, EngineObservation) -> Void

    @usableFromInline
    init(deliver: @escaping (EngineChange, EngineObservation) -> Void) {
        self.deliver = deliver
    }

    /// Who registers the box, as an object's listing of observations shows
    /// it (read only by the listing).
    var observerKind: ObservationSummary.Observer { .token }

    /// Whether the box keeps its token (``SelfRemovingObservation``): only
    /// then does its registration record where `ckvo_observe` writes it.
    var keepsToken: Bool { false }

    /// Called with the token once `ckvo_observe` returned it; boxes that do
    /// not remove themselves ignore it.
    func publish(_ token: EngineToken) {}

    /// Called once when the engine releases the box (after its observation
    /// was removed and a grace period passed), just before it drops its
    /// reference; outside every engine lock, never on a notification path.
    func engineReleased() {}
}

/// A box whose delivery or owner may remove its observation by token (its
/// observer died; its controller unobserves): it keeps the token.
///
/// `ckvo_observe` writes the token through a slot on the registering
/// thread's stack (a plain store, after the observation may already be
/// visible to dispatches on other threads, and before an initial callback on
/// the registering thread). So the slot is read only by the registering thread
/// while `ckvo_observe` runs (``EngineRegistrations``); every other reader sees
/// the published copy, stored when `ckvo_observe` returned (``EngineToken/none``
/// until then): its index, then its generation with a releasing store.
@usableFromInline
class SelfRemovingObservation: EngineObservation, @unchecked Sendable {
    /// The token once `ckvo_observe` returned successfully.
    private let publishedGeneration = Atomic<UInt64>(0)
    /// Written once, before `publishedGeneration`; read after it.
    private var publishedIndex: UInt32 = 0

    @usableFromInline
    override init(deliver: @escaping (EngineChange, EngineObservation) -> Void) {
        super.init(deliver: deliver)
    }

    override var keepsToken: Bool { true }

    override func publish(_ token: EngineToken) {
        publishedIndex = token.index
        publishedGeneration.store(token.generation, ordering: .releasing)
    }

    /// The engine token: ``EngineToken/none`` while another thread is still registering the box
    /// (or after a failed registration).
    @usableFromInline
    var token: EngineToken {
        let generation = publishedGeneration.load(ordering: .acquiring)
        if generation != 0 { return EngineToken(generation: generation, index: publishedIndex) }
        // Inside ckvo_observe on this thread (an initial callback)?
        return EngineRegistrations.tokenWhileRegistering(self)
    }
}

/// The registrations in progress on each thread: which box `ckvo_observe` is
/// registering and where it writes that box's token. Registrations nest when
/// an initial callback registers, so each thread keeps a stack of them: frames
/// on the registering calls' own stacks, linked innermost first.
enum EngineRegistrations {
    /// One registration in progress.
    struct Frame {
        let box: ObjectIdentifier
        let tokenSlot: EngineTokenSlot
        let outer: UnsafeMutablePointer<Frame>?
    }

    /// One thread's innermost frame. Only its thread touches it.
    final class Stack {
        @exclusivity(unchecked) var innermost: UnsafeMutablePointer<Frame>?
    }

    private static let stacks = ThreadLocal<Stack>()

    /// Runs `register` (a `ckvo_observe` call writing `box`'s token into
    /// `tokenSlot`) with that registration pushed on this thread's stack.
    static func registering<Result>(
        _ box: EngineObservation, tokenSlot: EngineTokenSlot,
        _ register: () -> Result
    ) -> Result {
        stacks.unmanagedValue(Stack.init)._withUnsafeGuaranteedRef { stack in
            let outer = stack.innermost
            var frame = Frame(box: ObjectIdentifier(box), tokenSlot: tokenSlot, outer: outer)
            return withUnsafeMutablePointer(to: &frame) { frame in
                stack.innermost = frame
                defer { stack.innermost = outer }
                return register()
            }
        }
    }

    /// The token `ckvo_observe` already wrote for `box`, if this thread is
    /// registering it; else ``EngineToken/none``.
    static func tokenWhileRegistering(_ box: EngineObservation) -> EngineToken {
        var frame = stacks.currentValue?.innermost
        while let current = frame {
            if current.pointee.box == ObjectIdentifier(box) {
                return EngineToken(current.pointee.tokenSlot.pointee)
            }
            frame = current.pointee.outer
        }
        return .none
    }
}
