// PeerRegistry.swift — every peer, in table order.

enum PeerRegistry {
    /// The peer that speedups are computed against unless `--reference` says otherwise:
    /// SwiftKVO's Swift API as its docs show it first (`@Observed` + token).
    /// `--reference swiftkvo-c` compares against the C API instead.
    static let defaultReference = "swiftkvo-token"

    static let all: [any Peer] = [
        // The floors: no machinery at all.
        CFunctionPointerPeer(),
        SwiftClosureArrayPeer(),
        CToSwiftClosurePeer(),

        // SwiftKVO.
        SwiftKVOCPeer(),
        SwiftKVOTokenPeer(),
        SwiftKVOByNamePeer(),
        SwiftKVOControllerBlockPeer(),
        SwiftKVOControllerActionPeer(),
        SwiftKVONotificationHubPeer(),
        SwiftKVOHubTokenPeer(),

        // What a user would pick instead.
        NotificationCenterPeer(),
        OpenCombineSubjectPeer(),
        OpenCombinePublishedPeer(),
        ObservationTrackingPeer(),
        KVOControllerPortPeer(),
    ]
}
