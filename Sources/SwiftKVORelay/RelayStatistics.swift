#if Relay
/// What a relay has done since it was created: a snapshot of its counters.
///
/// Every message from the wire that is not delivered is counted under exactly
/// one `dropped…` reason, so bad input is never silent; every local post or
/// property change of a bridged name that could not be sent is counted in
/// ``notSent``.
public struct RelayStatistics: Hashable, Sendable {
    /// Messages the broker accepted from this relay (committed `NOTIFY`s).
    public var sent = 0
    /// Messages from other instances delivered locally (posts, and property
    /// values applied).
    public var delivered = 0
    /// Local posts and property changes that were never sent: too large, not
    /// encodable, or the outgoing queue was full. (A throwing
    /// ``Relay/post(name:userInfo:)`` reports these to its caller instead.)
    public var notSent = 0
    /// This relay's own messages coming back from the broker, skipped.
    public var ownMessagesSkipped = 0
    /// Messages carrying this relay's instance id but another incarnation:
    /// another live relay configured with the same id, or a forgery.
    public var droppedOwnID = 0
    /// Messages that are not the relay's JSON format (or not its version).
    public var droppedMalformed = 0
    /// Messages for a name this relay neither bridges nor replicates.
    public var droppedUnknownName = 0
    /// Messages whose user info or value does not decode as the registered types.
    public var droppedWrongType = 0
    /// Messages over ``RelayTransport/maximumPayloadBytes``.
    public var droppedOversized = 0
    /// Messages seen before: a sequence number at or below the highest heard
    /// of its instance's incarnation, however far back — a resend after a
    /// reconnect whose first attempt had reached the broker, or a replay.
    public var droppedDuplicate = 0
    /// Property values older than the value already held (last writer wins).
    public var droppedStale = 0
    /// Property values stamped further ahead of this instance's clock than
    /// ``RelayConfiguration/maximumClockSkew``.
    public var droppedFutureStamp = 0
    /// Messages shed on arrival because the receive backlog was full
    /// (``RelayConfiguration/receiveBacklogBytes``,
    /// ``RelayConfiguration/receiveBacklogBytesPerSender``): the channel brought
    /// more than the relay could handle.
    public var droppedShed = 0
    /// Messages without a signature while ``RelayConfiguration/signing`` is set.
    public var droppedUnsigned = 0
    /// Messages signed by an unknown key id or with a wrong signature.
    public var droppedBadSignature = 0
    /// Replays of earlier incarnations: messages of an incarnation of an
    /// instance after a newer one was heard from it (but for one that directly
    /// follows the last heard: ``incarnationConflicts``), or of one older than
    /// the latest by more than twice ``RelayConfiguration/maximumClockSkew``
    /// by its start time; and signed messages of an instance not tracked that
    /// were sent before a forgotten instance was last heard.
    public var droppedReplayed = 0
    /// Signed messages of an instance id not yet tracked, refused because
    /// the table of instances is full of instances still sending
    /// (``RelayConfiguration/maximumTrackedInstances``). Unsigned, a new id
    /// always takes the place of a stranger or of the least recently heard
    /// instance, so this stays 0.
    public var droppedUntracked = 0
    /// Messages that went on with an incarnation of an instance directly
    /// after a newer incarnation of it was heard: the instance is alive, so the
    /// newer one was forged (or two relays share an id). Delivered, reported
    /// (``Relay/resynchronize``, as a restart) and logged as a warning.
    public var incarnationConflicts = 0
    /// Messages of other instances that never arrived, counted from the gaps
    /// in their sequence numbers (each gap also posts ``Relay/resynchronize``).
    public var missed = 0
    /// Connections to the broker that were established and later lost.
    public var disconnects = 0
    /// ``Relay/resynchronize`` notifications posted (after a reconnect, a
    /// gap or a new incarnation).
    public var resynchronizations = 0
    /// Gaps and new incarnations folded into a later ``Relay/resynchronize``
    /// notification of the same instance
    /// (``RelayConfiguration/resynchronizationInterval``).
    public var resynchronizationsCoalesced = 0
    /// Loads of replicated values from the state table
    /// (``RelayConfiguration/stateTable``) that completed.
    public var stateLoads = 0
    /// Loads of replicated values that failed: the table could not be made,
    /// read or used, or the connection was lost during the load (each is
    /// logged with its reason). Values then come only from messages until
    /// the next load.
    public var stateLoadFailures = 0
    /// Values from the state table that were newer than the value held and
    /// were applied. (Rows that do not validate are counted under the same
    /// `dropped…` reasons as messages.)
    public var stateValuesApplied = 0
    /// State-table rows signed again with the current key when loaded: they
    /// were signed with a previous key, or without the channel (see
    /// ``RelaySigning``). Rows that do not verify are counted as
    /// ``droppedUnsigned`` or ``droppedBadSignature`` and logged as warnings.
    public var stateRowsResigned = 0

    /// All dropped messages, whatever the reason.
    public var dropped: Int {
        [
            droppedMalformed, droppedUnknownName, droppedWrongType, droppedOversized, droppedDuplicate,
            droppedStale, droppedFutureStamp, droppedShed, droppedUntracked, droppedOwnID,
            droppedUnsigned, droppedBadSignature, droppedReplayed,
        ].reduce(0) { $0.addingSaturating($1) }
    }
}

extension Int {
    /// `self + other`, or `Int.max` where that would overflow: counters never trap.
    func addingSaturating(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// Adds `other`, saturating at `Int.max`.
    mutating func addSaturating(_ other: Int) {
        self = addingSaturating(other)
    }
}
#endif
